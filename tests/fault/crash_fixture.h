// Shared fixture of the crash and disk-full fault suites (crash_rounds_test.cc, disk_full_test.cc):
// kdp-manager, kdp-gpu-plugin, kdp-dra-driver and kdpctl as real processes (the integration
// fixtures), plus what fault rounds need on top of them: a printed seed, round counts from the
// environment, kdpctl run in the background so that a process can be killed while it waits,
// manifests kept outside the kubelet root (which may be a full tmpfs), FIGURE: lines, and the
// invariants compared after every fault, each as a function returning "" when it holds or what
// is wrong (so a test can wait for it and then assert it):
//   - DeviceStateProblem: the pods kdpctl lists are exactly the expected ones with their devices,
//     PodResources agrees, no device is held twice, `kdpctl status` counts the same holders;
//   - CheckpointProblem: kubelet_internal_checkpoint parses and holds exactly those allocations;
//   - DraStateProblem: every live pod's claim is allocated and reserved for it in the resource
//     API with the devices it was prepared with, nothing else is allocated, reserved or
//     generated, and the prepared set is the same in the manager (status and dra_manager_state)
//     and in the driver (its checkpoint and its CDI specs).
//
// Thread-safety: as E2ETest: used from the test's main thread only.
#ifndef KDP_TESTS_FAULT_CRASH_FIXTURE_H_
#define KDP_TESTS_FAULT_CRASH_FIXTURE_H_

#include <grpcpp/grpcpp.h>

#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "common/unix_socket.h"
#include "podresources/v1/api.grpc.pb.h"
#include "sdk/src/dra/checkpoint.h"
#include "tests/integration/dra_fixture.h"
#include "tests/testing/example_names.h"

namespace kdp::testing {

// The positive integer in environment variable `name`, else `fallback`.
inline int EnvCount(const char* name, int fallback) {
  int value = 0;
  const char* text = std::getenv(name);
  return text != nullptr && absl::SimpleAtoi(text, &value) && value > 0 ? value : fallback;
}

// KDP_FAULT_SEED when set, else a fresh random seed; printed either way so a failure replays.
inline uint32_t FaultSeed(const std::string& what) {
  uint32_t seed = 0;
  const char* text = std::getenv("KDP_FAULT_SEED");
  if (text == nullptr || !absl::SimpleAtoi(text, &seed)) seed = std::random_device()();
  std::cout << what << ": seed " << seed << " (KDP_FAULT_SEED=" << seed << " replays it)"
            << std::endl;
  return seed;
}

inline void Figure(const std::string& name, double value, const std::string& unit) {
  std::cout << "FIGURE: " << name << " = " << value << " " << unit << std::endl;
}

// A kdpctl command running in the background.
struct BackgroundKdpctl {
  std::unique_ptr<Subprocess> process;
  std::string out_path;
  std::string err_path;
};

// What the tests know about a pod with one DRA claim "gpus" (from kdpctl's answer).
struct DraPod {
  std::string uid;
  std::string claim_name;
  std::string claim_uid;
  std::vector<std::string> cdi_ids;  // the claim's CDI device IDs, in kdpctl's order
  std::set<std::string> devices;     // "pool/device"
  friend bool operator==(const DraPod&, const DraPod&) = default;
};

class FaultFixture : public DraE2ETest {
 protected:
  // Writes `yaml` to a new file outside the kubelet root and returns its path.
  std::string Manifest(const std::string& yaml) {
    std::string path = scratch_.Path(absl::StrCat("manifest-", ++files_, ".yaml"));
    std::ofstream(path) << yaml;
    return path;
  }
  KdpctlResult ApplyYaml(const std::string& yaml) {
    return Kdpctl({"apply", "-f", Manifest(yaml)});
  }

  // `kdpctl --kubelet-root <root> <args> -o json`, not waited for.
  BackgroundKdpctl StartKdpctl(std::vector<std::string> args) {
    BackgroundKdpctl run;
    run.out_path = scratch_.Path(absl::StrCat("kdpctl-", ++files_, ".out"));
    run.err_path = run.out_path + ".err";
    std::vector<std::string> argv = {KDP_KDPCTL_BIN, "--kubelet-root", Root()};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back("-o");
    argv.push_back("json");
    auto process =
        Subprocess::Start(argv, {.output_path = run.out_path, .stderr_path = run.err_path});
    EXPECT_TRUE(process.ok()) << process.status();
    if (process.ok()) run.process = std::move(*process);
    return run;
  }
  KdpctlResult Finish(BackgroundKdpctl& run) {
    KdpctlResult result;
    if (run.process == nullptr) return result;
    absl::StatusOr<int> code = run.process->Wait(absl::Seconds(60));
    EXPECT_TRUE(code.ok()) << code.status();
    if (!code.ok()) return result;
    result.exit_code = *code;
    result.out = ReadFile(run.out_path);
    result.err = ReadFile(run.err_path);
    result.json = nlohmann::json::parse(result.out, nullptr, /*allow_exceptions=*/false);
    return result;
  }

