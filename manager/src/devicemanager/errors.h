// Every kubelet-visible error text of the device manager, worded exactly as the kubelet words it
// (pkg/kubelet/cm/devicemanager), in one place so logs and admission messages read the same to
// people who know the kubelet. The reasons and messages a pod is refused with at admission are
// admission/errors.h's.
#ifndef KDP_MANAGER_SRC_DEVICEMANAGER_ERRORS_H_
#define KDP_MANAGER_SRC_DEVICEMANAGER_ERRORS_H_

#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace kdp::manager::errors {

inline std::string UnsupportedVersion(absl::string_view version) {
  return absl::StrCat("requested API version \"", version,
                      "\" is not supported by kubelet. Supported version is [\"v1beta1\"]");
}
inline std::string FailedToDial(absl::string_view err) {
  return absl::StrCat("failed to dial device plugin: ", err);
}
inline std::string FailedToGetOptions(absl::string_view err) {
  return absl::StrCat("failed to get device plugin options: ", err);
}
// A (resource, socket) registered again while its stream is open (kubernetes PR #135437).
inline std::string AlreadyConnected(absl::string_view socket) {
  return absl::StrCat("device plugin already connected: ", socket);
}
// An invalid endpoint is kdp's own rule (the kubelet joins the endpoint to its directory without
// checking it): common/path_safety.h ValidateFileName words it.

// devicesToAllocate (pkg/kubelet/cm/devicemanager/manager.go).
inline std::string ChangedRequest(absl::string_view pod_uid, absl::string_view container,
                                  absl::string_view resource, int64_t from, int64_t to) {
  return absl::StrCat("pod \"", pod_uid, "\" container \"", container,
                      "\" changed request for resource \"", resource, "\" from ", from, " to ", to);
}
inline std::string UnregisteredDevice(absl::string_view resource) {
  return absl::StrCat("cannot allocate unregistered device ", resource);
}
inline std::string NoHealthyDevices(absl::string_view resource) {
  return absl::StrCat("no healthy devices present; cannot allocate unhealthy devices ", resource);
}
inline std::string PreviouslyAllocatedUnhealthy(absl::string_view resource) {
  return absl::StrCat(
      "previously allocated devices are no longer healthy; cannot allocate unhealthy devices ",
      resource);
}
inline std::string DevicesUnavailable(absl::string_view resource, int64_t requested,
                                      int64_t available) {
  return absl::StrCat("requested number of devices unavailable for ", resource,
                      ". Requested: ", requested, ", Available: ", available);
}
inline std::string AllocatedLess(int64_t requested, int64_t got) {
  return absl::StrCat("unexpectedly allocated less resources than required. Requested: ", requested,
                      ", Got: ", got);
}
inline std::string UnknownDevicePlugin(absl::string_view resource) {
  return absl::StrCat("unknown Device Plugin ", resource);
}
inline std::string EndpointStopped(absl::string_view endpoint) {
  return absl::StrCat("endpoint ", endpoint, " has been stopped");
}
inline std::string NoContainersInResponse(absl::string_view response) {
  return absl::StrCat("no containers return in allocation response ", response);
}

// Container start (GetDeviceRunContainerOptions in pkg/kubelet/cm/devicemanager/manager.go).
inline std::string PreStartFailed(absl::string_view err) {
  return absl::StrCat("device plugin PreStartContainer rpc failed with err: ", err);
}

inline std::string EndpointNotFound(absl::string_view resource) {
  return absl::StrCat("endpoint not found in cache for a registered resource: ", resource);
}

}  // namespace kdp::manager::errors

#endif  // KDP_MANAGER_SRC_DEVICEMANAGER_ERRORS_H_
