// Shared fixture of the DRA integration tests: kdp-manager (on node "node-a", the bundled
// dual-socket fixture) and the example DRA driver kdp-dra-driver as real processes in a temporary
// kubelet root, manifests applied with kdpctl, and the manager's local resource API reached over
// HTTPS with the kubeconfig's server, CA and bearer token, as a driver or kubectl reaches it.
//
// The HTTP client is kdp::testing::SendHttpRequest (OpenSSL over a raw socket) on purpose:
// cpp-httplib's header must be compiled with the definitions of its pkg-config file
// (CPPHTTPLIB_OPENSSL_SUPPORT, ...), which the integration targets do not get (kdp_sdk links
// PkgConfig::HTTPLIB privately), and a class layout that differs from the shared library's would
// be an ODR violation.
//
// Thread-safety: as E2ETest (used from the test's main thread); HttpRequest is thread-safe.
#ifndef KDP_TESTS_INTEGRATION_DRA_FIXTURE_H_
#define KDP_TESTS_INTEGRATION_DRA_FIXTURE_H_

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "pluginregistration/v1/api.grpc.pb.h"
#include "tests/integration/e2e_fixture.h"
#include "tests/testing/example_names.h"
#include "tests/testing/local_servers.h"
#include "tests/testing/loopback_http.h"

namespace kdp::testing {

inline constexpr char kDraNode[] = "node-a";
inline constexpr int kFixtureGpus = 8;  // dual-socket-8gpu.xml: 4 GPUs per NUMA node

struct HttpResponse {
  int status = 0;         // 0 when no answer came (error says why)
  std::string body = {};  // the decoded body (chunked transfer decoded)
  nlohmann::json json = nullptr;
  std::string error = {};
};

// One request to `server` with a bearer token: "https://127.0.0.1:<port>" as a kubeconfig names
// it, verified against `ca_pem`, or "http://..." (a metrics endpoint) with `ca_pem` empty. The
// connection is closed after the answer. Bounded by 30 s of socket inactivity.
inline HttpResponse HttpRequest(const std::string& server, const std::string& token,
                                const std::string& method, const std::string& path,
                                const std::string& body = "", const std::string& ca_pem = "") {
  HttpResponse response;
  absl::string_view rest = server;
  if (!absl::ConsumePrefix(&rest, ca_pem.empty() ? "http://" : "https://")) {
    response.error =
        absl::StrCat("not an ", ca_pem.empty() ? "http" : "https", ":// server: ", server);
    return response;
  }
  absl::ConsumeSuffix(&rest, "/");
  const std::string host_port(rest);
  const size_t colon = host_port.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(host_port.substr(colon + 1), &port)) {
    response.error = absl::StrCat("no port in ", server);
    return response;
  }
  std::string headers =
      absl::StrCat("Authorization: Bearer ", token, "\r\nAccept: application/json\r\n");
  if (!body.empty() || method == "POST" || method == "PUT") {
    absl::StrAppend(&headers, "Content-Type: application/json\r\n");
  }
  ::kdp::testing::HttpAnswer answer =
      ::kdp::testing::SendHttpRequest({.host = host_port.substr(0, colon),
                                       .port = port,
                                       .method = method,
                                       .path = path,
                                       .headers = headers,
                                       .body = body,
                                       .ca_pem = ca_pem});
  response.status = answer.status;
  response.body = std::move(answer.body);
  response.error = std::move(answer.error);
  if (response.status != 0) {
    response.json = nlohmann::json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  }
  return response;
}

// A plugin's registration socket in <kubelet-root>/plugins_registry, written on the wire API as a
// third-party plugin (a CSI driver, a Go DRA driver) serves it: GetInfo answers `info`, and every
// NotifyRegistrationStatus is recorded.
class FakeRegistration final : public pluginregistration::Registration::Service {
 public:
  explicit FakeRegistration(pluginregistration::PluginInfo info) : info_(std::move(info)) {}

  static pluginregistration::PluginInfo Info(const std::string& type, const std::string& name,
                                             const std::string& endpoint,
                                             const std::vector<std::string>& versions) {
    pluginregistration::PluginInfo info;
    info.set_type(type);
    info.set_name(name);
    info.set_endpoint(endpoint);
    for (const std::string& version : versions) info.add_supported_versions(version);
    return info;
  }