  void KillManager() {
    ASSERT_TRUE(manager_->Signal(SIGKILL).ok());
    ASSERT_TRUE(manager_->Wait(absl::Seconds(20)).ok());
  }

  // The GPUs of container "main" in an apply or get-pods answer, sorted.
  static std::vector<std::string> Gpus(const nlohmann::json& pod) {
    std::vector<std::string> out;
    for (const auto& c : pod["containers"]) {
      if (c["name"] == "main" && c["devices"].contains(kGpuResource)) {
        for (const auto& id : c["devices"][kGpuResource]) out.push_back(id);
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  static DraPod DraPodOf(const nlohmann::json& pod) {
    DraPod out;
    out.uid = pod["pod"].value("uid", "");
    if (!pod["claims"].is_array() || pod["claims"].empty()) return out;
    const nlohmann::json& claim = pod["claims"][0];
    out.claim_name = claim.value("claim_name", "");
    out.claim_uid = claim.value("claim_uid", "");
    for (const auto& device : claim["devices"]) {
      out.devices.insert(absl::StrCat(device["pool"].get<std::string>(), "/",
                                      device["device"].get<std::string>()));
    }
    out.cdi_ids = ClaimCdiIds(pod);
    return out;
  }

  // Pod name → its GPUs (sorted), from the PodResources API; {"<error>": …} when it fails.
  std::map<std::string, std::vector<std::string>> PodResourcesGpus() {
    auto stub = v1::PodResourcesLister::NewStub(grpc::CreateChannel(
        UnixTarget(Root() + "/pod-resources/kubelet.sock"), grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::ListPodResourcesResponse list;
    grpc::Status status = stub->List(&context, v1::ListPodResourcesRequest(), &list);
    if (!status.ok()) return {{"<error>", {status.error_message()}}};
    std::map<std::string, std::vector<std::string>> out;
    for (const auto& pod : list.pod_resources()) {
      std::vector<std::string>& ids = out[pod.name()];
      for (const auto& container : pod.containers()) {
        for (const auto& devices : container.devices()) {
          if (devices.resource_name() != kGpuResource) continue;
          for (const auto& id : devices.device_ids()) ids.push_back(id);
        }
      }
      std::sort(ids.begin(), ids.end());
    }
    return out;
  }

  // "" when the manager holds exactly `live` (pod name → sorted GPUs): kdpctl get pods,
  // PodResources List and kdpctl status agree and no GPU is held twice; else what differs.
  std::string DeviceStateProblem(const std::map<std::string, std::vector<std::string>>& live) {
    KdpctlResult listed = Kdpctl({"get", "pods"});
    if (listed.exit_code != 0 || !listed.json.is_object()) {
      return absl::StrCat("kdpctl get pods failed: ", listed.err);
    }
    std::map<std::string, std::vector<std::string>> got;
    for (const auto& pod : listed.json["pods"]) got[pod["pod"]["name"]] = Gpus(pod);
    if (got != live)
      return absl::StrCat("kdpctl get pods: ", Describe(got), ", expected ", Describe(live));
    std::map<std::string, std::vector<std::string>> resources = PodResourcesGpus();
    if (resources != live) {
      return absl::StrCat("PodResources List: ", Describe(resources), ", expected ",
                          Describe(live));
    }
    std::map<std::string, std::string> holder;
    for (const auto& [name, gpus] : live) {
      for (const std::string& id : gpus) {
        if (!holder.emplace(id, name).second) {
          return absl::StrCat(id, " is held by ", holder[id], " and ", name);
        }
      }
    }
    nlohmann::json resource = Resource(kGpuResource);
    if (!resource.is_object() || resource["allocated"] != holder.size()) {
      return absl::StrCat("kdpctl status counts other holders: ", resource.dump());
    }
    for (const auto& d : resource["devices"]) {
      auto it = holder.find(d["id"].get<std::string>());
      if (d["pod"] != (it == holder.end() ? "" : "default/" + it->second)) {
        return absl::StrCat("kdpctl status: ", d.dump(), " but held by ",
                            it == holder.end() ? "nobody" : it->second);
      }
    }
    return "";
  }

  // "" when kubelet_internal_checkpoint parses, its checksum holds and its allocations of
  // example.com/gpu are exactly `live` (pod UID → sorted GPUs); else what is wrong.
  std::string CheckpointProblem(const std::map<std::string, std::vector<std::string>>& live) {
    KdpctlResult inspected = Inspect(PluginsDir() + "/kubelet_internal_checkpoint");
    if (inspected.exit_code != 0 || inspected.json["checksum_ok"] != true) {
      return absl::StrCat("checkpoint does not parse: ", inspected.out, inspected.err);
    }
    std::map<std::string, std::vector<std::string>> got;
    for (const auto& entry : inspected.json["entries"]) {
      if (entry["resource"] != kGpuResource) continue;
      std::vector<std::string>& ids = got[entry["pod_uid"]];
      for (const auto& [node, list] : entry["devices"].items()) {
        for (const auto& id : list) ids.push_back(id);
      }
      std::sort(ids.begin(), ids.end());
    }
    if (got != live)
      return absl::StrCat("checkpoint holds ", Describe(got), ", expected ", Describe(live));
    return "";
  }

  // The claim UIDs the example driver holds prepared: from its CDI specs, and (when
  // `checkpoint` is not null) from its own checkpoint, each entry with its state.
  std::set<std::string> DriverSpecClaims() const {
    std::set<std::string> uids;
    for (const std::string& name : CdiSpecs()) {
      absl::string_view rest = name;
      if (absl::ConsumePrefix(&rest, "gpu.example.com-gpu_") &&
          absl::ConsumeSuffix(&rest, ".json")) {
        uids.insert(std::string(rest));
      }
    }
    return uids;
  }
  // Claim UID → state ("PrepareStarted"/"PrepareCompleted") in the driver's prepared-claims.json;
  // {"<error>": why} when it does not parse.
  // The SDK's own reader: the newest valid of the two slots (prepared-claims.json and .1).
  std::map<std::string, std::string> DriverCheckpointClaims() const {
    const std::string path = Root() + "/plugins/gpu.example.com/prepared-claims.json";
    absl::StatusOr<internal::PreparedClaims> claims =
        internal::DraCheckpoint(path, "gpu.example.com").Load();
    if (!claims.ok()) return {{"<error>", std::string(claims.status().message())}};
    std::map<std::string, std::string> out;
    for (const auto& [uid, claim] : *claims) {
      out[uid] = claim.completed ? "PrepareCompleted" : "PrepareStarted";
    }
    return out;
  }

  // "" when the DRA state everywhere is exactly that of `live` (pod name → what its apply said);
  // else the first difference found.
  std::string DraStateProblem(const std::map<std::string, DraPod>& live) {
    std::set<std::string> live_uids, claim_uids;
    std::map<std::string, std::string> pod_of_claim;  // claim UID → pod name
    for (const auto& [name, pod] : live) {
      live_uids.insert(pod.uid);
      claim_uids.insert(pod.claim_uid);
      pod_of_claim[pod.claim_uid] = name;
    }
    // kdpctl get pods.
    std::map<std::string, DraPod> listed;
    for (const auto& [name, pod] : ListedPods()) listed[name] = DraPodOf(pod);
    for (const auto& [name, pod] : live) {
      if (!listed.contains(name)) return absl::StrCat("pod ", name, " is not listed");
      if (!(listed[name] == pod)) {
        return absl::StrCat("pod ", name, " is listed with claim ", listed[name].claim_uid, " [",
                            absl::StrJoin(listed[name].cdi_ids, ","), "], expected ", pod.claim_uid,
                            " [", absl::StrJoin(pod.cdi_ids, ","), "]");
      }
    }
    if (listed.size() != live.size())
      return absl::StrCat(listed.size(), " pods listed, expected ", live.size());
    // The manager's prepared claims (kdpctl status) and its checkpoint.
    std::set<std::string> prepared;
    for (const auto& claim : PreparedClaims()) {
      prepared.insert(claim["uid"]);
      auto it = pod_of_claim.find(claim["uid"]);
      if (it == pod_of_claim.end())
        return absl::StrCat("manager has claim prepared without a live pod: ", claim.dump());
      if (claim["pods"] != nlohmann::json({"default/" + it->second})) {
        return absl::StrCat("manager's claim has other pods: ", claim.dump());
      }
    }
    if (prepared != claim_uids)
      return absl::StrCat("manager prepared {", absl::StrJoin(prepared, ","), "}, expected {",
                          absl::StrJoin(claim_uids, ","), "}");
    KdpctlResult state = Inspect(DraCheckpointPath());
    if (state.exit_code != 0 || state.json["checksum_ok"] != true) {
      return absl::StrCat("dra_manager_state does not parse: ", state.out, state.err);
    }
    std::set<std::string> checkpointed;
    for (const auto& claim : state.json["claims"]) {
      checkpointed.insert(claim["uid"]);
      auto it = pod_of_claim.find(claim["uid"]);
      if (it == pod_of_claim.end() ||
          claim["pod_uids"] != nlohmann::json({live.at(it->second).uid})) {
        return absl::StrCat("dra_manager_state has ", claim.dump());
      }
    }
    if (checkpointed != claim_uids) return "dra_manager_state holds other claims";
    // The driver: its CDI specs and its checkpoint.
    if (std::set<std::string> specs = DriverSpecClaims(); specs != claim_uids) {
      return absl::StrCat("driver CDI specs of {", absl::StrJoin(specs, ","), "}, expected {",
                          absl::StrJoin(claim_uids, ","), "}");
    }
    std::set<std::string> driver;
    for (const auto& [uid, phase] : DriverCheckpointClaims()) {
      if (phase != "PrepareCompleted")
        return absl::StrCat("driver checkpoint: claim ", uid, " is ", phase);
      driver.insert(uid);
    }
    if (driver != claim_uids)
      return absl::StrCat("driver checkpoint holds {", absl::StrJoin(driver, ","), "}");
    // The resource API: allocations and reservations only for live pods, devices held once.
    HttpResponse claims = Api("GET", "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims");
    if (claims.status != 200 || !claims.json.is_object())
      return absl::StrCat("claim list: ", claims.error, claims.body);
    std::map<std::string, std::string> allocated;  // "pool/device" → claim name
    std::set<std::string> seen;
    nlohmann::json items = claims.json["items"];
    for (const auto& claim : items) {
      const std::string name = claim["metadata"]["name"], uid = claim["metadata"]["uid"];
      for (const auto& owner :
           claim["metadata"].value("ownerReferences", nlohmann::json::array())) {
        if (owner.value("controller", false) && !live_uids.contains(owner.value("uid", ""))) {
          return absl::StrCat("claim ", name,
                              " was generated for a pod that is gone: ", claim.dump());
        }
      }
      const nlohmann::json status = claim.value("status", nlohmann::json::object());
      std::set<std::string> reserved;
      for (const auto& ref : status.value("reservedFor", nlohmann::json::array())) {
        if (!live_uids.contains(ref.value("uid", ""))) {
          return absl::StrCat("claim ", name,
                              " is reserved for a pod that is gone: ", claim.dump());
        }
        reserved.insert(ref.value("uid", ""));
      }
      std::set<std::string> devices;
      if (status.contains("allocation")) {
        if (reserved.empty())
          return absl::StrCat("claim ", name, " is allocated for nobody: ", claim.dump());
        nlohmann::json results = status["allocation"]["devices"]["results"];
        for (const auto& result : results) {
          const std::string device = absl::StrCat(result["pool"].get<std::string>(), "/",
                                                  result["device"].get<std::string>());
          devices.insert(device);
          if (!allocated.emplace(device, name).second) {
            return absl::StrCat(device, " is allocated to claims ", allocated[device], " and ",
                                name);
          }
        }
      }
      auto it = pod_of_claim.find(uid);
      if (it == pod_of_claim.end()) continue;
      seen.insert(uid);
      const DraPod& pod = live.at(it->second);
      if (!reserved.contains(pod.uid) || devices != pod.devices) {
        return absl::StrCat("claim ", name, " of live pod ", it->second,
                            " is not allocated and reserved as prepared: ", claim.dump());
      }
    }
    if (seen != claim_uids) return absl::StrCat("the API lacks claims of live pods: ", claims.body);
    return "";
  }

  template <typename Map>
  static std::string Describe(const Map& pods) {
    std::vector<std::string> parts;
    for (const auto& [name, ids] : pods)
      parts.push_back(absl::StrCat(name, "[", absl::StrJoin(ids, ","), "]"));
    return absl::StrCat("{", absl::StrJoin(parts, " "), "}");
  }

  TempDir scratch_;
  int files_ = 0;
};

}  // namespace kdp::testing

#endif  // KDP_TESTS_FAULT_CRASH_FIXTURE_H_
