// The kubelet's checkpoint format: the reference's synthetic vectors TV-S1..TV-S4 byte for byte,
// Go's JSON escaping, v1 reading, corruption detection, and write → read round trips.
#include "manager/src/devicemanager/checkpoint/checkpoint.h"

#include <random>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kdp::manager::checkpoint {
namespace {

using ::testing::HasSubstr;

// ContainerAllocateResponse{envs: {FOO: bar}}, as protobuf bytes (base64 "CgoKA0ZPTxIDYmFy").
const std::string kFooBar("\x0a\x0a\x0a\x03\x46\x4f\x4f\x12\x03\x62\x61\x72", 12);

TEST(Checkpoint, TvS1EmptyIsByteExact) {
  const std::string expected =
      R"({"Data":{"PodDeviceEntries":null,"RegisteredDevices":{}},"Checksum":3467439661})";
  EXPECT_EQ(Encode(Data{}), expected);
  absl::StatusOr<Decoded> decoded = Decode(expected);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_TRUE(decoded->checksum_ok());
  EXPECT_EQ(decoded->format, Format::kV2);
  EXPECT_EQ(decoded->data, Data{});
}

TEST(Checkpoint, TvS2TwoResourcesNoPodsIsByteExact) {
  Data data;
  data.registered_devices = {{"example.com/foo", {"f1", "f2"}}, {"example.com/bar", {"b1"}}};
  const std::string expected =
      R"({"Data":{"PodDeviceEntries":null,"RegisteredDevices":{"example.com/bar":["b1"],)"
      R"("example.com/foo":["f1","f2"]}},"Checksum":419061790})";
  EXPECT_EQ(Encode(data), expected);
  absl::StatusOr<Decoded> decoded = Decode(expected);
  ASSERT_TRUE(decoded.ok());
  EXPECT_TRUE(decoded->checksum_ok());
  EXPECT_EQ(decoded->data, data);
}

TEST(Checkpoint, TvS3NumaKeysAndAllocRespAreByteExact) {
  Data data;
  data.entries.push_back({.pod_uid = "pod-uid-1",
                          .container_name = "ctr",
                          .resource_name = "example.com/foo",
                          .devices = {{-1, {"f1"}}, {0, {"f2"}}, {1, {"f2"}}, {10, {"f3"}}},
                          .alloc_resp = kFooBar});
  data.registered_devices = {{"example.com/foo", {"f1", "f2", "f3"}}};
  const std::string expected =
      R"({"Data":{"PodDeviceEntries":[{"PodUID":"pod-uid-1","ContainerName":"ctr",)"
      R"("ResourceName":"example.com/foo","DeviceIDs":{"-1":["f1"],"0":["f2"],"1":["f2"],)"
      R"("10":["f3"]},"AllocResp":"CgoKA0ZPTxIDYmFy"}],"RegisteredDevices":{"example.com/foo":)"
      R"(["f1","f2","f3"]}},"Checksum":2244000545})";
  EXPECT_EQ(Encode(data), expected);
  absl::StatusOr<Decoded> decoded = Decode(expected);
  ASSERT_TRUE(decoded.ok());
  EXPECT_TRUE(decoded->checksum_ok());
  EXPECT_EQ(decoded->data, data);
}

TEST(Checkpoint, TvS4LegacyV1IsReadWithItsChecksumAndMovedToNumaZero) {
  const std::string v1 =
      R"({"Data":{"PodDeviceEntries":[{"PodUID":"pod-uid-1","ContainerName":"ctr",)"
      R"("ResourceName":"example.com/foo","DeviceIDs":["f1","f2"],"AllocResp":"CgoKA0ZPTxIDYmFy"}],)"
      R"("RegisteredDevices":{"example.com/foo":["f1","f2","f3"]}},"Checksum":3036919596})";
  absl::StatusOr<Decoded> decoded = Decode(v1);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->format, Format::kV1);
  EXPECT_EQ(decoded->computed_checksum, 3036919596u);
  ASSERT_EQ(decoded->data.entries.size(), 1u);
  EXPECT_EQ(decoded->data.entries[0].devices,
            (std::map<int64_t, std::vector<std::string>>{{0, {"f1", "f2"}}}));
  EXPECT_EQ(decoded->data.entries[0].alloc_resp, kFooBar);
}

TEST(Checkpoint, NumaKeysSortAsStringsInJson) {
  Data data;
  data.entries.push_back({.pod_uid = "p",
                          .container_name = "c",
                          .resource_name = "r/x",
                          .devices = {{2, {"a"}}, {10, {"b"}}, {-1, {"c"}}},
                          .alloc_resp = ""});
  EXPECT_THAT(Encode(data), HasSubstr(R"("DeviceIDs":{"-1":["c"],"10":["b"],"2":["a"]})"));
  EXPECT_THAT(Encode(data), HasSubstr(R"("AllocResp":"")"));
}

