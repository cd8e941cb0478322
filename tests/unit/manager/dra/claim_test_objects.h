// The claim, pod and driver names and the API objects built from them that the DRA manager's unit
// tests share (claim_info_test, manager_test, manager_stress_test). The API structs have no
// default member initialisers, so these build them field by field.
#ifndef KDP_TESTS_UNIT_MANAGER_DRA_CLAIM_TEST_OBJECTS_H_
#define KDP_TESTS_UNIT_MANAGER_DRA_CLAIM_TEST_OBJECTS_H_

#include <string>

#include "manager/src/controlplane/resourceapi/types.h"
#include "manager/src/dra/manager.h"
#include "manager/src/pod/pod.h"

namespace kdp::manager::dra {

inline constexpr char kNamespace[] = "test-namespace";
inline constexpr char kClaimName[] = "test-claim";
inline constexpr char kClaimUid[] = "test-claim-uid";
inline constexpr char kDriver[] = "test-driver";
inline constexpr char kPodUid[] = "test-pod-uid";

inline resourceapi::DeviceRequestAllocationResult Result(const std::string& driver,
                                                         const std::string& pool,
                                                         const std::string& device) {
  resourceapi::DeviceRequestAllocationResult result;
  result.request = "test-request";
  result.driver = driver;
  result.pool = pool;
  result.device = device;
  return result;
}

inline resourceapi::ConsumerReference Consumer(const std::string& name, const std::string& uid) {
  resourceapi::ConsumerReference ref;
  ref.name = name;
  ref.uid = uid;
  return ref;
}

inline PodResourceClaim PodClaim(const std::string& name, const std::string& claim_name,
                                 const std::string& template_name = "") {
  PodResourceClaim claim;
  claim.name = name;
  claim.resource_claim_name = claim_name;
  claim.resource_claim_template_name = template_name;
  return claim;
}

inline ContainerClaim UsesClaim(const std::string& name) {
  ContainerClaim claim;
  claim.name = name;
  return claim;
}

}  // namespace kdp::manager::dra

#endif  // KDP_TESTS_UNIT_MANAGER_DRA_CLAIM_TEST_OBJECTS_H_
