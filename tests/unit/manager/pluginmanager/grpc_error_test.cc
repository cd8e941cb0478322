// Go-style gRPC error texts (grpc-go's status.Error(...).Error()).
#include "manager/src/pluginmanager/grpc_error.h"

#include "gtest/gtest.h"

namespace kdp::manager {
namespace {

TEST(GoGrpcErrorText, DeadlineReadsLikeAnExpiredGoContext) {
  grpc::Status status(grpc::StatusCode::DEADLINE_EXCEEDED, "Deadline Exceeded");
  EXPECT_EQ(GoGrpcErrorText(status),
            "rpc error: code = DeadlineExceeded desc = context deadline exceeded");
  absl::Status converted = FromGrpcStatusGoStyle(status);
  EXPECT_EQ(converted.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(converted.message(), GoGrpcErrorText(status));
}

TEST(GoGrpcErrorText, KeepsOtherMessages) {
  EXPECT_EQ(GoGrpcErrorText(grpc::Status(grpc::StatusCode::UNAVAILABLE, "connection refused")),
            "rpc error: code = Unavailable desc = connection refused");
  EXPECT_EQ(GoGrpcErrorText(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "")),
            "rpc error: code = Unimplemented desc = ");
  EXPECT_EQ(GoGrpcErrorText(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "server said so")),
            "rpc error: code = DeadlineExceeded desc = server said so");
}

TEST(GoGrpcCodeName, UsesGoSpellings) {
  EXPECT_EQ(GoGrpcCodeName(grpc::StatusCode::CANCELLED), "Canceled");
  EXPECT_EQ(GoGrpcCodeName(grpc::StatusCode::FAILED_PRECONDITION), "FailedPrecondition");
  EXPECT_EQ(GoGrpcCodeName(grpc::StatusCode::UNAUTHENTICATED), "Unauthenticated");
  // 20 is no gRPC code, yet inside the enum's range (-32..31): 42 would itself be UB.
  EXPECT_EQ(GoGrpcCodeName(static_cast<grpc::StatusCode>(20)), "Code(20)");
  EXPECT_TRUE(FromGrpcStatusGoStyle(grpc::Status::OK).ok());
}

}  // namespace
}  // namespace kdp::manager