TEST(Checkpoint, StringsAreEscapedAsGoDoes) {
  Data data;
  data.registered_devices = {{"r/<&>",
                              {"tab\there", "quote\"back\\slash", std::string("nul\0x", 5),
                               "\xe2\x80\xa8", "bad\xff", "caf\xc3\xa9"}}};
  EXPECT_THAT(Encode(data),
              HasSubstr(R"({"r/\u003c\u0026\u003e":["tab\there","quote\"back\\slash",)"
                        R"("nul\u0000x","\u2028","bad\ufffd","café"]})"));
}

TEST(Checkpoint, AOneByteChangeIsAChecksumMismatch) {
  Data data;
  data.registered_devices = {{"example.com/foo", {"f1", "f2"}}};
  std::string bytes = Encode(data);
  bytes[bytes.find("f2") + 1] = '3';
  absl::StatusOr<Decoded> decoded = Decode(bytes);
  ASSERT_TRUE(decoded.ok());
  EXPECT_FALSE(decoded->checksum_ok());
}

TEST(Checkpoint, NullAndEmptyListsHashDifferentlyAsInGo) {
  const std::string with_null =
      R"({"Data":{"PodDeviceEntries":null,"RegisteredDevices":{"r/x":null}},"Checksum":0})";
  const std::string with_empty =
      R"({"Data":{"PodDeviceEntries":null,"RegisteredDevices":{"r/x":[]}},"Checksum":0})";
  absl::StatusOr<Decoded> a = Decode(with_null);
  absl::StatusOr<Decoded> b = Decode(with_empty);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->computed_checksum, b->computed_checksum);
}

TEST(Checkpoint, RejectsWhatIsNotACheckpointNamingTheRule) {
  for (const auto& [bytes, reason] : std::vector<std::pair<std::string, std::string>>{
           {"", "not valid JSON"},
           {"[]", "no \"Data\" object"},
           {R"({"Data":{}})", "no unsigned \"Checksum\""},
           {R"({"Data":{"PodDeviceEntries":{}},"Checksum":1})", "PodDeviceEntries is not a list"},
           {R"({"Data":{"PodDeviceEntries":[{"DeviceIDs":{"x":[]}}]},"Checksum":1})",
            "key \"x\" is not a NUMA node"},
           {R"({"Data":{"PodDeviceEntries":[{"DeviceIDs":{}},{"DeviceIDs":[]}]},"Checksum":1})",
            "mix the v1 and v2 layouts"},
           {R"({"Data":{"PodDeviceEntries":[{"AllocResp":"!!"}]},"Checksum":1})",
            "AllocResp is not base64"},
       }) {
    absl::StatusOr<Decoded> decoded = Decode(bytes);
    ASSERT_FALSE(decoded.ok()) << bytes;
    EXPECT_EQ(decoded.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(decoded.status().message(), HasSubstr(reason)) << bytes;
  }
}

TEST(Checkpoint, RandomStatesSurviveWriteThenRead) {
  std::mt19937 random(42);
  auto text = [&](int max) {
    std::string s;
    int n = static_cast<int>(random() % max) + 1;
    for (int i = 0; i < n; ++i) s.push_back(static_cast<char>(' ' + random() % 95));
    return s;
  };
  for (int round = 0; round < 200; ++round) {
    Data data;
    int entries = static_cast<int>(random() % 5);
    for (int e = 0; e < entries; ++e) {
      Entry entry{.pod_uid = text(12), .container_name = text(8), .resource_name = text(16)};
      int nodes = static_cast<int>(random() % 4) + 1;
      for (int n = 0; n < nodes; ++n) {
        int64_t node = static_cast<int64_t>(random() % 12) - 1;
        entry.devices[node].push_back(text(6));
      }
      for (int b = static_cast<int>(random() % 40); b > 0; --b) {
        entry.alloc_resp.push_back(static_cast<char>(random() % 256));
      }
      data.entries.push_back(std::move(entry));
    }
    for (int r = static_cast<int>(random() % 3); r > 0; --r) {
      data.registered_devices[text(10)] = {text(5), text(5)};
    }
    absl::StatusOr<Decoded> decoded = Decode(Encode(data));
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_TRUE(decoded->checksum_ok()) << Encode(data);
    EXPECT_EQ(decoded->data, data) << Encode(data);
  }
}

}  // namespace
}  // namespace kdp::manager::checkpoint
