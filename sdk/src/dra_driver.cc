#include "kdp/dra_driver.h"

#include <utility>

#include "sdk/src/dra_resource_slice.h"
#include "sdk/src/dra_slice_publisher.h"

namespace kdp {

DraDriver::DraDriver(std::string driver_name)
    : driver_name_(std::move(driver_name)), link_(std::make_shared<internal::DraDriverLink>()) {}

DraDriver::~DraDriver() = default;

absl::Status DraDriver::PublishDevices() {
  absl::StatusOr<std::vector<DraDevice>> devices = Devices();
  if (!devices.ok()) return devices.status();
  if (absl::Status valid = internal::ValidateDraDevices(*devices); !valid.ok()) return valid;
  // Taken by value: a runner stopping meanwhile detaches, and Publish() on a stopped publisher
  // is ignored.
  if (std::shared_ptr<internal::ResourceSlicePublisher> publisher = link_->publisher()) {
    publisher->Publish(*std::move(devices));
  }
  return absl::OkStatus();
}

}  // namespace kdp
