#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include "absl/strings/ascii.h"
#include "common/durable_file.h"
#include "nlohmann/json.hpp"
#include "sdk/src/dra/checkpoint.h"
#include "tests/testing/example_names.h"
#include "tests/testing/temp_dir.h"

namespace kdp::internal {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

using ::kdp::testing::kGpuDriver;

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
  std::string bytes = EncodeDraCheckpoint(kGpuDriver, SampleClaims());
  absl::StatusOr<PreparedClaims> decoded = DecodeDraCheckpoint(bytes, kGpuDriver, "test");
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, SampleClaims());
}

TEST(DraCheckpoint, FileFormatIsCrc32OverTheDataString) {
  json file = json::parse(EncodeDraCheckpoint(kGpuDriver, SampleClaims()));
  const std::string data = file["data"].get<std::string>();
  uLong crc =
      crc32(0L, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size()));
  EXPECT_EQ(file["checksum"].get<uint64_t>(), crc);
  json inner = json::parse(data);
  EXPECT_EQ(inner["apiVersion"], "kdp.dev/v1");
  EXPECT_EQ(inner["kind"], "DraDriverCheckpoint");
  EXPECT_EQ(inner["driver"], kGpuDriver);
  ASSERT_EQ(inner["preparedClaims"].size(), 2u);
  EXPECT_EQ(inner["preparedClaims"][0]["uid"], "uid-1");
  EXPECT_EQ(inner["preparedClaims"][0]["state"], "PrepareCompleted");
  EXPECT_EQ(inner["preparedClaims"][1]["state"], "PrepareStarted");
  EXPECT_EQ(inner["preparedClaims"][0]["devices"][0]["cdiDeviceIDs"][0],
            "k8s.gpu.example.com/gpu=uid-1-gpu-0");
}

TEST(DraCheckpoint, ChangedDataIsDataLoss) {
  json file = json::parse(EncodeDraCheckpoint(kGpuDriver, SampleClaims()));
  std::string data = file["data"].get<std::string>();
  data.replace(data.find("claim-1"), 7, "claim-9");
  file["data"] = data;
  absl::StatusOr<PreparedClaims> decoded = DecodeDraCheckpoint(file.dump(), kGpuDriver, "/x/cp");
  EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(decoded.status().message(), HasSubstr("checkpoint /x/cp is corrupted"));
  EXPECT_THAT(decoded.status().message(), HasSubstr("checksum mismatch"));
}

TEST(DraCheckpoint, GarbageIsDataLoss) {
  for (const char* bytes :
       {"", "{", "[]", R"({"checksum": 1})", R"({"checksum": "1", "data": ""})"}) {
    EXPECT_EQ(DecodeDraCheckpoint(bytes, kGpuDriver, "cp").status().code(),
              absl::StatusCode::kDataLoss)
        << bytes;
  }
}

TEST(DraCheckpoint, AnotherDriversFileIsRejected) {
  std::string bytes = EncodeDraCheckpoint("net.example.com", SampleClaims());
  absl::StatusOr<PreparedClaims> decoded = DecodeDraCheckpoint(bytes, kGpuDriver, "cp");
  EXPECT_EQ(decoded.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(decoded.status().message(), HasSubstr("net.example.com"));
}

TEST(DraCheckpoint, LoadOfAMissingFileIsEmpty) {
  testing::TempDir dir;
  DraCheckpoint checkpoint(dir.Path("checkpoint.json"), kGpuDriver);
  absl::StatusOr<PreparedClaims> loaded = checkpoint.Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_TRUE(loaded->empty());
}

TEST(DraCheckpoint, StoreThenLoad) {
  testing::TempDir dir;
  DraCheckpoint checkpoint(dir.Path("checkpoint.json"), kGpuDriver);
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
  DraCheckpoint checkpoint(dir.Path("no/such/checkpoint.json"), kGpuDriver);
  absl::Status status = checkpoint.Store(SampleClaims());
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("no/such"));
}

// ---- The two slots ----

PreparedClaims OneClaim(const std::string& uid) {
  PreparedClaims claims;
  claims[uid] = PreparedClaimRecord{
      .ref = {.namespace_ = "default", .name = "c-" + uid, .uid = uid}, .completed = true};
  return claims;
}

