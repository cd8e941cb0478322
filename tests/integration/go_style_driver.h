// GoStyleDriver: an in-process stand-in for a real DRA driver built on client-go and the Go
// kubelet-plugin helper (k8s.io/dynamic-resource-allocation/kubeletplugin), making the calls such
// drivers make, in their order and with their wire formats, as observed from real Go drivers on
// helper v0.32-v0.37 (a TPU, an NVIDIA GPU and an IBM Power accelerator driver). Go drivers cannot
// be built here, so the integration tests run this against the real kdp-manager to show they
// would work.
//
// What it does, as the helper does:
//   - serves the DRA service(s), the v1alpha1 health service and the registration service on unix
//     sockets in the kubelet root (go_style_driver_grpc.h);
//   - reads the manager's kubeconfig once (server + bearer token) and runs a ResourceSlice
//     informer for its driver and node (go_style_driver_informer.h; watch-list for kV1, LIST +
//     WATCH for kV1beta1Only);
//   - once the informer synced: GET /api/v1/nodes/<node> (the owner reference's uid), then POST
//     the slice as a protobuf body (go_style_driver_slice.h) with generateName; later syncs PUT it
//     back (protobuf, the informer's name/uid/resourceVersion/generation/creationTimestamp) when
//     the devices changed, and POST it again when the informer saw it deleted (kdp-manager wipes
//     the node's slices at start), as the helper's slice controller re-publishes;
//   - NodePrepareResources: GET each claim (v1 → v1beta2 → v1beta1 on a resource 404), check its
//     UID, answer one device per allocation result of this driver with CDI ID
//     "<driver>/gpu=<claim uid>-<device>";
//   - health: each NodeWatchResources stream gets the full device list with health at once, on
//     every SetHealth, and again every health_resend_interval.
// Every HTTP call, informer event, RPC and registration status is recorded for the tests.
//
// Thread-safety: thread-safe. Start and Stop from the test's thread; the accessors, UpdateDevices
// and SetHealth from any thread. The driver's threads (reflector, slice controller, gRPC) take no
// lock across an HTTP call or RPC.
#ifndef KDP_TESTS_INTEGRATION_GO_STYLE_DRIVER_H_
#define KDP_TESTS_INTEGRATION_GO_STYLE_DRIVER_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "tests/integration/go_style_driver_grpc.h"
#include "tests/integration/go_style_driver_http.h"
#include "tests/integration/go_style_driver_informer.h"
#include "tests/integration/go_style_driver_slice.h"
#include "tests/testing/local_servers.h"
#include "tests/testing/loopback_http.h"

