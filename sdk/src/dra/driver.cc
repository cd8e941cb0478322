#include <utility>

#include "kdp/dra_driver.h"
#include "sdk/src/dra/driver_link.h"
#include "sdk/src/dra/resource_slice.h"

namespace kdp {

DraDriver::DraDriver(std::string driver_name)
    : driver_name_(std::move(driver_name)),
      link_(std::make_shared<internal::DraDriverLink>(driver_name_)) {}

DraDriver::~DraDriver() = default;

absl::Status DraDriver::Publish() {
  absl::StatusOr<std::vector<DraDevice>> devices = Discover();
  absl::Status listed = devices.ok() ? internal::ValidateDraDevices(*devices) : devices.status();
  link_->RecordDevices(listed, listed.ok() ? *devices : std::vector<DraDevice>{});
  if (!listed.ok()) return listed;
  // Health first: a device added now reports Healthy before its slice can be allocated, and a
  // removed one leaves the health report with its slice.
  link_->health()->SetDevices(*devices);
  // Taken by value: a runner stopping meanwhile detaches, and Publish() on a stopped publisher
  // is ignored.
  if (std::shared_ptr<internal::ResourceSlicePublisher> publisher = link_->publisher()) {
    publisher->Publish(*std::move(devices));
  }
  return absl::OkStatus();
}

std::vector<DraDevice> DraDriver::Devices() const { return link_->listed(); }

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