  grpc::Status GetInfo(grpc::ServerContext*, const pluginregistration::InfoRequest*,
                       pluginregistration::PluginInfo* response) override {
    *response = info_;
    return grpc::Status::OK;
  }
  grpc::Status NotifyRegistrationStatus(grpc::ServerContext*,
                                        const pluginregistration::RegistrationStatus* status,
                                        pluginregistration::RegistrationStatusResponse*) override {
    absl::MutexLock lock(&mu_);
    statuses_.push_back(*status);
    return grpc::Status::OK;
  }

  // Every status received so far, oldest first.
  std::vector<pluginregistration::RegistrationStatus> statuses() const {
    absl::MutexLock lock(&mu_);
    return statuses_;
  }
  // True once the manager said the plugin is registered.
  bool registered() const {
    absl::MutexLock lock(&mu_);
    for (const auto& status : statuses_) {
      if (status.plugin_registered()) return true;
    }
    return false;
  }

 private:
  const pluginregistration::PluginInfo info_;
  mutable absl::Mutex mu_;
  std::vector<pluginregistration::RegistrationStatus> statuses_ ABSL_GUARDED_BY(mu_);
};

inline void ShutdownServer(std::unique_ptr<grpc::Server>& server) {
  if (server == nullptr) return;
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  server.reset();
}

class DraE2ETest : public E2ETest {
 protected:
  std::string CdiRoot() const { return root_.Path("cdi"); }
  std::string DraCheckpointPath() const { return root_.Path("dra_manager_state"); }
  std::string RegistryDir() const { return root_.Path("plugins_registry"); }
  static std::string ManifestsDir() {
    return absl::StrCat(KDP_SOURCE_DIR, "/examples/dra-driver/manifests");
  }

  // kdp-manager on node-a with the fixture's NUMA topology, plus `extra` flags.
  void StartDraManager(std::vector<std::string> extra = {}) {
    std::vector<std::string> flags = {"--node-name", kDraNode, "--topology-xml", Fixture()};
    flags.insert(flags.end(), extra.begin(), extra.end());
    StartManager(flags);
  }