namespace kdp::testing {

enum class GoApiFlavour {
  kV1,           // helper v0.36/v0.37: watch-list; v1 → v1beta2 → v1beta1; v1 + v1beta1 DRA
  kV1beta1Only,  // helper v0.32/v0.33: LIST + WATCH; only v1beta1 (API and DRA service)
};

enum class GoDeviceHealth { kHealthy, kUnhealthy, kUnknown };

struct GoStyleDriverOptions {
  std::string driver_name = "gpu.go.example.com";
  std::string node_name = "node-1";
  // REQUIRED: the kubelet root the manager runs on (sockets go to plugins/ and plugins_registry/).
  std::string kubelet_root = {};
  // The kubeconfig to read the server and token from; "": <kubelet_root>/kdp/kubeconfig.
  std::string kubeconfig = {};
  GoApiFlavour flavour = GoApiFlavour::kV1;
  std::vector<GoDevice> devices = {};
  // Shared counter sets of the pool (kV1 only). When set, the pool has two slices, as NVIDIA's
  // driver publishes MIG devices against a 1.35 API server: one with only the counter sets, one
  // with the devices (consuming them); both with resourceSliceCount 2.
  std::vector<GoCounterSet> counter_sets = {};
  // metadata.generateName of the slice; "": "00000-<driver>-<node>-" (kV1) or
  // "<node>-<driver>-" (kV1beta1Only).
  std::string generate_name = {};
  // Serve (and advertise) v1alpha1.DRAResourceHealth; only with kV1.
  bool serve_health = true;
  // Every open health stream gets the full list again this often (a driver's periodic check;
  // keeps devices from going stale at the kubelet's 30 s default timeout).
  absl::Duration health_resend_interval = absl::Seconds(5);
  // health_check_timeout_seconds sent per device; 0: the kubelet's default.
  int64_t health_check_timeout_seconds = 0;
  // Accept-Encoding of every request: Go's http.Transport adds "gzip" unless client-go's
  // rest.Config.DisableCompression is set (drivers do not set it); "" sends none.
  std::string accept_encoding = "gzip";
  // The User-Agent's binary name.
  std::string binary_name = "go-style-kubelet-plugin";
  // Debugging only: POST/PUT JSON bodies instead of protobuf (no Go driver does this).
  bool json_bodies = false;
  // Back-off of the informer and the slice controller, doubling up to the maximum.
  absl::Duration backoff_initial = absl::Milliseconds(100);
  absl::Duration backoff_max = absl::Seconds(2);
};

// A claim NodePrepareResources prepared (and NodeUnprepareResources has not forgotten).
struct GoPreparedClaim {
  std::string api = {};  // the DRA service version that prepared it: "v1" or "v1beta1"
  std::string namespace_ = {};
  std::string name = {};
  std::string uid = {};      // the UID the kubelet side sent
  std::string api_uid = {};  // metadata.uid of the claim the driver's GET returned
  std::vector<GoPreparedDevice> devices = {};
};

class GoStyleDriver final : private GoDriverHandler {
 public:
  explicit GoStyleDriver(GoStyleDriverOptions options) : options_(std::move(options)) {
    if (options_.kubeconfig.empty()) {
      options_.kubeconfig = options_.kubelet_root + "/kdp/kubeconfig";
    }
    if (options_.generate_name.empty()) {
      options_.generate_name =
          options_.flavour == GoApiFlavour::kV1
              ? absl::StrCat("00000-", options_.driver_name, "-", options_.node_name, "-")
              : absl::StrCat(options_.node_name, "-", options_.driver_name, "-");
    }
    if (options_.flavour != GoApiFlavour::kV1) options_.serve_health = false;
    devices_ = options_.devices;
  }
  ~GoStyleDriver() override { Stop(); }
  GoStyleDriver(const GoStyleDriver&) = delete;
  GoStyleDriver& operator=(const GoStyleDriver&) = delete;

  std::string dra_socket() const {
    return absl::StrCat(options_.kubelet_root, "/plugins/", options_.driver_name, "/dra.sock");
  }
  std::string registration_socket() const {
    return absl::StrCat(options_.kubelet_root, "/plugins_registry/", options_.driver_name,
                        "-reg.sock");
  }
  const std::string& generate_name() const { return options_.generate_name; }

  // Serves the sockets, then starts the informer and the slice controller (publishing is
  // asynchronous: wait for published()). FAILED_PRECONDITION when the kubeconfig names no
  // server; UNAVAILABLE when a socket cannot be served. REQUIRES: called once.
  [[nodiscard]] absl::Status Start() {
    const ::kdp::testing::KubeconfigParts api =
        ::kdp::testing::ReadKubeconfigParts(options_.kubeconfig);
    if (api.server.empty() || api.token.empty() || api.ca_pem.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("kubeconfig ", options_.kubeconfig, " names no server, CA and token"));
    }
    client_ = std::make_unique<GoRestClient>(GoRestClient::Options{
        .server = api.server,
        .token = api.token,
        .ca_pem = api.ca_pem,
        .user_agent =
            absl::StrCat(options_.binary_name, "/v0.0.0 (linux/amd64) kubernetes/$Format"),
        .accept_encoding = options_.accept_encoding});
    // The helper starts the DRA server first, then registers with the kubelet.
    std::vector<grpc::Service*> dra = {&v1beta1_service_};
    if (options_.flavour == GoApiFlavour::kV1) dra.insert(dra.begin(), &v1_service_);
    if (options_.serve_health) dra.push_back(&health_service_);
    dra_server_ = ServeUnix(dra_socket(), dra);
    if (dra_server_ == nullptr) return absl::UnavailableError("cannot serve " + dra_socket());
    registration_ = std::make_unique<GoRegistrationService>(Info());
    registration_server_ = ServeUnix(registration_socket(), {registration_.get()});
    if (registration_server_ == nullptr) {
      return absl::UnavailableError("cannot serve " + registration_socket());
    }
    reflector_ = std::make_unique<GoSliceReflector>(
        client_.get(),
        GoSliceReflector::Options{
            .mode = options_.flavour == GoApiFlavour::kV1 ? GoSliceReflector::Mode::kWatchList
                                                          : GoSliceReflector::Mode::kListWatch,
            .versions = Versions(),
            .driver = options_.driver_name,
            .node = options_.node_name,
            .backoff_initial = options_.backoff_initial,
            .backoff_max = options_.backoff_max,
            .on_change = [this](const InformerEvent& event) { OnInformerChange(event); }});
    reflector_->Start();
    controller_ = std::thread([this] { ControllerLoop(); });
    return absl::OkStatus();
  }

