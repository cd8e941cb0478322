// The resource and the device description shared by the device manager's allocation tests
// (allocator_test.cc, free_devices_test.cc): one resource name and a device given by its ID,
// health and NUMA nodes, from which each test builds its ResourceDevices.
#ifndef KDP_TESTS_UNIT_MANAGER_DEVICEMANAGER_RESOURCE_DEVICES_TEST_UTIL_H_
#define KDP_TESTS_UNIT_MANAGER_DEVICEMANAGER_RESOURCE_DEVICES_TEST_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

namespace kdp::manager::devicemanager_testutil {

// The extended resource the allocation tests' devices belong to.
inline constexpr char kResource[] = "domain1.com/resource1";

// One device of kResource: its ID, whether it is healthy and the NUMA nodes it sits on.
struct Dev {
  std::string id;
  bool healthy = true;
  std::vector<int64_t> numa = {};
};

}  // namespace kdp::manager::devicemanager_testutil

#endif  // KDP_TESTS_UNIT_MANAGER_DEVICEMANAGER_RESOURCE_DEVICES_TEST_UTIL_H_
