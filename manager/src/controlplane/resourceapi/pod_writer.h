// PodWriter is the local API's way into pod admission: on a cluster a Pod written to the API server
// reaches the kubelet, which admits it and writes its status back; kdp-manager plays both parts,
// so the REST server hands a Pod create or delete to the manager's admission
// (lifecycle/pod_admission.h), the same path kdpctl's apply and delete take. Without one, Pods are
// read-only (405).
//
// Thread-safety: implementations are thread-safe.
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_POD_WRITER_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_POD_WRITER_H_

#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace kdp::manager::resourceapi {

class PodWriter {
 public:
  virtual ~PodWriter() = default;
  // POST /api/v1/namespaces/<ns>/pods: `pod` is the v1 Pod as the client sent it, its
  // metadata.namespace set from the URL. Admits it and returns the Pod as stored: Running when
  // admitted, Failed with the kubelet's reason when refused (Pending and unschedulable when the
  // scheduler's part failed). API errors (api_errors.h) when the object is not a valid Pod (422,
  // 400) or a pod of that name exists (409); nothing is admitted then.
  [[nodiscard]] virtual absl::StatusOr<nlohmann::json> CreatePod(nlohmann::json pod) = 0;
  // DELETE /api/v1/namespaces/<ns>/pods/<name>: deletes the pod, freeing its devices and
  // unpreparing its claims; returns the Pod as it was. 404 when there is no such pod; 409 when
  // `uid` (a precondition; empty: none) is not the pod's.
  [[nodiscard]] virtual absl::StatusOr<nlohmann::json> DeletePod(const std::string& namespace_,
                                                                 const std::string& name,
                                                                 const std::string& uid) = 0;
};

}  // namespace kdp::manager::resourceapi

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_POD_WRITER_H_
