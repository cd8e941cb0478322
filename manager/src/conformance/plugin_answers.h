// What the scenarios hold a device plugin's answers to, as pure functions of the answers: the
// rules a ListAndWatch message, an Allocate answer and a GetPreferredAllocation answer must keep.
// Each returns "" when the answer keeps them, else what breaks them, one short clause per
// problem joined by "; ", naming the device or path.
//
// Thread-safety: pure functions.
#ifndef KDP_MANAGER_SRC_CONFORMANCE_PLUGIN_ANSWERS_H_
#define KDP_MANAGER_SRC_CONFORMANCE_PLUGIN_ANSWERS_H_

#include <string>
#include <vector>

#include "deviceplugin/v1beta1/api.pb.h"

namespace kdp::manager::conformance {

// IDs non-empty and unique, health "Healthy" or "Unhealthy", NUMA node IDs >= 0. At most four
// problems are named, then "…".
std::string DeviceListProblems(const v1beta1::ListAndWatchResponse& list);

// The API's contract for an Allocate answer: one ContainerAllocateResponse per
// ContainerAllocateRequest; device nodes and mounts with absolute container and host paths;
// device permissions of one or more of r, w, m; environment variable names without '='; CDI
// device names fully qualified (vendor/class=name).
std::string AllocateProblems(const v1beta1::AllocateRequest& request,
                             const v1beta1::AllocateResponse& response);

// A GetPreferredAllocation answer to one container request: allocation_size distinct IDs, all of
// them available, every must_include ID among them.
std::string PreferredProblems(const v1beta1::ContainerPreferredAllocationRequest& request,
                              const v1beta1::PreferredAllocationResponse& response);

}  // namespace kdp::manager::conformance

#endif  // KDP_MANAGER_SRC_CONFORMANCE_PLUGIN_ANSWERS_H_