// The generation and claims a slot file holds; generation -1 when it does not parse.
std::pair<int64_t, PreparedClaims> Slot(const DraCheckpoint& checkpoint, int slot) {
  absl::StatusOr<std::string> bytes = ReadFile(checkpoint.SlotPath(slot));
  if (!bytes.ok()) return {-1, {}};
  uint64_t generation = 0;
  absl::StatusOr<PreparedClaims> claims =
      DecodeDraCheckpoint(*bytes, kGpuDriver, checkpoint.SlotPath(slot), &generation);
  if (!claims.ok()) return {-1, {}};
  return {static_cast<int64_t>(generation), *claims};
}

TEST(DraCheckpointSlots, EachLoadAndStoreGoesToTheSlotNotHoldingTheNewestState) {
  testing::TempDir dir;
  DraCheckpoint checkpoint(dir.Path("prepared-claims.json"), kGpuDriver);
  EXPECT_EQ(checkpoint.SlotPath(1), dir.Path("prepared-claims.json.1"));
  ASSERT_TRUE(checkpoint.Load().ok());
  ASSERT_TRUE(checkpoint.Store(OneClaim("a")).ok());
  EXPECT_EQ(Slot(checkpoint, 0), std::make_pair(int64_t{1}, OneClaim("a")));
  EXPECT_EQ(Slot(checkpoint, 1).first, -1) << "not written yet";

  ASSERT_EQ(*checkpoint.Load(), OneClaim("a"));
  ASSERT_TRUE(checkpoint.Store(OneClaim("b")).ok());
  EXPECT_EQ(Slot(checkpoint, 0), std::make_pair(int64_t{1}, OneClaim("a"))) << "kept";
  EXPECT_EQ(Slot(checkpoint, 1), std::make_pair(int64_t{2}, OneClaim("b")));

  // A new instance (a restarted driver) reads the newest and overwrites the older slot.
  DraCheckpoint restarted(dir.Path("prepared-claims.json"), kGpuDriver);
  ASSERT_EQ(*restarted.Load(), OneClaim("b"));
  ASSERT_TRUE(restarted.Store(OneClaim("c")).ok());
  EXPECT_EQ(Slot(restarted, 0), std::make_pair(int64_t{3}, OneClaim("c")));
  EXPECT_EQ(Slot(restarted, 1), std::make_pair(int64_t{2}, OneClaim("b")));
  EXPECT_EQ(*DraCheckpoint(dir.Path("prepared-claims.json"), kGpuDriver).Load(), OneClaim("c"));
}

TEST(DraCheckpointSlots, StoresBetweenTwoLoadsOverwriteTheSameSlotSoTheDurableOneStays) {
  testing::TempDir dir;
  DraCheckpoint checkpoint(dir.Path("cp.json"), kGpuDriver);
  ASSERT_TRUE(checkpoint.Store(OneClaim("durable")).ok());  // slot 0, generation 1
  ASSERT_TRUE(checkpoint.Load().ok());
  // The record before the vendor's Prepare (unsynced), then the one after it (synced).
  ASSERT_TRUE(checkpoint.Store(OneClaim("started"), /*sync=*/false).ok());
  EXPECT_EQ(Slot(checkpoint, 1), std::make_pair(int64_t{2}, OneClaim("started")));
  ASSERT_TRUE(checkpoint.Store(OneClaim("completed")).ok());
  EXPECT_EQ(Slot(checkpoint, 1), std::make_pair(int64_t{3}, OneClaim("completed")));
  EXPECT_EQ(Slot(checkpoint, 0), std::make_pair(int64_t{1}, OneClaim("durable")))
      << "the last durable state is never the slot being written";
}