  // Stops the controller and the informer, shuts the servers down and removes the sockets (so
  // the manager's plugin watcher deregisters the driver). Idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_) {
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
    }
    if (controller_.joinable()) controller_.join();
    if (reflector_ != nullptr) reflector_->Stop();
    for (auto* server : {&registration_server_, &dra_server_}) {
      if (*server == nullptr) continue;
      (*server)->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
      server->reset();
    }
    std::error_code ignored;
    std::filesystem::remove(registration_socket(), ignored);
    std::filesystem::remove(dra_socket(), ignored);
  }

  // The devices to publish from now on; the controller PUTs the slice (async).
  void UpdateDevices(std::vector<GoDevice> devices) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    devices_ = std::move(devices);
    dirty_ = true;
  }

  // Sets one device's health; every open health stream gets the new full list at once.
  void SetHealth(const std::string& device, GoDeviceHealth health) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    health_[device] = health;
    ++health_version_;
  }

  // The claim GET the driver makes (also the one NVIDIA's checkpoint clean-up makes): the
  // version that answered before, else v1 → v1beta2 → v1beta1 while the answer is the
  // resource's 404 (not the object's).
  ApiResponse GetClaim(const std::string& namespace_, const std::string& name)
      ABSL_LOCKS_EXCLUDED(mu_) {
    std::vector<std::string> versions = Versions();
    {
      absl::MutexLock lock(&mu_);
      if (!claim_version_.empty()) versions = {claim_version_};
    }
    ApiResponse response;
    for (const std::string& version : versions) {
      response = client_->Do("GET", absl::StrCat("/apis/resource.k8s.io/", version, "/namespaces/",
                                                 namespace_, "/resourceclaims/", name));
      const bool object_not_found =
          response.json.is_object() && response.json.contains("details") &&
          response.json["details"].is_object() && response.json["details"].contains("name");
      if (response.status == 404 && !object_not_found) continue;
      if (response.status == 200) {
        absl::MutexLock lock(&mu_);
        claim_version_ = version;
      }
      break;
    }
    return response;
  }

  // ---- What the tests assert on ----
  std::vector<ApiCall> calls() const { return client_ ? client_->calls() : std::vector<ApiCall>{}; }
  std::vector<InformerEvent> events() const {
    return reflector_ ? reflector_->events() : std::vector<InformerEvent>{};
  }
  std::map<std::string, nlohmann::json> slices() const {
    return reflector_ ? reflector_->slices() : std::map<std::string, nlohmann::json>{};
  }
  // The API version the informer settled on ("" before).
  std::string api_version() const { return reflector_ ? reflector_->version() : ""; }
  // True when the informer holds the driver's slices (one, or the counter slice and the device
  // slice), the device slice with the current devices.
  bool published() const ABSL_LOCKS_EXCLUDED(mu_) {
    std::map<std::string, nlohmann::json> slices = this->slices();
    if (slices.size() != (options_.counter_sets.empty() ? 1u : 2u)) return false;
    std::vector<GoDevice> devices;
    {
      absl::MutexLock lock(&mu_);
      devices = devices_;
    }
    for (const auto& [name, slice] : slices) {
      const nlohmann::json spec = slice.value("spec", nlohmann::json());
      if (IsCounterSlice(spec)) continue;
      return DevicesMatch(spec, devices, api_version());
    }
    return false;
  }
  // True once the manager's NotifyRegistrationStatus said registered.
  bool registered() const {
    if (registration_ == nullptr) return false;
    for (const auto& status : registration_->statuses()) {
      if (status.plugin_registered()) return true;
    }
    return false;
  }
  int get_info_calls() const { return registration_ ? registration_->get_info_calls() : 0; }
  std::map<std::string, GoPreparedClaim> prepared_claims() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return prepared_;
  }
  // Claim UIDs in NodeUnprepareResources calls, in order, as "<api>:<uid>".
  std::vector<std::string> unprepared() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return unprepared_;
  }
  int health_streams_opened() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return health_streams_opened_;
  }
  // What the driver would have logged (the slice controller's warnings, errors of syncs).
  std::vector<std::string> logs() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return logs_;
  }

 private:
  std::vector<std::string> Versions() const {
    if (options_.flavour == GoApiFlavour::kV1beta1Only) return {"v1beta1"};
    return {"v1", "v1beta2", "v1beta1"};
  }

  pluginregistration::PluginInfo Info() const {
    pluginregistration::PluginInfo info;
    info.set_type("DRAPlugin");
    info.set_name(options_.driver_name);
    info.set_endpoint(dra_socket());
    if (options_.flavour == GoApiFlavour::kV1) {
      info.add_supported_versions("v1.DRAPlugin");
      info.add_supported_versions("v1beta1.DRAPlugin");
      if (options_.serve_health) info.add_supported_versions("v1alpha1.DRAResourceHealth");
    } else {
      info.add_supported_versions("v1beta1.DRAPlugin");
    }
    return info;
  }

  void Log(std::string line) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    logs_.push_back(std::move(line));
  }

  // ---- The slice controller ----

  void OnInformerChange(const InformerEvent& event) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    pending_creates_.erase(event.name);
    dirty_ = true;
  }

  static bool IsCounterSlice(const nlohmann::json& spec) {
    return spec.is_object() && spec.contains("sharedCounters");
  }

  void ControllerLoop() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::Duration delay = options_.backoff_initial;
    for (;;) {
      {
        absl::MutexLock lock(&mu_);
        auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return dirty_ || stopping_; };
        mu_.Await(absl::Condition(&ready));
        if (stopping_) return;
        dirty_ = false;
      }
      absl::Status synced = Sync();
      if (synced.ok()) {
        delay = options_.backoff_initial;
        continue;
      }
      Log(absl::StrCat("sync ResourceSlices: ", synced.ToString()));
      absl::MutexLock lock(&mu_);
      mu_.AwaitWithTimeout(absl::Condition(&stopping_), delay);
      delay = std::min(delay * 2, options_.backoff_max);
      dirty_ = true;
    }
  }

  // One pass of the helper's slice controller: create the slice when the informer has none,
  // update it when its devices differ, nothing otherwise.
  absl::Status Sync() ABSL_LOCKS_EXCLUDED(mu_) {
    if (!reflector_->synced()) return absl::OkStatus();  // the SYNCED change comes back here
    const std::string version = reflector_->version();
    std::string node_uid;
    GoSliceSpec spec{.driver = options_.driver_name, .node = options_.node_name};
    {
      absl::MutexLock lock(&mu_);
      node_uid = node_uid_;
      spec.devices = devices_;
    }
    if (node_uid.empty()) {
      ApiResponse node = client_->Do("GET", "/api/v1/nodes/" + options_.node_name);
      if (node.status != 200 || !node.json.is_object()) {
        return absl::UnavailableError(absl::StrCat("get Node ", options_.node_name, ": ",
                                                   node.status, " ", node.body, node.error));
      }
      node_uid = node.json["metadata"].value("uid", "");
      absl::MutexLock lock(&mu_);
      node_uid_ = node_uid;
    }
    const std::string path = absl::StrCat("/apis/resource.k8s.io/", version, "/resourceslices");
    const bool split = !options_.counter_sets.empty();
    spec.slice_count = split ? 2 : 1;
    std::optional<std::pair<std::string, nlohmann::json>> device_slice;
    bool have_counters = false;
    const std::map<std::string, nlohmann::json> slices = reflector_->slices();
    for (const auto& [name, slice] : slices) {
      if (IsCounterSlice(slice.value("spec", nlohmann::json()))) {
        have_counters = true;
      } else {
        device_slice.emplace(name, slice);
      }
    }
    {
      // A POSTed slice the informer has not seen yet is pending (the informer may also have seen
      // it before the POST's answer was read: then it is not).
      absl::MutexLock lock(&mu_);
      for (const auto& [name, slice] : slices) pending_creates_.erase(name);
      if (!pending_creates_.empty()) return absl::OkStatus();
    }
    const nlohmann::json meta = {{"generateName", options_.generate_name},
                                 {"ownerReferences",
                                  {{{"apiVersion", "v1"},
                                    {"kind", "Node"},
                                    {"name", options_.node_name},
                                    {"uid", node_uid},
                                    {"controller", true}}}}};
    if (split && !have_counters) {
      GoSliceSpec counters = spec;
      counters.devices.clear();
      counters.counter_sets = options_.counter_sets;
      if (absl::Status s = Create(path, version, meta, counters); !s.ok()) return s;
    }
    if (!device_slice) return Create(path, version, meta, spec);
    const nlohmann::json& current = device_slice->second;
    if (DevicesMatch(current.value("spec", nlohmann::json()), spec.devices, version)) {
      return absl::OkStatus();
    }
    // "Kept generation because at most one update API call is necessary".
    spec.pool_generation = current["spec"]["pool"].value("generation", int64_t{1});
    ApiResponse updated = Write("PUT", absl::StrCat(path, "/", device_slice->first), version,
                                current.value("metadata", nlohmann::json::object()), spec);
    if (updated.status != 200) {
      return absl::UnavailableError(
          absl::StrCat("update ResourceSlice: ", updated.status, " ", updated.body, updated.error));
    }
    CheckEcho(updated.json, spec, version);
    return absl::OkStatus();
  }

  // POSTs one slice; its name is pending until the informer sees it.
  absl::Status Create(const std::string& path, const std::string& version,
                      const nlohmann::json& meta, const GoSliceSpec& spec)
      ABSL_LOCKS_EXCLUDED(mu_) {
    ApiResponse created = Write("POST", path, version, meta, spec);
    if (created.status != 201) {
      return absl::UnavailableError(
          absl::StrCat("create ResourceSlice: ", created.status, " ", created.body, created.error));
    }
    CheckEcho(created.json, spec, version);
    absl::MutexLock lock(&mu_);
    pending_creates_.insert(created.json["metadata"].value("name", ""));
    return absl::OkStatus();
  }

  ApiResponse Write(const std::string& method, const std::string& path, const std::string& version,
                    const nlohmann::json& meta, const GoSliceSpec& spec) {
    if (options_.json_bodies) {
      return client_->Do(method, path, EncodeSliceJson(version, meta, spec), "application/json");
    }
    return client_->Do(method, path, EncodeSliceBody(version, meta, spec), kKubernetesProtobuf);
  }

  // The controller compares the server's answer with what it sent (resourceslice controller).
  void CheckEcho(const nlohmann::json& echo, const GoSliceSpec& spec, const std::string& version) {
    const nlohmann::json meta =
        echo.is_object() ? echo.value("metadata", nlohmann::json::object()) : nlohmann::json();
    if (!meta.is_object() ||
        !DevicesMatch(echo.value("spec", nlohmann::json()), spec.devices, version) ||
        !echo["spec"].is_object() || echo["spec"].value("driver", "") != spec.driver) {
      Log("some fields were dropped by the apiserver, probably because these features are "
          "disabled");
    }
  }

  // ---- GoDriverHandler ----

  absl::StatusOr<std::vector<GoPreparedDevice>> PrepareClaim(const std::string& api,
                                                             const std::string& namespace_,
                                                             const std::string& name,
                                                             const std::string& uid)
      ABSL_LOCKS_EXCLUDED(mu_) override {
    ApiResponse claim = GetClaim(namespace_, name);
    if (claim.status != 200 || !claim.json.is_object()) {
      return absl::UnavailableError(absl::StrCat("retrieve claim ", namespace_, "/", name, ": ",
                                                 claim.status, " ", claim.body, claim.error));
    }
    const std::string api_uid = claim.json["metadata"].value("uid", "");
    if (api_uid != uid) {
      return absl::FailedPreconditionError(absl::StrCat(
          "claim ", namespace_, "/", name, ": claim UID mismatch: got ", api_uid, ", want ", uid));
    }
    const nlohmann::json allocation =
        claim.json.value("status", nlohmann::json::object()).value("allocation", nlohmann::json());
    if (!allocation.is_object()) {
      return absl::FailedPreconditionError(
          absl::StrCat("claim ", namespace_, "/", name, " not allocated"));
    }
    std::vector<GoPreparedDevice> devices;
    const nlohmann::json results =
        allocation.value("devices", nlohmann::json::object()).value("results", nlohmann::json());
    if (results.is_array()) {
      for (const auto& result : results) {
        if (result.value("driver", "") != options_.driver_name) continue;
        const std::string device = result.value("device", "");
        devices.push_back(
            {.request = result.value("request", ""),
             .pool = result.value("pool", ""),
             .device = device,
             .cdi_id = absl::StrCat(options_.driver_name, "/gpu=", uid, "-", device)});
      }
    }
    absl::MutexLock lock(&mu_);
    prepared_[uid] = GoPreparedClaim{.api = api,
                                     .namespace_ = namespace_,
                                     .name = name,
                                     .uid = uid,
                                     .api_uid = api_uid,
                                     .devices = devices};
    return devices;
  }

  void UnprepareClaim(const std::string& api, const std::string& uid)
      ABSL_LOCKS_EXCLUDED(mu_) override {
    absl::MutexLock lock(&mu_);
    prepared_.erase(uid);
    unprepared_.push_back(absl::StrCat(api, ":", uid));
  }

  grpc::Status WatchHealth(grpc::ServerContext* context,
                           grpc::ServerWriter<healthv1alpha1::NodeWatchResourcesResponse>* writer)
      ABSL_LOCKS_EXCLUDED(mu_) override {
    {
      absl::MutexLock lock(&mu_);
      ++health_streams_opened_;
    }
    int64_t sent_version = -1;
    absl::Time last_sent = absl::InfinitePast();
    for (;;) {
      healthv1alpha1::NodeWatchResourcesResponse response;
      {
        absl::MutexLock lock(&mu_);
        auto changed = [this, sent_version]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return stopping_ || health_version_ != sent_version;
        };
        // Bounded, so a cancelled stream is noticed.
        mu_.AwaitWithTimeout(absl::Condition(&changed), absl::Milliseconds(100));
        if (stopping_) return grpc::Status::OK;
        if (health_version_ == sent_version &&
            absl::Now() - last_sent < options_.health_resend_interval) {
          if (context->IsCancelled()) return grpc::Status::CANCELLED;
          continue;
        }
        sent_version = health_version_;
        const int64_t now = absl::ToUnixSeconds(absl::Now());
        for (const GoDevice& device : devices_) {
          auto* entry = response.add_devices();
          entry->mutable_device()->set_pool_name(options_.node_name);
          entry->mutable_device()->set_device_name(device.name);
          const auto health = health_.find(device.name);
          const GoDeviceHealth value =
              health == health_.end() ? GoDeviceHealth::kHealthy : health->second;
          entry->set_health(value == GoDeviceHealth::kHealthy     ? healthv1alpha1::HEALTHY
                            : value == GoDeviceHealth::kUnhealthy ? healthv1alpha1::UNHEALTHY
                                                                  : healthv1alpha1::UNKNOWN);
          entry->set_last_updated_time(now);
          entry->set_health_check_timeout_seconds(options_.health_check_timeout_seconds);
          if (value == GoDeviceHealth::kUnhealthy) entry->set_message("XID 79: fallen off the bus");
        }
      }
      last_sent = absl::Now();
      if (context->IsCancelled() || !writer->Write(response)) return grpc::Status::CANCELLED;
    }
  }

  GoStyleDriverOptions options_;
  std::unique_ptr<GoRestClient> client_;
  std::unique_ptr<GoSliceReflector> reflector_;
  GoDraService<DraV1Api> v1_service_{this, "v1"};
  GoDraService<DraV1beta1Api> v1beta1_service_{this, "v1beta1"};
  GoHealthService health_service_{this};
  std::unique_ptr<GoRegistrationService> registration_;
  std::unique_ptr<grpc::Server> dra_server_;
  std::unique_ptr<grpc::Server> registration_server_;
  std::thread controller_;

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool dirty_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<GoDevice> devices_ ABSL_GUARDED_BY(mu_);
  std::string node_uid_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> pending_creates_ ABSL_GUARDED_BY(mu_);  // POSTed, not seen by the informer
  std::string claim_version_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, GoDeviceHealth> health_ ABSL_GUARDED_BY(mu_);
  int64_t health_version_ ABSL_GUARDED_BY(mu_) = 0;
  int health_streams_opened_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, GoPreparedClaim> prepared_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> unprepared_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> logs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kdp::testing

#endif  // KDP_TESTS_INTEGRATION_GO_STYLE_DRIVER_H_
