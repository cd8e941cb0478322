#include "kdp/dra_driver.h"

#include <utility>

#include "sdk/src/dra_driver_link.h"
#include "sdk/src/dra_resource_slice.h"

namespace kdp {

DraDriver::DraDriver(std::string driver_name)
    : driver_name_(std::move(driver_name)),
      link_(std::make_shared<internal::DraDriverLink>(driver_name_)) {}

DraDriver::~DraDriver() = default;

absl::Status DraDriver::PublishDevices() {
  absl::StatusOr<std::vector<DraDevice>> devices = Devices();
  absl::Status listed = devices.ok() ? internal::ValidateDraDevices(*devices) : devices.status();
  link_->RecordDevices(listed);
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

absl::Status DraDriver::SetDeviceHealth(std::string_view device, DeviceHealthStatus health,
                                        std::string message) {
  return link_->health()->Set(device, health, std::move(message));
}

absl::Status DraDriver::SetUnhealthyDevices(const std::set<std::string>& unhealthy,
                                            const std::string& message) {
  return internal::SetUnhealthyDevices(*link_->health(), unhealthy, message);
}

std::map<std::string, std::vector<PreparedDevice>> DraDriver::PreparedClaims() const {
  return link_->prepared_claims();
}

}  // namespace kdp
