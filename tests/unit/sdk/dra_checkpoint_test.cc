#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include "common/durable_file.h"
#include "nlohmann/json.hpp"
#include "sdk/src/dra/checkpoint.h"
#include "tests/testing/temp_dir.h"

namespace kdp::internal {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

constexpr char kDriver[] = "gpu.example.com";

PreparedClaims SampleClaims() {
  PreparedClaims claims;
  claims["uid-1"] = PreparedClaimRecord{
      .ref = {.namespace_ = "default", .name = "claim-1", .uid = "uid-1"},
      .completed = true,
      .devices = {PreparedDevice{.requests = {"gpu"},
                                 .pool = "node-1",
                                 .device = "gpu-0",
                                 .cdi_device_ids = {"k8s.gpu.example.com/gpu=uid-1-gpu-0"},
                                 .share_id = "s1"},
                  PreparedDevice{.requests = {},
                                 .pool = "node-1",
                                 .device = "gpu-1",
                                 .cdi_device_ids = {},
                                 .share_id = ""}}};
  claims["uid-2"] =
      PreparedClaimRecord{.ref = {.namespace_ = "ns", .name = "claim-2", .uid = "uid-2"},
                          .completed = false,
                          .devices = {}};
  return claims;
}

TEST(DraCheckpoint, EncodeDecodeRoundTrip) {
  std::string bytes = EncodeDraCheckpoint(kDriver, SampleClaims());
  absl::StatusOr<PreparedClaims> decoded = DecodeDraCheckpoint(bytes, kDriver, "test");
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, SampleClaims());
}

TEST(DraCheckpoint, FileFormatIsCrc32OverTheDataString) {
  json file = json::parse(EncodeDraCheckpoint(kDriver, SampleClaims()));
  const std::string data = file["data"].get<std::string>();
  uLong crc =
      crc32(0L, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size()));
  EXPECT_EQ(file["checksum"].get<uint64_t>(), crc);
  json inner = json::parse(data);
  EXPECT_EQ(inner["apiVersion"], "kdp.dev/v1");
  EXPECT_EQ(inner["kind"], "DraDriverCheckpoint");
  EXPECT_EQ(inner["driver"], kDriver);
  ASSERT_EQ(inner["preparedClaims"].size(), 2u);
  EXPECT_EQ(inner["preparedClaims"][0]["uid"], "uid-1");
  EXPECT_EQ(inner["preparedClaims"][0]["state"], "PrepareCompleted");
  EXPECT_EQ(inner["preparedClaims"][1]["state"], "PrepareStarted");
  EXPECT_EQ(inner["preparedClaims"][0]["devices"][0]["cdiDeviceIDs"][0],
            "k8s.gpu.example.com/gpu=uid-1-gpu-0");
}

TEST(DraCheckpoint, ChangedDataIsDataLoss) {
  json file = json::parse(EncodeDraCheckpoint(kDriver, SampleClaims()));
  std::string data = file["data"].get<std::string>();
  data.replace(data.find("claim-1"), 7, "claim-9");
  file["data"] = data;
  absl::StatusOr<PreparedClaims> decoded = DecodeDraCheckpoint(file.dump(), kDriver, "/x/cp");
  EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(decoded.status().message(), HasSubstr("checkpoint /x/cp is corrupted"));
  EXPECT_THAT(decoded.status().message(), HasSubstr("checksum mismatch"));
}

TEST(DraCheckpoint, GarbageIsDataLoss) {
  for (const char* bytes :
       {"", "{", "[]", R"({"checksum": 1})", R"({"checksum": "1", "data": ""})"}) {
    EXPECT_EQ(DecodeDraCheckpoint(bytes, kDriver, "cp").status().code(),
              absl::StatusCode::kDataLoss)
        << bytes;
  }
}

TEST(DraCheckpoint, AnotherDriversFileIsRejected) {
  std::string bytes = EncodeDraCheckpoint("net.example.com", SampleClaims());
  absl::StatusOr<PreparedClaims> decoded = DecodeDraCheckpoint(bytes, kDriver, "cp");
  EXPECT_EQ(decoded.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(decoded.status().message(), HasSubstr("net.example.com"));
}

TEST(DraCheckpoint, LoadOfAMissingFileIsEmpty) {
  testing::TempDir dir;
  DraCheckpoint checkpoint(dir.Path("checkpoint.json"), kDriver);
  absl::StatusOr<PreparedClaims> loaded = checkpoint.Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_TRUE(loaded->empty());
}

TEST(DraCheckpoint, StoreThenLoad) {
  testing::TempDir dir;
  DraCheckpoint checkpoint(dir.Path("checkpoint.json"), kDriver);
  ASSERT_TRUE(checkpoint.Store(SampleClaims()).ok());
  absl::StatusOr<PreparedClaims> loaded = checkpoint.Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(*loaded, SampleClaims());
  ASSERT_TRUE(checkpoint.Store({}).ok());
  loaded = checkpoint.Load();
  ASSERT_TRUE(loaded.ok());
  EXPECT_TRUE(loaded->empty());
}

TEST(DraCheckpoint, StoreIntoAMissingDirectoryFails) {
  testing::TempDir dir;
  DraCheckpoint checkpoint(dir.Path("no/such/checkpoint.json"), kDriver);
  absl::Status status = checkpoint.Store(SampleClaims());
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("no/such"));
}

}  // namespace
}  // namespace kdp::internal
