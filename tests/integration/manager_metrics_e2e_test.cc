// kdp-manager's --metrics-address end to end: a real manager with a device plugin (kdp-gpu-plugin)
// or a DRA driver (kdp-dra-driver), /metrics scraped over HTTP and checked for the kubelet's
// metric names and labels after registrations, admissions and claim preparation; /healthz; and an
// explicit address that cannot be bound failing the start.
#include <map>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/dra_fixture.h"
#include "tests/testing/example_names.h"
#include "tests/testing/loopback_http.h"
#include "tests/testing/wait.h"

namespace kdp::testing {
namespace {

using ::testing::HasSubstr;

// Sample lines of a scrape: "name{labels}" → value.
std::map<std::string, double> Samples(const std::string& text) {
  std::map<std::string, double> samples;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    double value = 0;
    (void)absl::SimpleAtod(line.substr(space + 1), &value);
    samples[std::string(line.substr(0, space))] = value;
  }
  return samples;
}

class ManagerMetricsE2E : public DraE2ETest {
 protected:
  void StartWithMetrics() {
    ASSERT_NO_FATAL_FAILURE(StartManager({"--metrics-address", "127.0.0.1:0"}));
    ASSERT_TRUE(WaitUntil([&] { return LoggedMetricsPort(manager_->Output()) > 0; }))
        << manager_->Output();
    server_ = absl::StrCat("http://127.0.0.1:", LoggedMetricsPort(manager_->Output()));
  }
  HttpResponse Get(const std::string& path) { return HttpRequest(server_, "", "GET", path); }
  std::map<std::string, double> Scrape() {
    HttpResponse r = Get("/metrics");
    EXPECT_EQ(r.status, 200) << r.error;
    return Samples(r.body);
  }

  std::string server_;
};

TEST_F(ManagerMetricsE2E, DevicePluginRegistrationAndAllocationAreMeasured) {
  ASSERT_NO_FATAL_FAILURE(StartWithMetrics());
  HttpResponse health = Get("/healthz");
  EXPECT_EQ(health.status, 200) << health.error;
  EXPECT_EQ(health.body, "ok");
  ASSERT_NO_FATAL_FAILURE(StartGpuPlugin());
  ASSERT_TRUE(WaitForAllocatable(kGpuResource, 8, 8)) << plugin_->Output();
  KdpctlResult result = Apply(GpuPod("two", 2));
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;

  const std::map<std::string, double> s = Scrape();
  EXPECT_EQ(s.at("kubelet_device_plugin_registration_total{resource_name=\"example.com/gpu\"}"), 1);
  EXPECT_EQ(s.at("kubelet_device_plugin_alloc_duration_seconds_count{resource_name=\"example.com/"
                 "gpu\"}"),
            1);
  EXPECT_EQ(s.at("kubelet_device_plugin_alloc_duration_seconds_bucket{resource_name=\"example.com/"
                 "gpu\",le=\"+Inf\"}"),
            1);
  EXPECT_EQ(s.at("kdp_manager_devices{health=\"healthy\",resource_name=\"example.com/gpu\"}"), 8);
  EXPECT_EQ(s.at("kdp_manager_pods"), 1);
  HttpResponse verbose = Get("/healthz?verbose");
  EXPECT_EQ(verbose.status, 200);
  EXPECT_THAT(verbose.body, HasSubstr("[+]registration ok\n[+]state ok\n"));
  HttpResponse other = Get("/nothing");
  EXPECT_EQ(other.status, 404);
}

TEST_F(ManagerMetricsE2E, DraPrepareAndUnprepareAreMeasured) {
  ASSERT_NO_FATAL_FAILURE(StartAll({"--metrics-address", "127.0.0.1:0"}));
  ASSERT_TRUE(WaitUntil([&] { return LoggedMetricsPort(manager_->Output()) > 0; }));
  server_ = absl::StrCat("http://127.0.0.1:", LoggedMetricsPort(manager_->Output()));
  KdpctlResult applied = Apply(ExampleManifests());
  ASSERT_EQ(applied.exit_code, 0) << applied.out << applied.err << DriverLogs();
  const nlohmann::json pod = PodOf(applied.json);
  ASSERT_EQ(pod["admitted"], true) << applied.out;

  std::map<std::string, double> s = Scrape();
  EXPECT_EQ(s["dra_operations_duration_seconds_count{is_error=\"false\",operation_name="
              "\"PrepareResources\"}"],
            1);
  const std::string grpc_labels = absl::StrCat(
      "{driver_name=\"", kGpuDriver,
      "\",grpc_status_code=\"OK\",method_name=\"/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/"
      "NodePrepareResources\"}");
  EXPECT_EQ(s[absl::StrCat("dra_grpc_operations_duration_seconds_count", grpc_labels)], 1)
      << Get("/metrics").body;
  EXPECT_EQ(s[absl::StrCat("dra_resource_claims_in_use{driver_name=\"", kGpuDriver, "\"}")], 1);
  EXPECT_EQ(s["dra_resource_claims_in_use{driver_name=\"<any>\"}"], 1);

  const std::string pod_name = pod["pod"]["name"];
  ASSERT_EQ(Kdpctl({"delete", "pod", pod_name}).exit_code, 0);
  s = Scrape();
  EXPECT_EQ(s["dra_operations_duration_seconds_count{is_error=\"false\",operation_name="
              "\"UnprepareResources\"}"],
            1)
      << Get("/metrics").body;
  EXPECT_EQ(s["dra_resource_claims_in_use{driver_name=\"<any>\"}"], 0);
}

TEST_F(ManagerMetricsE2E, AnExplicitAddressThatCannotBeBoundFailsTheStart) {
  ASSERT_NO_FATAL_FAILURE(StartWithMetrics());
  const std::string taken = server_.substr(std::string("http://").size());
  TempDir other_root;
  auto second = Subprocess::Start(
      {KDP_MANAGER_BIN, "--kubelet-root", other_root.path(), "--metrics-address", taken});
  ASSERT_TRUE(second.ok()) << second.status();
  absl::StatusOr<int> code = (*second)->Wait(absl::Seconds(30));
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 1);
  EXPECT_THAT((*second)->Output(), HasSubstr(taken));
}

}  // namespace
}  // namespace kdp::testing
