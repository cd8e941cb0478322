// Regression tests for the local resource API from fuzzing: the codec
// (manager/src/resourceapi/codec.h) refuses a selector longer than the API server's 10 KiB limit
// when the object is written, before any compiler sees it (found through cel_selector_fuzzer);
// a continue token with members of the wrong type is a BadRequest, not an exception
// (resource_request_fuzzer; reproducer in tests/fuzz/regressions/resource_request/); a restored
// resourceVersion near the int64 limit is refused, since the next write would overflow it (found
// in review of resource_journal_fuzzer; reproducer in tests/fuzz/regressions/resource_journal/).
#include <string>

#include "absl/strings/escaping.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/src/controlplane/resourceapi/api_errors.h"
#include "manager/src/controlplane/resourceapi/codec.h"
#include "manager/src/controlplane/resourceapi/request_options.h"
#include "manager/src/controlplane/resourceapi/store.h"
#include "manager/src/controlplane/resourceapi/validation.h"

namespace kdp::manager::resourceapi {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

Json ClassWithSelector(const std::string& expression) {
  Json object = Json::parse(R"({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                                "metadata": {"name": "gpu.example.com"}, "spec": {}})");
  object["spec"]["selectors"] = Json::array({{{"cel", {{"expression", expression}}}}});
  return object;
}

Json ClaimWithSelector(const std::string& expression) {
  Json object = Json::parse(R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
      "metadata": {"name": "claim-1", "namespace": "default"},
      "spec": {"devices": {"requests": [{"name": "gpu",
                                         "exactly": {"deviceClassName": "gpu.example.com"}}]}}})");
  object["spec"]["devices"]["requests"][0]["exactly"]["selectors"] =
      Json::array({{{"cel", {{"expression", expression}}}}});
  return object;
}

// validateCELSelector: field.TooLong(expression, 10240), as the API server words it.
TEST(CodecFuzzRegression, SelectorLongerThan10KiBIsRefused) {
  const std::string longest(kCelSelectorExpressionMaxLength, '(');
  EXPECT_TRUE(Validate(Kind::kDeviceClass, ClassWithSelector(longest)).ok());
  const absl::Status status = Validate(Kind::kDeviceClass, ClassWithSelector(longest + "("));
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(HttpCode(status), 422);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("DeviceClass.resource.k8s.io \"gpu.example.com\" is invalid: "
                        "spec.selectors[0].cel.expression: Too long: may not be more than 10240 "
                        "bytes"));

  const absl::Status claim =
      Validate(Kind::kResourceClaim, ClaimWithSelector(std::string(20000, 'x')));
  ASSERT_FALSE(claim.ok());
  EXPECT_THAT(std::string(claim.message()),
              HasSubstr("spec.devices.requests[0].exactly.selectors[0].cel.expression: Too long: "
                        "may not be more than 10240 bytes"));
}

// Found by resource_request_fuzzer: a client's continue token {"v": 1, ...} made
// DecodeContinueToken throw nlohmann::json::type_error (json::value() on a number), so the list
// request failed with an exception instead of the API server's BadRequest.
// A snapshot at INT64_MAX without the system namespaces: Restore added them with ++rv (signed
// overflow, an abort under UBSan), and any later write would have overflowed too.
TEST(SnapshotFuzzRegression, AResourceVersionNearTheInt64LimitIsRefused) {
  ObjectStore store(StoreOptions{.node_name = "node-1"});
  const absl::Status restored =
      store.Restore({{"resourceVersion", "9223372036854775807"}, {"objects", Json::array()}});
  EXPECT_EQ(restored.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(restored.message(), HasSubstr("is out of range"));
  EXPECT_TRUE(
      store.Restore({{"resourceVersion", "4611686018427387903"}, {"objects", Json::array()}}).ok());
}

TEST(RequestOptionsFuzzRegression, ContinueTokenMembersOfTheWrongTypeAreBadRequest) {
  for (const char* token :
       {R"({"v":1,"rv":7,"start":"ns/name"})", R"({"v":null,"rv":7,"start":"x"})",
        R"({"v":"meta.k8s.io/v1","rv":"7","start":"x"})",
        R"({"v":"meta.k8s.io/v1","rv":7,"start":7})", R"(["v"])"}) {
    absl::StatusOr<ContinuePoint> point = DecodeContinueToken(absl::WebSafeBase64Escape(token));
    ASSERT_FALSE(point.ok()) << token;
    EXPECT_EQ(point.status().code(), absl::StatusCode::kInvalidArgument) << token;
    EXPECT_EQ(HttpCode(point.status()), 400) << token;
    EXPECT_EQ(point.status().message(),
              "continue key is not valid: incorrect encoded start resourceVersion (version "
              "meta.k8s.io/v1)")
        << token;
  }
  absl::StatusOr<ContinuePoint> valid = DecodeContinueToken(EncodeContinueToken(7, "ns/name"));
  ASSERT_TRUE(valid.ok()) << valid.status();
  EXPECT_EQ(valid->resource_version, 7);
  EXPECT_EQ(valid->last_key, "ns/name");
}

}  // namespace
}  // namespace kdp::manager::resourceapi
