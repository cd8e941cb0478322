// `kdpctl checkpoint inspect` on a DRA manager checkpoint (dra_manager_state), run as a process:
// recognised by content, claims listed, checksum_ok false and exit 2 after a one-byte change of
// Data, the <= 1.31 layout reported as unsupported. The kdpctl binary is not a dependency of unit
// tests: build the `kdpctl` target first, or the tests skip with a message saying so.
#include <sys/stat.h>

#include <fstream>

#include "common/subprocess.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/src/dra/checkpoint/checkpoint.h"
#include "nlohmann/json.hpp"
#include "tests/testing/temp_dir.h"

namespace kdp::manager::dra {
namespace {

using ::testing::HasSubstr;

class KdpctlDraCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    struct stat info;
    if (::stat(KDP_KDPCTL_BIN, &info) != 0) {
      GTEST_SKIP() << KDP_KDPCTL_BIN << " is not built; build the kdpctl target to run this test";
    }
  }
  std::string Write(const std::string& name, const std::string& content) {
    std::string path = dir_.Path(name);
    std::ofstream(path) << content;
    return path;
  }
  ::kdp::CommandResult Run(std::vector<std::string> args) {
    args.insert(args.begin(), KDP_KDPCTL_BIN);
    absl::StatusOr<::kdp::CommandResult> result = ::kdp::RunCommand(args, absl::Seconds(30));
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : ::kdp::CommandResult{};
  }

  testing::TempDir dir_;
};

std::vector<state::ClaimInfoState> GpuAndNicClaims() {
  return {{.claim_uid = "uid-1",
           .claim_name = "gpu-claim",
           .namespace_ = "default",
           .pod_uids = {"pod-a", "pod-b"},
           .driver_state = {{"gpu.example.com",
                             {.devices = {{.pool_name = "node-1",
                                           .device_name = "gpu-0",
                                           .request_names = {"gpu"},
                                           .cdi_device_ids = {"example.com/gpu=gpu-0"}}}}}}},
          {.claim_uid = "uid-2",
           .claim_name = "nic-claim",
           .namespace_ = "team",
           .pod_uids = {"pod-c"},
           .driver_state = {{"nic.example.com", {}}}}};
}

TEST_F(KdpctlDraCheckpoint, ListsTheClaimsAsJson) {
  ::kdp::CommandResult result =
      Run({"checkpoint", "inspect", Write("dra_manager_state", EncodeCheckpoint(GpuAndNicClaims())),
           "-o", "json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  nlohmann::json json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["format"], "dra");
  EXPECT_EQ(json["checksum_ok"], true);
  EXPECT_EQ(json["kind"], "DRACheckpoint");
  ASSERT_EQ(json["claims"].size(), 2u);
  EXPECT_EQ(json["claims"][0]["name"], "gpu-claim");
  EXPECT_EQ(json["claims"][0]["pod_uids"], nlohmann::json({"pod-a", "pod-b"}));
  EXPECT_EQ(json["claims"][0]["drivers"]["gpu.example.com"][0]["cdi_device_ids"],
            nlohmann::json({"example.com/gpu=gpu-0"}));
  EXPECT_EQ(json["claims"][1]["drivers"]["nic.example.com"], nlohmann::json::array());
}

TEST_F(KdpctlDraCheckpoint, ListsTheClaimsAsText) {
  ::kdp::CommandResult result =
      Run({"checkpoint", "inspect", Write("state", EncodeCheckpoint(GpuAndNicClaims()))});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("format dra (DRACheckpoint checkpoint.dra.kubelet.k8s.io/v1)"));
  EXPECT_THAT(result.out, HasSubstr("(ok)"));
  EXPECT_THAT(result.out, HasSubstr("claim default/gpu-claim uid uid-1 pods pod-a pod-b"));
  EXPECT_THAT(result.out,
              HasSubstr("driver gpu.example.com: node-1/gpu-0[gpu]=example.com/gpu=gpu-0"));
}

TEST_F(KdpctlDraCheckpoint, AOneByteChangeOfDataIsChecksumOkFalseAndExitTwo) {
  std::string file = EncodeCheckpoint(GpuAndNicClaims());
  file[file.find("gpu-0") + 4] = '9';
  ::kdp::CommandResult result = Run({"checkpoint", "inspect", Write("bad", file), "-o", "json"});
  EXPECT_EQ(result.exit_code, 2);
  nlohmann::json json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["checksum_ok"], false);
  EXPECT_NE(json["checksum"], json["computed_checksum"]);
  EXPECT_THAT(result.err, HasSubstr("checksum mismatch"));
}

TEST_F(KdpctlDraCheckpoint, TheOldLayoutIsReportedAsUnsupported) {
  ::kdp::CommandResult result =
      Run({"checkpoint", "inspect", Write("old", R"({"version":"v1","entries":[],"checksum":1})")});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.err, HasSubstr("<= 1.31"));
}

TEST_F(KdpctlDraCheckpoint, DeviceManagerCheckpointsAreStillRead) {
  ::kdp::CommandResult result = Run(
      {"checkpoint", "inspect",
       Write("kubelet_internal_checkpoint",
             R"({"Data":{"PodDeviceEntries":null,"RegisteredDevices":{}},"Checksum":3467439661})"),
       "-o", "json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(nlohmann::json::parse(result.out)["format"], "v2");
}

}  // namespace
}  // namespace kdp::manager::dra
