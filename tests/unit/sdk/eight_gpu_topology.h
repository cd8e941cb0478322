// EightGpuTopology: the GPU example's bundled dual-socket machine (tests/testing/topology_files.h's
// EightGpuFile()) loaded, for the tests that score or discover devices on it.
#ifndef KDP_TESTS_UNIT_SDK_EIGHT_GPU_TOPOLOGY_H_
#define KDP_TESTS_UNIT_SDK_EIGHT_GPU_TOPOLOGY_H_

#include <memory>

#include "kdp/topology.h"
#include "tests/testing/topology_files.h"

namespace kdp::testing {

// A load error fails the calling test (non-fatally) and gives nullptr.
inline std::unique_ptr<Topology> EightGpuTopology() { return LoadTopology(EightGpuFile()); }

}  // namespace kdp::testing

#endif  // KDP_TESTS_UNIT_SDK_EIGHT_GPU_TOPOLOGY_H_
