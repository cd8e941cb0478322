// What the DRA scenarios hold a driver's published objects and answers to: the rules its
// ResourceSlices on the node must keep, the CDI specs it leaves in the CDI directory, and its
// NodePrepareResources answer for one claim. The *Problems functions are pure and return "" when
// the rules hold, else what breaks them, one short clause per problem joined by "; " (at most
// four, then "…"), naming the slice, pool, device, file or CDI name.
//
// Thread-safety: pure functions, except ReadCdiSpecs (reads a directory).
#ifndef KDP_MANAGER_SRC_CONFORMANCE_DRA_ANSWERS_H_
#define KDP_MANAGER_SRC_CONFORMANCE_DRA_ANSWERS_H_

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "dra/v1/api.pb.h"
#include "nlohmann/json.hpp"

namespace kdp::manager::conformance {

// A device as ResourceSlices and DRA answers name it: pool and device name.
using PoolDevice = std::pair<std::string, std::string>;

// The devices the slices publish (every slice's spec.devices[].name, with its pool).
std::set<PoolDevice> PublishedDevices(const std::vector<nlohmann::json>& slices);

// Every pool among `slices` is complete: as many slices at its highest generation as their
// spec.pool.resourceSliceCount (the scheduler allocates from complete pools only).
bool PoolsComplete(const std::vector<nlohmann::json>& slices);

// A node-local driver's slices on node `node_name` (uid `node_uid`): at least one device; each
// slice owned by the Node (an ownerReference of kind Node, apiVersion v1, that name and uid, so
// that the garbage collector removes them with the node); each pool complete at one generation
// (PoolsComplete, and no slice of an older generation left over); device names unique within a
// pool.
std::string SliceProblems(const std::vector<nlohmann::json>& slices, const std::string& node_name,
                          const std::string& node_uid);

// The CDI specs in a directory as a container runtime loads them (*.json and *.yaml, not
// starting with '.'), parsed strictly and validated with the CDI rules kdp's SDK writes by
// (kdp/cdi.h).
struct CdiIndex {
  std::set<std::string> files;  // every spec file's name
  // Fully-qualified device name ("vendor.com/class=name") → the files defining it.
  std::map<std::string, std::vector<std::string>> devices;
  // "<file>: <why>" for each file that does not parse or validate.
  std::vector<std::string> invalid;
};
CdiIndex ReadCdiSpecs(const std::string& dir);

// A device defined by two spec files: a runtime refuses the conflict. "" when there is none.
std::string CdiConflicts(const CdiIndex& cdi);

// `answer` is the driver's NodePrepareResources answer for a claim whose allocation is
// `allocation_results` (status.allocation.devices.results[] of the ResourceClaim, every driver's;
// only `driver`'s count): no error; exactly the allocated devices of the driver (pool and device
// name), each once, with request names among the allocation's; every CDI device ID fully
// qualified and defined by a valid spec in `cdi`.
std::string PrepareProblems(
    const nlohmann::json& allocation_results, const std::string& driver,
    const k8s::io::kubelet::pkg::apis::dra::v1::NodePrepareResourceResponse& answer,
    const CdiIndex& cdi);

// Every CDI device ID of an answer, in its order.
std::vector<std::string> CdiIds(
    const k8s::io::kubelet::pkg::apis::dra::v1::NodePrepareResourceResponse& answer);

// The devices of an answer as comparable text, sorted: "pool/device [requests] {cdi ids}".
std::vector<std::string> AnswerDevices(
    const k8s::io::kubelet::pkg::apis::dra::v1::NodePrepareResourceResponse& answer);

}  // namespace kdp::manager::conformance

#endif  // KDP_MANAGER_SRC_CONFORMANCE_DRA_ANSWERS_H_
