// Pods and containers built directly for the device manager's tests (manager_test.cc,
// manager_stress_test.cc, topology_hints_test.cc), and the example resources they ask for
// (also manager_locking_test.cc).
#ifndef KDP_TESTS_UNIT_MANAGER_DEVICEMANAGER_POD_TEST_UTIL_H_
#define KDP_TESTS_UNIT_MANAGER_DEVICEMANAGER_POD_TEST_UTIL_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "manager/src/pod/pod.h"

namespace kdp::manager::devicemanager_testutil {

// Extended resources served by the tests' stub plugins.
inline constexpr char kGpu[] = "example.com/gpu";
inline constexpr char kNic[] = "example.com/nic";

// A container of `kind` asking `resources` (extended resource -> device count), with
// `other_limits` (cpu, memory, ...) as written in a manifest.
inline Container MakeContainer(std::string name, ContainerKind kind,
                               std::map<std::string, int64_t> resources,
                               std::map<std::string, std::string> other_limits = {}) {
  Container container;
  container.name = std::move(name);
  container.kind = kind;
  container.extended_resources = std::move(resources);
  container.other_limits = std::move(other_limits);
  return container;
}
inline Container App(std::string name, std::map<std::string, int64_t> resources,
                     std::map<std::string, std::string> other_limits = {}) {
  return MakeContainer(std::move(name), ContainerKind::kApp, std::move(resources),
                       std::move(other_limits));
}
inline Container Init(std::string name, std::map<std::string, int64_t> resources,
                      std::map<std::string, std::string> other_limits = {}) {
  return MakeContainer(std::move(name), ContainerKind::kInit, std::move(resources),
                       std::move(other_limits));
}
inline Container Sidecar(std::string name, std::map<std::string, int64_t> resources) {
  return MakeContainer(std::move(name), ContainerKind::kSidecar, std::move(resources));
}

// A pod named and identified by `uid`, with `init` init containers and `app` app containers.
inline Pod MakePod(std::string uid, std::vector<Container> init, std::vector<Container> app) {
  Pod pod;
  pod.name = uid;
  pod.uid = std::move(uid);
  pod.init_containers = std::move(init);
  pod.containers = std::move(app);
  return pod;
}

}  // namespace kdp::manager::devicemanager_testutil

#endif  // KDP_TESTS_UNIT_MANAGER_DEVICEMANAGER_POD_TEST_UTIL_H_
