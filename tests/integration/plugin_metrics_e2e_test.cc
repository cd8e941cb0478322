// /metrics and /healthz of the example binaries (kdp-gpu-plugin, kdp-dra-driver) against a real
// kdp-manager: the kdp_device_plugin_* and kdp_dra_driver_* names answer, /healthz fails before
// the manager (the kubelet) exists and passes once the plugin registered, and the
// --metrics-address rules (a default port in use only warns; an explicit one fails).
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/subprocess.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/dra_fixture.h"
#include "tests/unit/sdk/metrics_scrape.h"

namespace kdp::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Optional;

// Waits for `process` to log its metrics port; 0 when it did not within the default timeout.
int WaitForMetricsPort(const Subprocess& process) {
  int port = 0;
  WaitUntil([&] { return (port = LoggedMetricsPort(process.Output())) != 0; });
  return port;
}

// A loopback TCP port held (bound and listening) while the object lives; port() is 0 when it
// could not be bound because something else already holds it (which serves the test as well).
class HeldPort {
 public:
  explicit HeldPort(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
        ::listen(fd_, 1) != 0) {
      return;
    }
    socklen_t length = sizeof(address);
    if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
      port_ = ntohs(address.sin_port);
    }
  }
  ~HeldPort() {
    if (fd_ >= 0) ::close(fd_);
  }
  HeldPort(const HeldPort&) = delete;
  HeldPort& operator=(const HeldPort&) = delete;
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

using PluginMetricsE2ETest = DraE2ETest;

TEST_F(PluginMetricsE2ETest, GpuPluginHealthzFailsUntilTheManagerRegistersIt) {
  ASSERT_NO_FATAL_FAILURE(StartGpuPlugin({"--metrics-address", "127.0.0.1:0"}));
  const int port = WaitForMetricsPort(*plugin_);
  ASSERT_GT(port, 0) << plugin_->Output();
  Scrape before = HttpGet(port, "/healthz");
  EXPECT_EQ(before.status, 500);
  EXPECT_THAT(before.body, HasSubstr("[-]device-plugins failed: example.com/gpu: "));
  const std::string registered = "kdp_device_plugin_registered{resource_name=\"example.com/gpu\"}";
  EXPECT_THAT(ScrapeSample(port, registered), Optional(0.0));

  ASSERT_NO_FATAL_FAILURE(StartManager());
  ASSERT_TRUE(WaitForAllocatable("example.com/gpu", kFixtureGpus)) << plugin_->Output();
  EXPECT_TRUE(WaitUntil([&] { return HttpGet(port, "/healthz").status == 200; }))
      << HttpGet(port, "/healthz").body;
  Scrape metrics = HttpGet(port, "/metrics");
  ASSERT_EQ(metrics.status, 200);
  EXPECT_THAT(Sample(metrics.body, registered), Optional(1.0));
  EXPECT_THAT(Sample(metrics.body,
                     "kdp_device_plugin_registrations_total{resource_name="
                     "\"example.com/gpu\"}"),
              Optional(1.0));
  EXPECT_THAT(Sample(metrics.body,
                     "kdp_device_plugin_devices{resource_name=\"example.com/gpu\","
                     "health=\"Healthy\"}"),
              Optional(kFixtureGpus));
  EXPECT_THAT(Sample(metrics.body,
                     "kdp_device_plugin_list_and_watch_streams{resource_name="
                     "\"example.com/gpu\"}"),
              Optional(1.0));
  // The manager asked for the options when it dialled the plugin.
  EXPECT_THAT(metrics.body, HasSubstr("kdp_device_plugin_rpc_duration_seconds_count{"));

  // A GPU turns unhealthy through the health file: the gauges follow.
  WriteHealthFile("gpu3\n");
  EXPECT_TRUE(WaitUntil([&] {
    return ScrapeSample(port,
                        "kdp_device_plugin_devices{resource_name=\"example.com/gpu\","
                        "health=\"Unhealthy\"}") == 1.0;
  }));
}

// The plugin's /metrics responder is kdp's own (common/http_server.h, no OpenSSL in a plugin):
// a client nobody here wrote, Python's http.client, reads it as a scraper and a probe would: two
// requests on one kept connection, HEAD without a body, and a POST refused with Allow.
TEST_F(PluginMetricsE2ETest, PythonsHttpClientScrapesTheGpuPluginOnOneKeptConnection) {
  ASSERT_NO_FATAL_FAILURE(StartGpuPlugin({"--metrics-address", "127.0.0.1:0"}));
  const int port = WaitForMetricsPort(*plugin_);
  ASSERT_GT(port, 0) << plugin_->Output();
  constexpr char kScript[] = R"(
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
c.request("GET", "/metrics")
r = c.getresponse()
body = r.read().decode()
print("metrics", r.status, r.getheader("Content-Type"))
print("registered metric", "kdp_device_plugin_registered" in body)
sock = c.sock
c.request("GET", "/healthz?verbose")
r = c.getresponse()
r.read()
print("healthz", r.status, "same connection", c.sock is sock)
c.request("HEAD", "/metrics")
r = c.getresponse()
print("head", r.status, int(r.getheader("Content-Length")) > 0, len(r.read()))
c.request("POST", "/metrics", body="x")
r = c.getresponse()
print("post", r.status, r.getheader("Allow"))
)";
  absl::StatusOr<CommandResult> run =
      RunCommand({"/usr/bin/python3", "-c", kScript, std::to_string(port)});
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_EQ(run->exit_code, 0) << run->out << run->err;
  EXPECT_THAT(run->out, HasSubstr("metrics 200 text/plain"));
  EXPECT_THAT(run->out, HasSubstr("registered metric True"));
  EXPECT_THAT(run->out, HasSubstr("healthz 500 same connection True"));  // no manager yet
  EXPECT_THAT(run->out, HasSubstr("head 200 True 0"));
  EXPECT_THAT(run->out, HasSubstr("post 405 GET, HEAD"));
}