  // kdp-dra-driver on the same root and node, its CDI specs in CdiRoot(), plus `extra` flags.
  void StartDriver(std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {
        KDP_DRA_DRIVER_BIN, "--kubelet-root", Root(),
        "--cdi-root",       CdiRoot(),        "--node-name",
        kDraNode,           "--kubeconfig",   Root() + "/kdp/kubeconfig",
        "--topology-xml",   Fixture()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto process = Subprocess::Start(argv);
    ASSERT_TRUE(process.ok()) << process.status();
    driver_ = std::move(*process);
  }

  void StopDriver(int sig) {
    ASSERT_TRUE(driver_->Signal(sig).ok());
    ASSERT_TRUE(driver_->Wait(absl::Seconds(20)).ok()) << driver_->Output();
  }

  // Both processes, and the driver's GPUs published and its endpoint connected.
  void StartAll(std::vector<std::string> manager_flags = {}) {
    ASSERT_NO_FATAL_FAILURE(StartDraManager(manager_flags));
    ASSERT_NO_FATAL_FAILURE(StartDriver());
    ASSERT_TRUE(WaitForDriver()) << DriverLogs();
  }

  std::string DriverLogs() {
    return absl::StrCat("--- manager ---\n", manager_ ? manager_->Output() : "",
                        "\n--- driver ---\n", driver_ ? driver_->Output() : "");
  }

  // The kubeconfig's server and token (both change when the manager restarts).
  std::pair<std::string, std::string> ApiCredentials() const {
    return ReadKubeconfigServer(Root() + "/kdp/kubeconfig");
  }

  // The CA certificate the kubeconfig names (certificate-authority-data).
  std::string ApiCa() const {
    return ::kdp::testing::ReadKubeconfigParts(Root() + "/kdp/kubeconfig").ca_pem;
  }

  HttpResponse Api(const std::string& method, const std::string& path,
                   const std::string& body = "") const {
    const ::kdp::testing::KubeconfigParts api =
        ::kdp::testing::ReadKubeconfigParts(Root() + "/kdp/kubeconfig");
    return HttpRequest(api.server, api.token, method, path, body, api.ca_pem);
  }

  HttpResponse GetClaim(const std::string& name, const std::string& namespace_ = "default") const {
    return Api("GET", absl::StrCat("/apis/resource.k8s.io/v1/namespaces/", namespace_,
                                   "/resourceclaims/", name));
  }

  // Devices published in this node's ResourceSlices of `driver`; -1 when the API does not answer.
  int SliceDevices(const std::string& driver) const {
    HttpResponse list = Api("GET", "/apis/resource.k8s.io/v1/resourceslices");
    if (list.status != 200 || !list.json.is_object() || !list.json["items"].is_array()) return -1;
    int devices = 0;
    for (const auto& slice : list.json["items"]) {
      const nlohmann::json& spec = slice["spec"];
      if (spec.value("driver", "") != driver || spec.value("nodeName", "") != kDraNode) continue;
      if (spec.contains("devices")) devices += static_cast<int>(spec["devices"].size());
    }
    return devices;
  }

  // True when `driver` has an endpoint the manager is connected to (kdpctl status dra_drivers).
  bool DriverConnected(const std::string& driver) {
    nlohmann::json status = Status();
    if (!status.is_object()) return false;
    for (const auto& d : status["dra_drivers"]) {
      if (d["name"] != driver) continue;
      for (const auto& endpoint : d["endpoints"]) {
        if (endpoint["connected"] == true) return true;
      }
    }
    return false;
  }

  bool WaitForDriver(const std::string& driver = kGpuDriver, int devices = kFixtureGpus) {
    return WaitUntil([&] { return DriverConnected(driver) && SliceDevices(driver) == devices; },
                     absl::Seconds(30), absl::Milliseconds(50));
  }

  nlohmann::json PreparedClaims() {
    nlohmann::json status = Status();
    return status.is_object() ? status["prepared_claims"] : nlohmann::json();
  }

  // File names of the CDI specs in CdiRoot(), sorted.
  std::vector<std::string> CdiSpecs() const {
    std::vector<std::string> names;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(CdiRoot(), error)) {
      std::string name = entry.path().filename().string();
      if (absl::EndsWith(name, ".json") && !absl::StartsWith(name, ".")) names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  // The example driver's spec file of a claim (gpu_dra_driver.h).
  std::string SpecPathOf(const std::string& claim_uid) const {
    return absl::StrCat(CdiRoot(), "/gpu.example.com-gpu_", claim_uid, ".json");
  }

  static std::string ReadFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
  }

  // The three example manifests in one multi-document file, optionally without the pod.
  static std::string ExampleManifests(bool with_pod = true) {
    std::string text = absl::StrCat(ReadFile(ManifestsDir() + "/deviceclass.yaml"), "---\n",
                                    ReadFile(ManifestsDir() + "/claim-template.yaml"));
    if (with_pod) absl::StrAppend(&text, "---\n", ReadFile(ManifestsDir() + "/pod.yaml"));
    return text;
  }

  // The Pod's answer in an apply result (a single object or a List).
  static nlohmann::json PodOf(const nlohmann::json& applied) {
    if (!applied.is_object()) return nullptr;
    if (applied.value("kind", "") != "List") return applied;
    for (const auto& item : applied["items"]) {
      if (item.contains("admitted")) return item;
    }
    return nullptr;
  }

  // The pod's answer to applying `yaml` (a Pod, maybe with other objects before it).
  nlohmann::json ApplyPod(const std::string& yaml) {
    KdpctlResult result = Apply(yaml);
    nlohmann::json pod = PodOf(result.json);
    if (!pod.is_object()) {
      ADD_FAILURE() << "no pod in the apply answer: " << result.out << result.err;
      return nlohmann::json::object();
    }
    EXPECT_EQ(result.exit_code, pod.value("admitted", false) ? 0 : 1) << result.out;
    return pod;
  }

  // Admitted pods by name (kdpctl get pods).
  std::map<std::string, nlohmann::json> ListedPods() {
    KdpctlResult listed = Kdpctl({"get", "pods"});
    EXPECT_EQ(listed.exit_code, 0) << listed.err;
    std::map<std::string, nlohmann::json> out;
    if (!listed.json.is_object()) return out;
    for (const auto& pod : listed.json["pods"]) out[pod["pod"]["name"].get<std::string>()] = pod;
    return out;
  }

  KdpctlResult DeletePod(const std::string& name) { return Kdpctl({"delete", "pod", name}); }

  // `kdpctl checkpoint inspect <path> -o json`.
  KdpctlResult Inspect(const std::string& path) {
    KdpctlResult result;
    absl::StatusOr<CommandResult> run =
        RunCommand({KDP_KDPCTL_BIN, "checkpoint", "inspect", path, "-o", "json"});
    if (!run.ok()) return result;
    result.exit_code = run->exit_code;
    result.out = run->out;
    result.err = run->err;
    result.json = nlohmann::json::parse(run->out, nullptr, /*allow_exceptions=*/false);
    return result;
  }

  // Every CDI device ID of a pod's (apply or get pods) claims, in order.
  static std::vector<std::string> ClaimCdiIds(const nlohmann::json& pod) {
    std::vector<std::string> ids;
    for (const auto& claim : pod["claims"]) {
      for (const auto& device : claim["devices"]) {
        for (const auto& id : device["cdi_device_ids"]) ids.push_back(id);
      }
    }
    return ids;
  }

  // The cdi_devices of container `name` of a pod answer.
  static std::vector<std::string> ContainerCdiDevices(const nlohmann::json& pod,
                                                      const std::string& name) {
    for (const auto& container : pod["containers"]) {
      if (container["name"] == name) return container["cdi_devices"];
    }
    return {};
  }

  // ---- Manifests ----

  // A pod whose container "main" uses pod claim "gpus": from template `source` when
  // `from_template`, else the ResourceClaim named `source`.
  static std::string ClaimPod(const std::string& name, const std::string& source,
                              bool from_template = true) {
    return absl::StrCat(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: ", name,
        "\n  namespace: default\nspec:\n  resourceClaims:\n  - name: gpus\n    ",
        from_template ? "resourceClaimTemplateName: " : "resourceClaimName: ", source,
        "\n  containers:\n  - name: main\n    resources:\n      claims:\n"
        "      - name: gpus\n");
  }

  // The "exactly" request "gpus" of `count` devices of `device_class`, indented by `indent`.
  static std::string GpuRequest(int count, const std::string& selector,
                                const std::string& device_class, const std::string& indent) {
    std::string text =
        absl::StrCat(indent, "requests:\n", indent, "- name: gpus\n", indent, "  exactly:\n",
                     indent, "    deviceClassName: ", device_class, "\n", indent,
                     "    allocationMode: ExactCount\n", indent, "    count: ", count, "\n");
    if (!selector.empty()) {
      std::string quoted = absl::StrReplaceAll(selector, {{"'", "''"}});
      absl::StrAppend(&text, indent, "    selectors:\n", indent, "    - cel:\n", indent,
                      "        expression: '", quoted, "'\n");
    }
    return text;
  }

  static std::string ClaimTemplate(const std::string& name, int count,
                                   const std::string& selector = "",
                                   const std::string& device_class = kGpuDriver) {
    return absl::StrCat(
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata:\n  name: ", name,
        "\n  namespace: default\nspec:\n  spec:\n    devices:\n",
        GpuRequest(count, selector, device_class, "      "));
  }

  static std::string Claim(const std::string& name, int count, const std::string& selector = "",
                           const std::string& device_class = kGpuDriver) {
    return absl::StrCat("apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata:\n  name: ",
                        name, "\n  namespace: default\nspec:\n  devices:\n",
                        GpuRequest(count, selector, device_class, "    "));
  }

  static std::string DeviceClass(const std::string& name, const std::string& driver) {
    return absl::StrCat(
        "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: ", name,
        "\nspec:\n  selectors:\n  - cel:\n      expression: 'device.driver == \"", driver, "\"'\n");
  }

  std::unique_ptr<Subprocess> driver_;
};

}  // namespace kdp::testing

#endif  // KDP_TESTS_INTEGRATION_DRA_FIXTURE_H_
