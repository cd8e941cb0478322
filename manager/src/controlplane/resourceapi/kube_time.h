// The JSON form of a metav1.Time (RFC 3339 in UTC, whole seconds: "2026-11-29T05:45:24Z"), as the
// API server writes creationTimestamp, and the kubelet a condition's or an event's times.
//
// Thread-safety: a pure function; thread-safe.
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_KUBE_TIME_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_KUBE_TIME_H_

#include <string>

#include "absl/time/time.h"

namespace kdp::manager::resourceapi {

inline std::string KubeTime(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

}  // namespace kdp::manager::resourceapi

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_KUBE_TIME_H_
