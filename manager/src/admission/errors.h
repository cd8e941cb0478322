// The reasons and messages a pod is refused with at admission, worded exactly as the kubelet words
// them (pkg/kubelet/cm/admission/errors.go, the predicate admit handler of pkg/kubelet/lifecycle)
// and as the scheduler's and the DRA manager's Events name them. A leaf of its own, as the
// kubelet's cm/admission package is: the topology manager, the pod manager, pod admission and the
// status manager take these words without depending on the device manager (whose own error texts
// are devicemanager/errors.h's).
#ifndef KDP_MANAGER_SRC_ADMISSION_ERRORS_H_
#define KDP_MANAGER_SRC_ADMISSION_ERRORS_H_

#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace kdp::manager::errors {

// The kubelet's predicate admission (lifecycle/predicate.go): an extended resource the node does
// not have, as for a pod bound to the node without the scheduler.
inline std::string OutOfResourceReason(absl::string_view resource) {
  return absl::StrCat("OutOf", resource);
}
inline std::string InsufficientResource(absl::string_view resource, int64_t requested, int64_t used,
                                        int64_t capacity) {
  return absl::StrCat("Node didn't have enough resource: ", resource, ", requested: ", requested,
                      ", used: ", used, ", capacity: ", capacity);
}

// Admission (GetPodAdmitResult in pkg/kubelet/cm/admission/errors.go).
inline constexpr char kUnexpectedAdmissionError[] = "UnexpectedAdmissionError";
inline constexpr char kCreateContainerConfigError[] = "CreateContainerConfigError";
// DRA: the scheduler could not allocate or reserve the pod's claims (kdp-manager plays the
// scheduler), and the kubelet's event when NodePrepareResources failed.
inline constexpr char kFailedScheduling[] = "FailedScheduling";
inline constexpr char kFailedPrepareDynamicResources[] = "FailedPrepareDynamicResources";
inline std::string AllocateFailed(absl::string_view err) {
  return absl::StrCat("Allocate failed due to ", err, ", which is unexpected");
}

}  // namespace kdp::manager::errors

#endif  // KDP_MANAGER_SRC_ADMISSION_ERRORS_H_
