#include "manager/src/podmanager/pod_manager.h"

#include <algorithm>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "manager/src/admission/errors.h"
#include "manager/src/devicemanager/allocator.h"

namespace kdp::manager {
std::vector<Pod> PodsForCheckpointEntries(const checkpoint::Data& data,
                                          const std::set<std::string>& known) {
  std::map<std::string, Pod> pods;
  for (const checkpoint::Entry& entry : data.entries) {
    if (known.contains(entry.pod_uid)) continue;
    Pod& pod = pods[entry.pod_uid];
    if (pod.uid.empty()) {
      pod.uid = entry.pod_uid;
      pod.namespace_ = "kdp-adopted";
      pod.name = absl::StrCat("adopted-", entry.pod_uid);
    }
    auto container =
        std::find_if(pod.containers.begin(), pod.containers.end(),
                     [&](const Container& c) { return c.name == entry.container_name; });
    if (container == pod.containers.end()) {
      pod.containers.push_back({.name = entry.container_name,
                                .kind = ContainerKind::kApp,
                                .extended_resources = {},
                                .other_limits = {}});
      container = std::prev(pod.containers.end());
    }
    std::set<std::string> ids;
    for (const auto& [node, list] : entry.devices) ids.insert(list.begin(), list.end());
    container->extended_resources[entry.resource_name] = static_cast<int64_t>(ids.size());
  }
  std::vector<Pod> out;
  for (auto& [uid, pod] : pods) out.push_back(std::move(pod));
  return out;
}

namespace {

TopologyManager* DefaultTopology(DeviceManager* devices, std::optional<TopologyManager>* slot) {
  absl::StatusOr<TopologyManager> none = TopologyManager::Create({}, {devices});
  // Policy "none" has nothing to validate.
  *slot = std::move(none).value();
  return &**slot;
}

}  // namespace

PodManager::PodManager(DeviceManager* devices, StateStore* store, TopologyManager* topology,
                       PodResourceClaims* claims)
    : devices_(devices),
      store_(store),
      topology_(topology != nullptr ? topology : DefaultTopology(devices, &default_topology_)),
      claims_(claims) {}

absl::Status PodManager::AddClaimCdiDevices(const Pod& pod, AdmittedContainer* container) const {
  if (claims_ == nullptr || container->spec.claims.empty()) return absl::OkStatus();
  KDP_ASSIGN_OR_RETURN(std::vector<std::string> ids, claims_->CdiDevices(pod, container->spec));
  for (std::string& id : ids) container->options.cdi_devices.push_back(std::move(id));
  return absl::OkStatus();
}

AdmittedContainer PodManager::Describe(const Pod& pod, const Container& container,
                                       RunContainerOptions options) const {
  AdmittedContainer out{.spec = container,
                        .devices = {},
                        .devices_per_numa = {},
                        .options = std::move(options),
                        .topology_hint = std::nullopt};
  for (const PodDevicesEntry& entry : devices_->ContainerEntries(pod.uid, container.name)) {
    DeviceSet ids;
    for (const std::string& id : DeviceIds(entry.devices)) ids.insert(id);
    out.devices[entry.resource_name] = {ids.begin(), ids.end()};
    out.devices_per_numa[entry.resource_name] = entry.devices;
  }
  return out;
}

void PodManager::Restore(std::vector<Pod> pods) {
  std::map<std::pair<std::string, std::string>, AdmittedPod> restored;
  for (Pod& pod : pods) {
    AdmittedPod admitted{.pod = pod, .containers = {}};
    for (const Container* container : ContainersInAdmissionOrder(pod)) {
      admitted.containers.push_back(
          Describe(pod, *container, devices_->CachedRunContainerOptions(pod.uid, container->name)));
      // The DRA manager restored its claims from dra_manager_state: the CDI IDs are known. Not
      // for a terminating pod, whose claims may be unprepared already.
      if (pod.terminating) continue;
      if (absl::Status added = AddClaimCdiDevices(pod, &admitted.containers.back()); !added.ok()) {
        KDP_LOG_WARNING("A restored container's claims have no CDI devices", "pod",
                        absl::StrCat(pod.namespace_, "/", pod.name), "container", container->name,
                        "err", added.message());
      }
    }
    auto key = std::make_pair(pod.namespace_, pod.name);
    restored.emplace(std::move(key), std::move(admitted));
  }
  KDP_LOG_INFO("Restored pods", "pods", restored.size());
  {
    absl::MutexLock lock(&mu_);
    pods_ = std::move(restored);
    by_uid_.clear();
    for (const auto& [key, admitted] : pods_) by_uid_[admitted.pod.uid] = key;
    sources_ready_ = true;
    ++generation_;
  }
  // Pods that are gone release their devices now (the kubelet's GC once sources are ready), and
  // the ResourceClaims reserved for them (their drivers are asked to unprepare by the DRA
  // reconcile loop).
  devices_->UpdateAllocatedDevices();
  if (claims_ != nullptr) claims_->ReleaseOrphans(ActivePodUids());
}

bool PodManager::SourcesReady() const {
  absl::MutexLock lock(&mu_);
  return sources_ready_;
}

uint64_t PodManager::Generation() const {
  absl::MutexLock lock(&mu_);
  return generation_;
}

std::set<std::string> PodManager::ActivePodUids() const {
  absl::MutexLock lock(&mu_);
  std::set<std::string> out;
  for (const auto& [key, pod] : pods_) out.insert(pod.pod.uid);
  for (const auto& [uid, key] : admitting_) out.insert(uid);
  return out;
}

void PodManager::WithActivePodsSettled(
    const std::function<void(const std::set<std::string>&)>& fn) {
  // No lock across `fn`: it calls drivers (see the header for why that is safe).
  fn(ActivePodUids());
}

std::vector<Pod> PodManager::Pods() const {
  absl::MutexLock lock(&mu_);
  std::vector<Pod> out;
  out.reserve(pods_.size());
  for (const auto& [key, pod] : pods_) out.push_back(pod.pod);
  return out;
}

absl::Status PodManager::BeginAdmission(const Pod& pod, const std::set<std::string>& resources) {
  const PodKey key(pod.namespace_, pod.name);
  absl::MutexLock lock(&mu_);
  if (auto it = pods_.find(key); it != pods_.end()) {
    if (it->second.pod.terminating) {
      return absl::AlreadyExistsError(absl::StrCat(
          "pod ", pod.namespace_, "/", pod.name, " already exists (uid ", it->second.pod.uid,
          ") and is terminating: its deletion completes once its claims are unprepared"));
    }
    return absl::AlreadyExistsError(absl::StrCat("pod ", pod.namespace_, "/", pod.name,
                                                 " already exists (uid ", it->second.pod.uid,
                                                 "); delete it first"));
  }
  if (auto it = deleting_.find(key); it != deleting_.end()) {
    return absl::AlreadyExistsError(absl::StrCat("pod ", pod.namespace_, "/", pod.name,
                                                 " already exists (uid ", it->second,
                                                 ") and is being deleted"));
  }
  for (const auto& [uid, admitting] : admitting_) {
    if (admitting == key) {
      return absl::AlreadyExistsError(absl::StrCat("pod ", pod.namespace_, "/", pod.name,
                                                   " is being admitted (uid ", uid, ")"));
    }
  }
  // Devices are recorded by pod UID: two pods sharing one would share their allocations. A pod
  // being deleted keeps its UID until its devices are released.
  auto uid_user = [&]() -> std::optional<PodKey> {
    mu_.AssertHeld();
    if (auto it = by_uid_.find(pod.uid); it != by_uid_.end()) return it->second;
    if (auto it = admitting_.find(pod.uid); it != admitting_.end()) return it->second;
    for (const auto& [deleting, uid] : deleting_) {
      if (uid == pod.uid) return deleting;
    }
    return std::nullopt;
  };
  if (std::optional<PodKey> other = uid_user(); other.has_value()) {
    return absl::AlreadyExistsError(absl::StrCat(
        "metadata.uid ", pod.uid, " is already used by pod ", other->first, "/", other->second));
  }
  admitting_[pod.uid] = key;
  // Admissions sharing a resource wait for each other (see the header); others go on.
  auto free = [&] {
    mu_.AssertHeld();
    for (const std::string& resource : resources) {
      if (busy_resources_.contains(resource)) return false;
    }
    return true;
  };
  mu_.Await(absl::Condition(&free));
  busy_resources_.insert(resources.begin(), resources.end());
  return absl::OkStatus();
}

void PodManager::ReleaseResources(const std::set<std::string>& resources) {
  absl::MutexLock lock(&mu_);
  for (const std::string& resource : resources) busy_resources_.erase(resource);
}

absl::StatusOr<AdmitResult> PodManager::Admit(Pod pod) {
  pod.terminating = false;  // set by Delete only
  // Every extended resource the pod asks for: the hints of one are computed from its free
  // devices, so no other admission may take any until this one has allocated its own.
  std::set<std::string> resources;
  for (const Container* container : ContainersInAdmissionOrder(pod)) {
    for (const auto& [resource, count] : container->extended_resources) resources.insert(resource);
  }
  KDP_RETURN_IF_ERROR(BeginAdmission(pod, resources));
  bool released = false;
  auto release_resources = [&] {
    if (!std::exchange(released, true)) ReleaseResources(resources);
  };
  // However the admission ends, the pod is no longer "being admitted" after it (an admitted pod
  // is in pods_ by then), and its reusable devices are forgotten.
  const std::string uid = pod.uid;
  absl::Cleanup end = [&] {
    release_resources();
    {
      absl::MutexLock lock(&mu_);
      admitting_.erase(uid);
    }
    devices_->AdmissionEnded(uid);
  };
  return RunAdmission(std::move(pod), release_resources);
}

absl::StatusOr<AdmitResult> PodManager::RunAdmission(
    Pod pod, const std::function<void()>& release_resources) {
  const PodKey key(pod.namespace_, pod.name);
  AdmitResult result;
  // How far the DRA side got, so a rejection undoes exactly that.
  bool claims_reserved = false;
  bool claims_prepared = false;
  auto reject = [&](const std::string& reason, std::string message) {
    if (claims_prepared) {
      // References the DRA manager recorded for the pod go; a driver that fails here is retried
      // by the reconcile loop (the pod is not active).
      if (absl::Status unprepared = claims_->Unprepare(pod); !unprepared.ok()) {
        KDP_LOG_WARNING("Unprepare after a rejection failed; the reconcile loop retries", "pod",
                        absl::StrCat(pod.namespace_, "/", pod.name), "err", unprepared.message());
      }
    }
    if (claims_reserved) claims_->Release(pod);
    devices_->RemovePod(pod.uid);
    KDP_LOG_WARNING("Pod rejected", "pod", absl::StrCat(pod.namespace_, "/", pod.name), "podUID",
                    pod.uid, "reason", reason, "message", message);
    result.admitted = false;
    result.reason = reason;
    result.message = std::move(message);
    result.pod.pod = pod;
    return result;
  };
  // The scheduler's part of DRA: a pod reaches a kubelet only with its claims allocated and
  // reserved for it.
  if (!pod.resource_claims.empty()) {
    if (claims_ == nullptr) {
      return reject(errors::kFailedScheduling,
                    "the pod has resource claims but kdp-manager runs without DRA");
    }
    absl::Status reserved;
    {
      absl::MutexLock schedule(&schedule_mu_);
      reserved = claims_->Reserve(&pod);
    }
    if (!reserved.ok()) {
      return reject(errors::kFailedScheduling,
                    absl::StrCat("0/1 nodes are available: ", reserved.message()));
    }
    claims_reserved = true;
  }
  // Hints, the policy's merge and every container's allocation (the topology manager's admit
  // handler, which drives the device manager on a kubelet too).
  TopologyAdmission topology = topology_->Admit(pod);
  if (!topology.admitted) return reject(topology.reason, std::move(topology.message));
  // The kubelet's predicate admission: an extended resource no plugin serves is one the node does
  // not have (capacity 0); the pod must not run without the devices it asked for.
  for (const Container* container : ContainersInAdmissionOrder(pod)) {
    for (const auto& [resource, count] : container->extended_resources) {
      if (count == 0 || devices_->IsDevicePluginResource(resource)) continue;
      return reject(errors::OutOfResourceReason(resource),
                    errors::InsufficientResource(resource, PodDeviceRequest(pod, resource), 0, 0));
    }
  }
  // Every container holds its devices: the next admission of these resources sees them taken.
  release_resources();
  AdmittedPod admitted{.pod = pod, .containers = {}};
  for (const Container* container : ContainersInAdmissionOrder(pod)) {
    absl::StatusOr<RunContainerOptions> options =
        devices_->GetDeviceRunContainerOptions(pod, *container);
    if (!options.ok()) {
      return reject(errors::kCreateContainerConfigError, std::string(options.status().message()));
    }
    admitted.containers.push_back(Describe(pod, *container, *std::move(options)));
    if (auto hint = topology.hints.find(container->name); hint != topology.hints.end()) {
      admitted.containers.back().topology_hint = hint->second;
    }
  }
  // The kubelet's PrepareResources before the sandbox, then each container's CDI devices.
  if (!pod.resource_claims.empty()) {
    claims_prepared = true;  // a failed prepare may have recorded references already
    if (absl::Status prepared = claims_->Prepare(pod); !prepared.ok()) {
      return reject(errors::kFailedPrepareDynamicResources,
                    absl::StrCat("Failed to prepare dynamic resources: ", prepared.message()));
    }
    for (AdmittedContainer& container : admitted.containers) {
      // The kubelet fails the container's creation when its claims are not prepared (GetResources
      // in pkg/kubelet/cm/dra/manager.go).
      if (absl::Status added = AddClaimCdiDevices(pod, &container); !added.ok()) {
        return reject(errors::kCreateContainerConfigError, std::string(added.message()));
      }
    }
  }
  admitted.pod = pod;  // with the claim names generated from templates
  result.admitted = true;
  result.pod = admitted;
  auto add = [&] {
    absl::MutexLock lock(&mu_);
    pods_.emplace(key, std::move(admitted));
    by_uid_[pod.uid] = key;
  };
  if (store_ == nullptr) {
    add();
  } else if (absl::Status recorded = store_->RecordPodAdmitted(pod, add); !recorded.ok()) {
    if (claims_prepared && !claims_->Unprepare(pod).ok()) {
      KDP_LOG_WARNING("Unprepare after a failed record failed; the reconcile loop retries", "pod",
                      absl::StrCat(pod.namespace_, "/", pod.name));
    }
    if (claims_reserved) claims_->Release(pod);
    devices_->RemovePod(pod.uid);
    KDP_LOG_ERROR("Pod admission could not be recorded; the pod is not admitted", "pod",
                  absl::StrCat(pod.namespace_, "/", pod.name), "podUID", pod.uid, "err",
                  recorded.message());
    return absl::Status(recorded.code(), absl::StrCat("pod ", pod.namespace_, "/", pod.name,
                                                      " not admitted: ", recorded.message()));
  }
  KDP_LOG_INFO("Pod admitted", "pod", absl::StrCat(pod.namespace_, "/", pod.name), "podUID",
               pod.uid);
  return result;
}

absl::StatusOr<std::string> PodManager::Delete(const std::string& namespace_,
                                               const std::string& name) {
  return DeletePod(namespace_, name, /*skip_busy=*/false);
}

absl::StatusOr<std::string> PodManager::DeletePod(const std::string& namespace_,
                                                  const std::string& name, bool skip_busy) {
  const PodKey key(namespace_, name);
  std::string uid;
  Pod pod;
  {
    absl::MutexLock lock(&mu_);
    // Another deletion of the pod, or an admission of its name, ends first.
    auto busy = [&] {
      mu_.AssertHeld();
      if (deleting_.contains(key)) return true;
      for (const auto& [admitting_uid, admitting] : admitting_) {
        if (admitting == key) return true;
      }
      return false;
    };
    if (skip_busy && busy()) {
      return absl::UnavailableError(
          absl::StrCat("pod ", namespace_, "/", name, " is being deleted or admitted"));
    }
    auto idle = [&] { return !busy(); };
    mu_.Await(absl::Condition(&idle));
    auto it = pods_.find(key);
    if (it == pods_.end()) {
      return absl::NotFoundError(absl::StrCat("pod ", namespace_, "/", name, " not found"));
    }
    uid = it->second.pod.uid;
    pod = it->second.pod;
    deleting_[key] = uid;
  }
  absl::Cleanup done = [&] {
    absl::MutexLock lock(&mu_);
    deleting_.erase(key);
  };
  // The kubelet's SyncTerminatingPod: NodeUnprepareResources once the containers stopped; an
  // error keeps the pod terminating until a retry succeeds (the reconcile loop's, or another
  // delete). The pod is recorded terminating first: a crash after its claims were unprepared
  // must not bring it back as a running pod whose devices are gone.
  if (!pod.resource_claims.empty() && claims_ != nullptr) {
    if (!pod.terminating) {
      auto mark = [&] {
        absl::MutexLock lock(&mu_);
        if (auto it = pods_.find({namespace_, name}); it != pods_.end()) {
          it->second.pod.terminating = true;
        }
      };
      if (store_ == nullptr) {
        mark();
      } else {
        KDP_RETURN_IF_ERROR(store_->RecordPodTerminating(uid, mark));
      }
      pod.terminating = true;
    }
    if (absl::Status unprepared = claims_->Unprepare(pod); !unprepared.ok()) {
      // Logged here, whoever asked: the reconcile loop's retries report nothing else, and an
      // UNAVAILABLE driver reads like a busy pod to them (the kubelet logs the failure too).
      KDP_LOG_WARNING("Unpreparing the claims of a terminating pod failed; will retry", "pod",
                      absl::StrCat(namespace_, "/", name), "err", unprepared.message());
      return absl::Status(
          unprepared.code(),
          absl::StrCat("pod ", namespace_, "/", name,
                       " is terminating; its deletion is retried: ", unprepared.message()));
    }
  }
  auto erase = [&] {
    absl::MutexLock lock(&mu_);
    pods_.erase({namespace_, name});
    by_uid_.erase(uid);
    // The generation stays: the devices are released right below, so garbage collection has
    // nothing to find (a full pass costs O(pods) per admission).
  };
  // The pod leaves the store before its devices are released: a crash in between leaves
  // devices of a gone pod (freed by garbage collection at the next start), never a live pod
  // without its devices.
  if (store_ == nullptr) {
    erase();
  } else {
    KDP_RETURN_IF_ERROR(store_->RecordPodDeleted(uid, erase));
  }
  devices_->RemovePod(uid);
  // The resourceclaim controller's part: reservations go, generated claims are deleted.
  if (!pod.resource_claims.empty() && claims_ != nullptr) claims_->Release(pod);
  KDP_LOG_INFO("Pod deleted", "pod", absl::StrCat(namespace_, "/", name), "podUID", uid);
  return uid;
}

int PodManager::FinishTerminating() {
  std::vector<std::pair<std::string, std::string>> terminating;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [key, admitted] : pods_) {
      if (admitted.pod.terminating) terminating.push_back(key);
    }
  }
  int finished = 0;
  for (const auto& [namespace_, name] : terminating) {
    absl::StatusOr<std::string> deleted = DeletePod(namespace_, name, /*skip_busy=*/true);
    if (deleted.ok()) {
      ++finished;
    } else if (!absl::IsNotFound(deleted.status()) &&     // deleted meanwhile by a client
               !absl::IsUnavailable(deleted.status())) {  // a client's deletion is on it
      KDP_LOG_WARNING("Deleting a terminating pod failed; will retry", "pod",
                      absl::StrCat(namespace_, "/", name), "err", deleted.status().message());
    }
  }
  return finished;
}

std::vector<AdmittedPod> PodManager::List() const {
  absl::MutexLock lock(&mu_);
  std::vector<AdmittedPod> out;
  for (const auto& [key, pod] : pods_) out.push_back(pod);
  return out;
}

std::optional<AdmittedPod> PodManager::Get(const std::string& namespace_,
                                           const std::string& name) const {
  absl::MutexLock lock(&mu_);
  auto it = pods_.find({namespace_, name});
  if (it == pods_.end()) return std::nullopt;
  return it->second;
}

}  // namespace kdp::manager