TEST_F(PluginMetricsE2ETest, DraDriverServesMetricsAndHealthz) {
  ASSERT_NO_FATAL_FAILURE(StartDraManager());
  ASSERT_NO_FATAL_FAILURE(StartDriver({"--metrics-address", "127.0.0.1:0"}));
  ASSERT_TRUE(WaitForDriver()) << DriverLogs();
  const int port = WaitForMetricsPort(*driver_);
  ASSERT_GT(port, 0) << DriverLogs();
  EXPECT_TRUE(WaitUntil([&] { return HttpGet(port, "/healthz").status == 200; }))
      << HttpGet(port, "/healthz?verbose").body;
  Scrape verbose = HttpGet(port, "/healthz?verbose");
  EXPECT_THAT(verbose.body, HasSubstr("[+]registration ok"));
  EXPECT_THAT(verbose.body, HasSubstr("[+]resource-slices ok"));
  Scrape metrics = HttpGet(port, "/metrics");
  ASSERT_EQ(metrics.status, 200);
  const std::string driver = "{driver_name=\"gpu.example.com\"}";
  EXPECT_THAT(Sample(metrics.body, "kdp_dra_driver_registered" + driver), Optional(1.0));
  EXPECT_THAT(Sample(metrics.body, "kdp_dra_driver_prepared_claims" + driver), Optional(0.0));
  EXPECT_THAT(Sample(metrics.body,
                     "kdp_dra_driver_devices{driver_name=\"gpu.example.com\","
                     "health=\"Healthy\"}"),
              Optional(kFixtureGpus));
  std::optional<double> attempts =
      Sample(metrics.body, "kdp_dra_driver_resource_slice_publish_attempts_total" + driver);
  ASSERT_TRUE(attempts.has_value());
  EXPECT_GE(*attempts, 1);

  // A pod with a claim: NodePrepareResources is counted and the claim shows as prepared.
  nlohmann::json pod = ApplyPod(ExampleManifests());
  ASSERT_TRUE(pod.value("admitted", false)) << pod.dump();
  metrics = HttpGet(port, "/metrics");
  EXPECT_THAT(Sample(metrics.body, "kdp_dra_driver_prepared_claims" + driver), Optional(1.0));
  EXPECT_THAT(Sample(metrics.body,
                     "kdp_dra_driver_rpc_duration_seconds_count{driver_name=\"gpu.example.com\","
                     "method=\"NodePrepareResources\",code=\"OK\"}"),
              Optional(1.0));
}

TEST_F(PluginMetricsE2ETest, DefaultPortInUseOnlyWarnsButAnExplicitOneFails) {
  HeldPort held(9471);  // kdp-gpu-plugin's default; maybe held by a parallel test instead.
  ASSERT_NO_FATAL_FAILURE(StartGpuPlugin());
  EXPECT_TRUE(WaitUntil([&] {
    return absl::StrContains(plugin_->Output(), "Serving device plugin");
  })) << plugin_->Output();
  if (held.port() != 0) {
    EXPECT_THAT(plugin_->Output(), HasSubstr("Cannot serve metrics; running without them"));
  }
  EXPECT_TRUE(plugin_->Running());

  HeldPort taken(0);
  ASSERT_GT(taken.port(), 0);
  const std::string address = absl::StrCat("127.0.0.1:", taken.port());
  absl::StatusOr<CommandResult> run =
      RunCommand({KDP_GPU_PLUGIN_BIN, "--kubelet-root", root_.Path("other"), "--topology-xml",
                  Fixture(), "--metrics-address", address},
                 absl::Seconds(30));
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->exit_code, 1);
  EXPECT_THAT(run->err, HasSubstr(address));

  absl::StatusOr<CommandResult> disabled =
      RunCommand({KDP_DRA_DRIVER_BIN, "--help"}, absl::Seconds(30));
  ASSERT_TRUE(disabled.ok());
  EXPECT_THAT(disabled->out, HasSubstr("--metrics-address"));
  EXPECT_THAT(disabled->out, HasSubstr("127.0.0.1:9472"));
}

}  // namespace
}  // namespace kdp::testing
