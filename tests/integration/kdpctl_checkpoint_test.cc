// `kdpctl checkpoint inspect|convert` as a process, on kubelet-format files.
#include <fstream>

#include "tests/integration/e2e_fixture.h"

namespace kdp::testing {
namespace {

// TV-S4 of the reference: a kubelet <= 1.19 (v1) checkpoint with one allocation.
constexpr char kV1[] =
    R"({"Data":{"PodDeviceEntries":[{"PodUID":"pod-uid-1","ContainerName":"ctr",)"
    R"("ResourceName":"example.com/foo","DeviceIDs":["f1","f2"],"AllocResp":"CgoKA0ZPTxIDYmFy"}],)"
    R"("RegisteredDevices":{"example.com/foo":["f1","f2","f3"]}},"Checksum":3036919596})";

class KdpctlCheckpoint : public E2ETest {
 protected:
  std::string Write(const std::string& name, const std::string& content) {
    std::string path = root_.Path(name);
    std::ofstream(path) << content;
    return path;
  }
  CommandResult Run(std::vector<std::string> args) {
    args.insert(args.begin(), KDP_KDPCTL_BIN);
    absl::StatusOr<CommandResult> result = RunCommand(args, absl::Seconds(30));
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : CommandResult{};
  }
};

TEST_F(KdpctlCheckpoint, InspectsALegacyFileWithItsEntriesAndChecksum) {
  CommandResult result = Run({"checkpoint", "inspect", Write("v1", kV1), "-o", "json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  nlohmann::json json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["format"], "v1");
  EXPECT_EQ(json["checksum_ok"], true);
  EXPECT_EQ(json["checksum"], 3036919596u);
  ASSERT_EQ(json["entries"].size(), 1u);
  EXPECT_EQ(json["entries"][0]["pod_uid"], "pod-uid-1");
  EXPECT_EQ(json["entries"][0]["devices"]["0"], nlohmann::json({"f1", "f2"}));
  EXPECT_EQ(json["entries"][0]["alloc_response"]["envs"]["FOO"], "bar");
  EXPECT_EQ(json["registered_devices"]["example.com/foo"].size(), 3u);
}

TEST_F(KdpctlCheckpoint, AOneByteChangeIsExitTwoWithTheReason) {
  std::string changed = kV1;
  changed[changed.find("f3") + 1] = '4';
  CommandResult result = Run({"checkpoint", "inspect", Write("bad", changed), "-o", "json"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(nlohmann::json::parse(result.out)["checksum_ok"], false);
  EXPECT_THAT(result.err, ::testing::HasSubstr("checksum mismatch"));
}

TEST_F(KdpctlCheckpoint, NotACheckpointIsExitTwoAndAMissingFileExitOne) {
  CommandResult not_one = Run({"checkpoint", "inspect", Write("junk", "{\"x\":1}")});
  EXPECT_EQ(not_one.exit_code, 2);
  EXPECT_THAT(not_one.err, ::testing::HasSubstr("not a device manager checkpoint"));
  // Not JSON at all: neither kind of kubelet checkpoint, and the message says so.
  CommandResult not_json = Run({"checkpoint", "inspect", Write("brace", "{")});
  EXPECT_EQ(not_json.exit_code, 2);
  EXPECT_THAT(not_json.err, ::testing::HasSubstr(
                                "not a kubelet checkpoint (device manager or dra_manager_state)"));
  EXPECT_EQ(Run({"checkpoint", "inspect", root_.Path("missing")}).exit_code, 1);
}

TEST_F(KdpctlCheckpoint, ConvertsV1ToAValidV2File) {
  const std::string out = root_.Path("converted");
  ASSERT_EQ(Run({"checkpoint", "convert", "--to", "v2", Write("v1", kV1), out}).exit_code, 0);
  CommandResult result = Run({"checkpoint", "inspect", out, "-o", "json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  nlohmann::json json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["format"], "v2");
  EXPECT_EQ(json["entries"][0]["devices"]["0"], nlohmann::json({"f1", "f2"}));
}

}  // namespace
}  // namespace kdp::testing