TEST(DraCheckpointSlots, ATornNewestSlotLeavesTheOtherSlotsState) {
  testing::TempDir dir;
  DraCheckpoint checkpoint(dir.Path("cp.json"), kGpuDriver);
  ASSERT_TRUE(checkpoint.Store(OneClaim("old")).ok());
  ASSERT_TRUE(checkpoint.Load().ok());
  ASSERT_TRUE(checkpoint.Store(OneClaim("new")).ok());
  // Slots are padded to whole 4 KiB blocks, so an overwrite keeps the file's size.
  const std::string bytes = *ReadFile(checkpoint.SlotPath(1));
  EXPECT_EQ(bytes.size(), 4096u);
  EXPECT_EQ(ReadFile(checkpoint.SlotPath(0))->size(), 4096u);
  // A crash in the middle of the write: the slot holds the first half of its new JSON.
  const absl::string_view json = absl::StripTrailingAsciiWhitespace(bytes);
  ASSERT_LT(json.size(), bytes.size());
  ASSERT_TRUE(
      WriteFileDurably(checkpoint.SlotPath(1), std::string(json.substr(0, json.size() / 2))).ok());
  DraCheckpoint reader(dir.Path("cp.json"), kGpuDriver);
  absl::StatusOr<PreparedClaims> loaded = reader.Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(*loaded, OneClaim("old"));
  // The torn slot is the one the next write replaces.
  ASSERT_TRUE(reader.Store(OneClaim("next")).ok());
  EXPECT_EQ(Slot(reader, 1), std::make_pair(int64_t{2}, OneClaim("next")));
  EXPECT_EQ(*DraCheckpoint(dir.Path("cp.json"), kGpuDriver).Load(), OneClaim("next"));
}

TEST(DraCheckpointSlots, AFileOfAnEarlierSdkWithoutGenerationIsReadAndKept) {
  testing::TempDir dir;
  ASSERT_TRUE(
      WriteFileDurably(dir.Path("cp.json"), EncodeDraCheckpoint(kGpuDriver, SampleClaims())).ok());
  EXPECT_THAT(*ReadFile(dir.Path("cp.json")), ::testing::Not(HasSubstr("generation")));
  DraCheckpoint checkpoint(dir.Path("cp.json"), kGpuDriver);
  ASSERT_EQ(*checkpoint.Load(), SampleClaims());
  ASSERT_TRUE(checkpoint.Store(OneClaim("a")).ok());
  EXPECT_EQ(Slot(checkpoint, 0), std::make_pair(int64_t{0}, SampleClaims()));
  EXPECT_EQ(Slot(checkpoint, 1), std::make_pair(int64_t{1}, OneClaim("a")));
}

TEST(DraCheckpointSlots, NeitherSlotParsingIsDataLossNamingTheFile) {
  testing::TempDir dir;
  DraCheckpoint checkpoint(dir.Path("cp.json"), kGpuDriver);
  ASSERT_TRUE(WriteFileDurably(checkpoint.SlotPath(0), "{").ok());
  ASSERT_TRUE(WriteFileDurably(checkpoint.SlotPath(1), "[]").ok());
  absl::StatusOr<PreparedClaims> loaded = checkpoint.Load();
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(loaded.status().message(), HasSubstr(dir.Path("cp.json")));
}

TEST(DraCheckpointSlots, AnotherDriversSlotIsRefusedEvenBesideAValidOne) {
  testing::TempDir dir;
  DraCheckpoint checkpoint(dir.Path("cp.json"), kGpuDriver);
  ASSERT_TRUE(checkpoint.Store(OneClaim("a")).ok());
  ASSERT_TRUE(WriteFileDurably(checkpoint.SlotPath(1),
                               EncodeDraCheckpoint("net.example.com", OneClaim("b"), 7))
                  .ok());
  absl::StatusOr<PreparedClaims> loaded = checkpoint.Load();
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(loaded.status().message(), HasSubstr("net.example.com"));
}

TEST(DraCheckpointSlots, ANegativeOrNonNumericGenerationIsCorrupt) {
  json file = json::parse(EncodeDraCheckpoint(kGpuDriver, OneClaim("a"), 3));
  json data = json::parse(file["data"].get<std::string>());
  EXPECT_EQ(data["generation"], 3);
  data["generation"] = "three";
  file["data"] = data.dump();
  file["checksum"] =
      crc32(0, reinterpret_cast<const Bytef*>(file["data"].get<std::string>().data()),
            file["data"].get<std::string>().size());
  EXPECT_EQ(DecodeDraCheckpoint(file.dump(), kGpuDriver, "cp").status().code(),
            absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace kdp::internal
