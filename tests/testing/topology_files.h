// The hwloc XML fixtures of the repository and loading them in tests: the project's topologies
// under tests/data/topologies/ and the GPU example's bundled dual-socket machine.
#ifndef KDP_TESTS_TESTING_TOPOLOGY_FILES_H_
#define KDP_TESTS_TESTING_TOPOLOGY_FILES_H_

#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "kdp/topology.h"

namespace kdp::testing {

// tests/data/topologies/<name>.
inline std::string TopologyFile(const std::string& name) {
  return std::string(KDP_SOURCE_DIR) + "/tests/data/topologies/" + name;
}

// The GPU example's fixture: 2 NUMA nodes, 8 GPUs (4 per node), a NIC per node.
inline std::string EightGpuFile() {
  return std::string(KDP_SOURCE_DIR) + "/examples/gpu-plugin/topologies/dual-socket-8gpu.xml";
}

// Loads `path`; a load error fails the calling test (non-fatally) and gives nullptr.
inline std::unique_ptr<Topology> LoadTopology(const std::string& path) {
  absl::StatusOr<std::unique_ptr<Topology>> topology = Topology::FromXmlFile(path);
  EXPECT_TRUE(topology.ok()) << topology.status();
  return topology.ok() ? std::move(topology).value() : nullptr;
}

// The GPU example's fixture loaded (LoadTopology(EightGpuFile())).
inline std::unique_ptr<Topology> EightGpuTopology() { return LoadTopology(EightGpuFile()); }

}  // namespace kdp::testing

#endif  // KDP_TESTS_TESTING_TOPOLOGY_FILES_H_
