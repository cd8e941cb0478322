#include <utility>

#include "absl/strings/str_cat.h"
#include "kdp/dra_driver.h"
#include "sdk/src/dra/driver_link.h"
#include "sdk/src/dra/pool_validation.h"
#include "sdk/src/dra/resource_slice.h"

namespace kdp {

DraDriver::DraDriver(std::string driver_name)
    : driver_name_(std::move(driver_name)),
      link_(std::make_shared<internal::DraDriverLink>(driver_name_)) {}

DraDriver::~DraDriver() = default;

absl::StatusOr<std::vector<DraDevice>> DraDriver::Discover() {
  return absl::UnimplementedError(
      absl::StrCat(driver_name_, ": a DraDriver overrides Discover() or DiscoverPools()"));
}

absl::StatusOr<std::vector<DraPool>> DraDriver::DiscoverPools() {
  absl::StatusOr<std::vector<DraDevice>> devices = Discover();
  if (!devices.ok()) return devices.status();
  return std::vector<DraPool>{DraPool{.name = {}, .devices = *std::move(devices)}};
}

absl::Status DraDriver::Publish() {
  absl::StatusOr<std::vector<DraPool>> pools = DiscoverPools();
  absl::Status listed = pools.ok()
                            ? internal::ValidateDraPools(*pools, internal::PoolScope::kNodeLocal)
                            : pools.status();
  if (listed.ok()) {
    // The node's pool is the unnamed one; once a runner names the node, by its name.
    const std::string node = link_->node_name();
    for (DraPool& pool : *pools) {
      if (pool.name.empty()) pool.name = node;
    }
    if (!node.empty()) listed = internal::ValidateDraPools(*pools, internal::PoolScope::kNodeLocal);
  }
  link_->RecordPools(listed, listed.ok() ? *pools : std::vector<DraPool>{});
  if (!listed.ok()) return listed;
  // Health first: a device added now reports Healthy before its slice can be allocated, and a
  // removed one leaves the health report with its slice.
  link_->health()->SetDevices(link_->listed());
  // Taken by value: a runner stopping meanwhile detaches, and Publish() on a stopped publisher
  // is ignored.
  if (std::shared_ptr<internal::SlicePublisher> publisher = link_->publisher()) {
    publisher->Publish(*std::move(pools));
  }
  return absl::OkStatus();
}

std::vector<DraDevice> DraDriver::Devices() const { return link_->listed(); }

std::vector<DraPool> DraDriver::Pools() const { return link_->pools(); }

absl::Status DraDriver::SetHealth(absl::Span<const std::string> devices, Health health,
                                  std::string_view message) {
  return link_->health()->Set(devices, health, message);
}

absl::Status DraDriver::SetHealth(const std::string& device, Health health,
                                  std::string_view message) {
  return link_->health()->Set(absl::MakeConstSpan(&device, 1), health, message);
}

absl::Status DraDriver::SetUnhealthyDevices(const std::set<std::string>& unhealthy,
                                            std::string_view message) {
  return link_->health()->SetUnhealthy(unhealthy, message);
}

absl::Status DraDriver::PublishDevices() { return Publish(); }

absl::Status DraDriver::SetDeviceHealth(std::string_view device, Health health,
                                        std::string_view message) {
  return SetHealth(std::string(device), health, message);
}

std::map<std::string, std::vector<PreparedDevice>> DraDriver::PreparedClaims() const {
  return link_->prepared_claims();
}

}  // namespace kdp
