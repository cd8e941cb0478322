// Shared fixture of the integration tests: a temporary kubelet root, kdp-manager and plugins as
// real processes, and kdpctl run as a command with its JSON parsed.
#ifndef KDP_TESTS_INTEGRATION_E2E_FIXTURE_H_
#define KDP_TESTS_INTEGRATION_E2E_FIXTURE_H_

#include <signal.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/subprocess.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/temp_dir.h"
#include "tests/testing/wait.h"

namespace kdp::testing {

struct KdpctlResult {
  int exit_code = -1;
  nlohmann::json json;
  std::string out;
  std::string err;
};

class E2ETest : public ::testing::Test {
 protected:
  std::string Root() const { return root_.path(); }
  std::string PluginsDir() const { return root_.Path("device-plugins"); }
  std::string KubeletSocket() const { return PluginsDir() + "/kubelet.sock"; }
  std::string Fixture() const {
    return absl::StrCat(KDP_SOURCE_DIR, "/examples/gpu-plugin/topologies/dual-socket-8gpu.xml");
  }

  // Starts kdp-manager on Root() with `extra` flags (e.g. {"--endpoint-grace-period", "2s"}) and
  // waits until its admin socket answers.
  void StartManager(std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {KDP_MANAGER_BIN, "--kubelet-root", Root()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto process = Subprocess::Start(argv);
    ASSERT_TRUE(process.ok()) << process.status();
    manager_ = std::move(*process);
    ASSERT_TRUE(WaitUntil([&] { return Kdpctl({"status"}).exit_code == 0; })) << manager_->Output();
  }

  void StopManager(int sig = SIGTERM) {
    ASSERT_TRUE(manager_->Signal(sig).ok());
    auto code = manager_->Wait(absl::Seconds(20));
    ASSERT_TRUE(code.ok()) << code.status();
    if (sig == SIGTERM) {
      EXPECT_EQ(*code, 0) << manager_->Output();
    }
  }

  void StartGpuPlugin(std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {KDP_GPU_PLUGIN_BIN, "--kubelet-root", Root(),
                                     "--topology-xml",   Fixture(),        "--health-file",
                                     HealthFile()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto process = Subprocess::Start(argv);
    ASSERT_TRUE(process.ok()) << process.status();
    plugin_ = std::move(*process);
  }

  std::string HealthFile() const { return root_.Path("unhealthy-gpus"); }
  void WriteHealthFile(const std::string& text) {
    std::string tmp = HealthFile() + ".tmp";
    std::ofstream(tmp) << text;
    ASSERT_EQ(::rename(tmp.c_str(), HealthFile().c_str()), 0);
  }

  KdpctlResult Kdpctl(std::vector<std::string> args) {
    std::vector<std::string> argv = {KDP_KDPCTL_BIN, "--kubelet-root", Root()};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back("-o");
    argv.push_back("json");
    KdpctlResult result;
    auto run = RunCommand(argv, absl::Seconds(30));
    if (!run.ok()) return result;
    result.exit_code = run->exit_code;
    result.out = run->out;
    result.err = run->err;
    result.json = nlohmann::json::parse(run->out, nullptr, /*allow_exceptions=*/false);
    return result;
  }

  nlohmann::json Status() { return Kdpctl({"status"}).json; }

  // The status entry of `resource`, or null.
  nlohmann::json Resource(const std::string& resource) {
    nlohmann::json status = Status();
    if (!status.is_object()) return nullptr;
    for (const auto& r : status["resources"]) {
      if (r["name"] == resource) return r;
    }
    return nullptr;
  }

  bool WaitForAllocatable(const std::string& resource, int allocatable, int capacity = -1) {
    return WaitUntil([&] {
      nlohmann::json r = Resource(resource);
      return r.is_object() && r["allocatable"] == allocatable &&
             (capacity < 0 || r["capacity"] == capacity);
    });
  }

  KdpctlResult Apply(const std::string& yaml) {
    static int counter = 0;
    std::string path = root_.Path(absl::StrCat("pod-", ++counter, ".yaml"));
    std::ofstream(path) << yaml;
    return Kdpctl({"apply", "-f", path});
  }

  static std::string GpuPod(const std::string& name, int gpus,
                            const std::string& resource = "example.com/gpu") {
    return absl::StrCat("apiVersion: v1\nkind: Pod\nmetadata:\n  name: ", name,
                        "\nspec:\n  containers:\n  - name: main\n    resources:\n      limits:\n",
                        "        ", resource, ": ", gpus, "\n");
  }

  TempDir root_;
  std::unique_ptr<Subprocess> manager_;
  std::unique_ptr<Subprocess> plugin_;
};

}  // namespace kdp::testing

#endif  // KDP_TESTS_INTEGRATION_E2E_FIXTURE_H_
