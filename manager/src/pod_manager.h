// PodManager admits Pods on kdp-manager's node and keeps the admitted ones, playing the part of
// the kubelet's pod workers and admit handlers: containers are allocated serially, init containers
// first; a device manager error rejects the pod with the kubelet's UnexpectedAdmissionError, and
// each container's runtime options are computed as at its start.
//
// Thread-safe. Admissions and deletions are serialised, as on a kubelet.
#ifndef KDP_MANAGER_SRC_POD_MANAGER_H_
#define KDP_MANAGER_SRC_POD_MANAGER_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "manager/src/devicemanager/manager.h"
#include "manager/src/pod/pod.h"

namespace kdp::manager {

struct AdmittedContainer {
  Container spec;
  // Resource → device IDs (natural order), and per resource the devices by NUMA node.
  std::map<std::string, std::vector<std::string>> devices;
  std::map<std::string, DevicesPerNuma> devices_per_numa;
  RunContainerOptions options;
};

struct AdmittedPod {
  Pod pod;
  // Init containers (regular and sidecar) in order, then app containers in order.
  std::vector<AdmittedContainer> containers;
};

struct AdmitResult {
  bool admitted = false;
  // When rejected: the kubelet's reason and message.
  std::string reason;
  std::string message;
  AdmittedPod pod;
};

class PodManager {
 public:
  explicit PodManager(DeviceManager* devices) : devices_(devices) {}

  // Admits `pod`. A rejection is a result, not an error; ALREADY_EXISTS when a pod of that
  // namespace and name is already admitted.
  absl::StatusOr<AdmitResult> Admit(Pod pod) ABSL_LOCKS_EXCLUDED(admission_mu_, mu_);
  // Deletes the pod and releases its devices; returns its UID. NOT_FOUND when absent.
  absl::StatusOr<std::string> Delete(const std::string& namespace_, const std::string& name)
      ABSL_LOCKS_EXCLUDED(admission_mu_, mu_);

  // Admitted pods ordered by namespace, then name.
  std::vector<AdmittedPod> List() const ABSL_LOCKS_EXCLUDED(mu_);
  std::optional<AdmittedPod> Get(const std::string& namespace_, const std::string& name) const
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  DeviceManager* const devices_;
  // Held for a whole admission or deletion.
  absl::Mutex admission_mu_;
  mutable absl::Mutex mu_;
  std::map<std::pair<std::string, std::string>, AdmittedPod> pods_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_POD_MANAGER_H_
