// The DRA driver scenarios of kdp-conformance, in the order they run: the kubelet's behaviour
// towards a DRA driver (pkg/kubelet/cm/dra, the plugin manager, the API server and scheduler
// around them) that a driver must cope with, each judged against the embedded kdp-manager.
// docs/conformance.md describes each one.
#ifndef KDP_MANAGER_SRC_CONFORMANCE_DRA_DRIVER_SCENARIOS_H_
#define KDP_MANAGER_SRC_CONFORMANCE_DRA_DRIVER_SCENARIOS_H_

#include <vector>

#include "manager/src/conformance/scenario.h"

namespace kdp::manager::conformance {

const std::vector<Scenario>& DraDriverScenarios();

}  // namespace kdp::manager::conformance

#endif  // KDP_MANAGER_SRC_CONFORMANCE_DRA_DRIVER_SCENARIOS_H_
