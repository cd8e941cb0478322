// ValidateOne: ValidateDraDevices() (sdk/src/dra/resource_slice.h) of a single device, for the
// tests of the DRA device model's validation rules.
#ifndef KDP_TESTS_UNIT_SDK_VALIDATE_ONE_H_
#define KDP_TESTS_UNIT_SDK_VALIDATE_ONE_H_

#include "absl/status/status.h"
#include "kdp/dra_device.h"
#include "sdk/src/dra/resource_slice.h"

namespace kdp::testing {

inline absl::Status ValidateOne(const DraDevice& device) {
  return internal::ValidateDraDevices({device});
}

}  // namespace kdp::testing

#endif  // KDP_TESTS_UNIT_SDK_VALIDATE_ONE_H_
