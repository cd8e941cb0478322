// Builders shared by the claim allocator's tests: devices, slices, classes, requests and claims
// in the shape of the upstream allocator tests' helpers (structured/internal/allocatortesting).
#ifndef KDP_TESTS_UNIT_MANAGER_SCHEDULING_ALLOCATOR_TEST_UTIL_H_
#define KDP_TESTS_UNIT_MANAGER_SCHEDULING_ALLOCATOR_TEST_UTIL_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "manager/src/controlplane/resourceapi/types.h"
#include "manager/src/controlplane/scheduling/claim_allocator.h"

namespace kdp::manager::scheduling {
namespace testutil {

using resourceapi::AllocationResult;
using resourceapi::DeviceAttribute;
using resourceapi::DeviceRequest;
using resourceapi::ResourceClaim;

constexpr char kNode[] = "node-a";
constexpr char kGpu[] = "gpu.example.com";
constexpr char kNic[] = "nic.example.com";
constexpr char kNuma[] = "numa.kdp.dev/node";

inline DeviceAttribute Int(int64_t v) {
  DeviceAttribute a;
  a.int_value = v;
  return a;
}
inline DeviceAttribute Str(std::string v) {
  DeviceAttribute a;
  a.string_value = std::move(v);
  return a;
}

inline resourceapi::Device Dev(std::string name,
                               std::map<std::string, DeviceAttribute> attributes = {},
                               std::string memory = "80Gi") {
  resourceapi::Device d;
  d.name = std::move(name);
  d.attributes = std::move(attributes);
  d.capacity = {{"memory", {std::move(memory)}}};
  return d;
}

// `n` GPUs gpu-<first>..: index attribute and NUMA node index / per_numa.
inline std::vector<resourceapi::Device> Gpus(int n, int first = 0, int per_numa = 1000) {
  std::vector<resourceapi::Device> out;
  for (int i = first; i < first + n; ++i) {
    out.push_back(Dev("gpu-" + std::to_string(i), {{"index", Int(i)}, {kNuma, Int(i / per_numa)}}));
  }
  return out;
}

inline resourceapi::ResourceSlice Slice(std::string name, std::string driver, std::string pool,
                                        std::vector<resourceapi::Device> devices,
                                        int64_t generation = 1, int64_t slice_count = 1,
                                        std::string node = kNode) {
  resourceapi::ResourceSlice s;
  s.metadata.name = std::move(name);
  s.spec.driver = std::move(driver);
  s.spec.pool = {
      .name = std::move(pool), .generation = generation, .resource_slice_count = slice_count};
  s.spec.node_name = std::move(node);
  s.spec.devices = std::move(devices);
  return s;
}

inline resourceapi::DeviceClass Class(std::string name, std::vector<std::string> selectors = {},
                                      std::vector<std::string> config_kinds = {}) {
  resourceapi::DeviceClass c;
  c.metadata.name = std::move(name);
  for (std::string& s : selectors) c.spec.selectors.push_back({std::move(s)});
  for (const std::string& kind : config_kinds) {
    c.spec.config.push_back({kGpu, {{"kind", kind}}});
  }
  return c;
}

inline resourceapi::ExactDeviceRequest Exactly(std::string device_class, int64_t count = 1,
                                               std::vector<std::string> selectors = {}) {
  resourceapi::ExactDeviceRequest r;
  r.device_class_name = std::move(device_class);
  r.count = count;
  for (std::string& s : selectors) r.selectors.push_back({std::move(s)});
  return r;
}

inline DeviceRequest Request(std::string name, resourceapi::ExactDeviceRequest exactly) {
  DeviceRequest r;
  r.name = std::move(name);
  r.exactly = std::move(exactly);
  return r;
}

inline DeviceRequest FirstAvailable(
    std::string name, std::vector<std::pair<std::string, resourceapi::ExactDeviceRequest>> subs) {
  DeviceRequest r;
  r.name = std::move(name);
  for (auto& [sub, exactly] : subs) {
    resourceapi::DeviceSubRequest s;
    s.name = sub;
    s.request = std::move(exactly);
    r.first_available.push_back(std::move(s));
  }
  return r;
}

inline resourceapi::DeviceConstraint MatchAttribute(std::string attribute,
                                                    std::vector<std::string> requests = {}) {
  resourceapi::DeviceConstraint c;
  c.requests = std::move(requests);
  c.match_attribute = std::move(attribute);
  return c;
}

inline resourceapi::DeviceClaimConfiguration ClaimConfig(std::vector<std::string> requests,
                                                         std::string kind) {
  resourceapi::DeviceClaimConfiguration c;
  c.requests = std::move(requests);
  c.opaque = {kGpu, {{"kind", std::move(kind)}}};
  return c;
}

inline DeviceRequest AllOf(std::string name, std::string device_class,
                           std::vector<std::string> selectors = {}) {
  resourceapi::ExactDeviceRequest r = Exactly(std::move(device_class), 0, std::move(selectors));
  r.allocation_mode = resourceapi::kAllocationModeAll;
  return Request(std::move(name), std::move(r));
}

inline ResourceClaim Claim(std::vector<DeviceRequest> requests) {
  ResourceClaim c;
  c.metadata.namespace_ = "default";
  c.metadata.name = "gpu-claim";
  c.spec.devices.requests = std::move(requests);
  return c;
}

inline AllocatorInputs Inputs(std::vector<resourceapi::ResourceSlice> slices) {
  AllocatorInputs in;
  in.node_name = kNode;
  in.slices = std::move(slices);
  in.classes[kGpu] = Class(kGpu, {"device.driver == \"gpu.example.com\""});
  in.classes[kNic] = Class(kNic, {"device.driver == \"nic.example.com\""});
  return in;
}

// "request:device" per result, for compact assertions.
inline std::vector<std::string> Picked(const AllocationResult& r) {
  std::vector<std::string> out;
  for (const auto& d : r.results) out.push_back(d.request + ":" + d.device);
  return out;
}

inline absl::StatusOr<AllocationResult> AllocateClaim(const ResourceClaim& claim,
                                                      const AllocatorInputs& in) {
  return Allocate(claim, in);
}

}  // namespace testutil
}  // namespace kdp::manager::scheduling

#endif  // KDP_TESTS_UNIT_MANAGER_SCHEDULING_ALLOCATOR_TEST_UTIL_H_
