// AdminServer::GetTopology: the node as `kdpctl topology` draws it. The machine's NUMA nodes come
// from the topology manager's configuration (with the CPUs main read from hwloc); device-plugin
// devices from the device registry and their holders from the pod store; DRA devices from the
// node's ResourceSlices (NUMA node from a "numaNode" attribute) and their holders from the pods'
// prepared claims.
#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "manager/src/admin/admin_server.h"
#include "manager/src/devicemanager/allocator.h"
#include "manager/src/dra/health_info.h"

namespace kdp::manager {
namespace {

namespace admin = ::kdp::admin::v1;

// Devices listed per resource or driver, as GetStatus lists them (kStatusDevicesPerResource).
constexpr int64_t kTopologyDevicesPerResource = 1024;

// Device → "namespace/pod/container" of each holder, in pod and container order.
using Holders = std::map<std::string, std::vector<std::string>>;

// A DRA device's NUMA node from its attributes: an integer attribute whose name, without its
// domain ("gpu.example.com/numaNode" or "numaNode"), is numaNode or numa (any case); -1 when none.
int64_t NumaAttribute(const resourceapi::Device& device) {
  for (const auto& [name, value] : device.attributes) {
    const size_t slash = name.rfind('/');
    const std::string id =
        absl::AsciiStrToLower(slash == std::string::npos ? name : name.substr(slash + 1));
    if ((id == "numanode" || id == "numa") && value.int_value.has_value() &&
        *value.int_value >= 0) {
      return *value.int_value;
    }
  }
  return -1;
}

void AddHolders(const std::vector<std::string>& holders, admin::TopologyDevice* device) {
  for (const std::string& holder : holders) device->add_holders(holder);
}

}  // namespace

grpc::Status AdminServer::GetTopology(grpc::ServerContext*, const admin::GetTopologyRequest*,
                                      admin::NodeTopology* response) {
  const std::vector<AdmittedPod> pods = pods_->List();
  if (dra_.resources != nullptr) response->set_node_name(dra_.resources->node_name());
  for (int node : pods_->topology_config().numa.nodes) {
    auto* n = response->add_numa_nodes();
    n->set_id(node);
    if (auto cpus = dra_.numa_cpus.find(node); cpus != dra_.numa_cpus.end()) {
      for (int cpu : cpus->second) n->add_cpus(cpu);
    }
  }
  // Resource → its devices' holders.
  std::map<std::string, Holders> holders;
  for (const AdmittedPod& pod : pods) {
    for (const AdmittedContainer& container : pod.containers) {
      for (const auto& [resource, ids] : container.devices) {
        for (const std::string& id : ids) {
          holders[resource][id].push_back(
              absl::StrCat(pod.pod.namespace_, "/", pod.pod.name, "/", container.spec.name));
        }
      }
    }
  }
  const Holders none;
  for (const std::shared_ptr<const ResourceDevices>& shared : devices_->SharedResources()) {
    const ResourceDevices& resource = *shared;
    auto* r = response->add_resources();
    r->set_name(resource.name);
    r->set_kind("device-plugin");
    auto found = holders.find(resource.name);
    const Holders& held = found == holders.end() ? none : found->second;
    int64_t listed = 0;
    for (const auto& [id, info] : resource.devices) {
      if (listed == kTopologyDevicesPerResource) break;
      ++listed;
      auto* d = r->add_devices();
      d->set_id(id);
      d->set_health(info.healthy ? "Healthy" : "Unhealthy");
      for (int64_t node : info.numa_nodes) d->add_numa(node);
      if (auto it = held.find(id); it != held.end()) AddHolders(it->second, d);
    }
    r->set_devices_omitted(resource.capacity() - listed);
  }
  AddDraTopology(pods, response);
  return grpc::Status::OK;
}

void AdminServer::AddDraTopology(const std::vector<AdmittedPod>& pods,
                                 admin::NodeTopology* topology) const {
  if (dra_.resources == nullptr) return;
  // Driver → (pool, device) → holders, from the pods' prepared claims. Pool names may hold '/',
  // so the pair is kept apart until it is printed.
  using DeviceKey = std::pair<std::string, std::string>;
  struct KeyLess {
    bool operator()(const DeviceKey& a, const DeviceKey& b) const {
      if (a.first != b.first) return NaturalLess(a.first, b.first);
      return NaturalLess(a.second, b.second);
    }
  };
  std::map<std::string, std::map<DeviceKey, std::vector<std::string>, KeyLess>> holders;
  if (dra_.claims != nullptr) {
    for (const AdmittedPod& pod : pods) {
      if (pod.pod.resource_claims.empty()) continue;
      const std::string pod_name = absl::StrCat(pod.pod.namespace_, "/", pod.pod.name);
      for (const resourceclaim::PodClaimView& view : dra_.claims->Describe(pod.pod)) {
        std::vector<std::string> users;
        for (const AdmittedContainer& container : pod.containers) {
          const std::vector<ContainerClaim>& claims = container.spec.claims;
          if (std::any_of(claims.begin(), claims.end(), [&](const ContainerClaim& claim) {
                return claim.name == view.pod_claim_name;
              })) {
            users.push_back(absl::StrCat(pod_name, "/", container.spec.name));
          }
        }
        if (users.empty()) users.push_back(pod_name);
        for (const auto& [driver, device] : view.devices) {
          std::vector<std::string>& held =
              holders[driver][DeviceKey(device.pool_name, device.device_name)];
          for (const std::string& user : users) {
            if (std::find(held.begin(), held.end(), user) == held.end()) held.push_back(user);
          }
        }
      }
    }
  }
  // Driver → (pool, device) → NUMA node (-1: none), from the node's slices.
  std::map<std::string, std::map<DeviceKey, int64_t, KeyLess>> devices;
  if (absl::StatusOr<std::vector<resourceapi::ResourceSlice>> slices =
          dra_.resources->ListSlices(dra_.resources->node_name());
      slices.ok()) {
    for (const resourceapi::ResourceSlice& slice : *slices) {
      for (const resourceapi::Device& device : slice.spec.devices) {
        devices[slice.spec.driver][DeviceKey(slice.spec.pool.name, device.name)] =
            NumaAttribute(device);
      }
    }
  }
  // Prepared devices whose slice is gone (a driver that stopped) are still held.
  for (const auto& [driver, held] : holders) {
    for (const auto& [key, users] : held) devices[driver].emplace(key, -1);
  }
  for (const auto& [driver, keys] : devices) {
    auto* r = topology->add_resources();
    r->set_name(driver);
    r->set_kind("dra");
    const auto found = holders.find(driver);
    int64_t listed = 0;
    for (const auto& [key, numa] : keys) {
      if (listed == kTopologyDevicesPerResource) break;
      ++listed;
      auto* d = r->add_devices();
      d->set_id(absl::StrCat(key.first, "/", key.second));
      if (numa >= 0) d->add_numa(numa);
      d->set_health("Unknown");
      if (dra_.dra != nullptr) {
        d->set_health(dra::DeviceHealthStatusName(
            dra_.dra->GetDeviceHealth(driver, key.first, key.second).health));
      }
      if (found != holders.end()) {
        if (auto it = found->second.find(key); it != found->second.end()) {
          AddHolders(it->second, d);
        }
      }
    }
    r->set_devices_omitted(static_cast<int64_t>(keys.size()) - listed);
  }
}

}  // namespace kdp::manager
