#include "manager/src/pod/pod.h"

#include <algorithm>

namespace kdp::manager {

std::vector<const Container*> ContainersInAdmissionOrder(const Pod& pod) {
  std::vector<const Container*> order;
  for (const Container& c : pod.init_containers) order.push_back(&c);
  for (const Container& c : pod.containers) order.push_back(&c);
  return order;
}

int64_t PodDeviceRequest(const Pod& pod, const std::string& resource) {
  auto count = [&](const Container& c) -> int64_t {
    auto it = c.extended_resources.find(resource);
    return it == c.extended_resources.end() ? 0 : it->second;
  };
  int64_t sidecars = 0, init_peak = 0;
  for (const Container& c : pod.init_containers) {
    if (c.kind == ContainerKind::kSidecar) {
      sidecars += count(c);
    } else {
      init_peak = std::max(init_peak, sidecars + count(c));
    }
  }
  int64_t apps = sidecars;
  for (const Container& c : pod.containers) apps += count(c);
  return std::max(init_peak, apps);
}

}  // namespace kdp::manager
