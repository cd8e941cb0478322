#include "manager/src/pod_manager.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "manager/src/devicemanager/allocator.h"
#include "manager/src/devicemanager/errors.h"

namespace kdp::manager {
namespace {

std::vector<const Container*> InAdmissionOrder(const Pod& pod) {
  std::vector<const Container*> order;
  for (const Container& c : pod.init_containers) order.push_back(&c);
  for (const Container& c : pod.containers) order.push_back(&c);
  return order;
}

}  // namespace

absl::StatusOr<AdmitResult> PodManager::Admit(Pod pod) {
  absl::MutexLock admission(&admission_mu_);
  auto key = std::make_pair(pod.namespace_, pod.name);
  {
    absl::MutexLock lock(&mu_);
    if (auto it = pods_.find(key); it != pods_.end()) {
      return absl::AlreadyExistsError(absl::StrCat("pod ", pod.namespace_, "/", pod.name,
                                                   " already exists (uid ", it->second.pod.uid,
                                                   "); delete it first"));
    }
    // Devices are recorded by pod UID: two pods sharing one would share their allocations.
    for (const auto& [other_key, other] : pods_) {
      if (other.pod.uid == pod.uid) {
        return absl::AlreadyExistsError(absl::StrCat("metadata.uid ", pod.uid,
                                                     " is already used by pod ", other_key.first,
                                                     "/", other_key.second));
      }
    }
  }
  AdmitResult result;
  auto reject = [&](const char* reason, std::string message) {
    devices_->RemovePod(pod.uid);
    KDP_LOG_WARNING("Pod rejected", "pod", absl::StrCat(pod.namespace_, "/", pod.name), "podUID",
                    pod.uid, "reason", reason, "message", message);
    result.admitted = false;
    result.reason = reason;
    result.message = std::move(message);
    result.pod.pod = pod;
    return result;
  };
  for (const Container* container : InAdmissionOrder(pod)) {
    if (absl::Status status = devices_->Allocate(pod, *container); !status.ok()) {
      return reject(errors::kUnexpectedAdmissionError, errors::AllocateFailed(status.message()));
    }
  }
  AdmittedPod admitted{.pod = pod, .containers = {}};
  for (const Container* container : InAdmissionOrder(pod)) {
    absl::StatusOr<RunContainerOptions> options =
        devices_->GetDeviceRunContainerOptions(pod, *container);
    if (!options.ok()) {
      return reject(errors::kCreateContainerConfigError, std::string(options.status().message()));
    }
    AdmittedContainer out{
        .spec = *container, .devices = {}, .devices_per_numa = {}, .options = std::move(*options)};
    for (const PodDevicesEntry& entry : devices_->ContainerEntries(pod.uid, container->name)) {
      DeviceSet ids;
      for (const std::string& id : DeviceIds(entry.devices)) ids.insert(id);
      out.devices[entry.resource_name] = {ids.begin(), ids.end()};
      out.devices_per_numa[entry.resource_name] = entry.devices;
    }
    admitted.containers.push_back(std::move(out));
  }
  KDP_LOG_INFO("Pod admitted", "pod", absl::StrCat(pod.namespace_, "/", pod.name), "podUID",
               pod.uid);
  result.admitted = true;
  result.pod = admitted;
  absl::MutexLock lock(&mu_);
  pods_.emplace(key, std::move(admitted));
  return result;
}

absl::StatusOr<std::string> PodManager::Delete(const std::string& namespace_,
                                               const std::string& name) {
  absl::MutexLock admission(&admission_mu_);
  std::string uid;
  {
    absl::MutexLock lock(&mu_);
    auto it = pods_.find({namespace_, name});
    if (it == pods_.end()) {
      return absl::NotFoundError(absl::StrCat("pod ", namespace_, "/", name, " not found"));
    }
    uid = it->second.pod.uid;
    pods_.erase(it);
  }
  devices_->RemovePod(uid);
  KDP_LOG_INFO("Pod deleted", "pod", absl::StrCat(namespace_, "/", name), "podUID", uid);
  return uid;
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
