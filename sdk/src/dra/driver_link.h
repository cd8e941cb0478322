// DraDriverLink is what a kdp::DraDriver holds of the SDK: the device health table, which lives
// as long as the driver (SetHealth() works before, during and after a runner), and the
// ResourceSlice publisher of the runner serving the driver, attached at Start() and detached at
// Stop() (Publish() hands new device lists to it), and the prepared claims the runner's
// checkpoint records (PreparedClaims()). Private to the SDK.
//
// Thread-safety: thread-safe.
#ifndef KDP_SDK_SRC_DRA_DRIVER_LINK_H_
#define KDP_SDK_SRC_DRA_DRIVER_LINK_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "kdp/dra_driver.h"
#include "sdk/src/dra/device_health.h"
#include "sdk/src/dra/slice_publisher.h"

namespace kdp::internal {

// How the driver's Discover() fared: the last outcome and the failures so far.
struct DevicesRecord {
  absl::Status last = absl::OkStatus();  // Discover()'s error, or the validation's
  int64_t failures = 0;
};

class DraDriverLink {
 public:
  explicit DraDriverLink(std::string driver)
      : health_(std::make_shared<DeviceHealthTable>(std::move(driver))) {}

  DraDriverLink(const DraDriverLink&) = delete;
  DraDriverLink& operator=(const DraDriverLink&) = delete;

  // The driver's device health; shared with the runner's health streams.
  const std::shared_ptr<DeviceHealthTable>& health() const { return health_; }

  void Attach(std::shared_ptr<SlicePublisher> publisher) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    publisher_ = std::move(publisher);
  }
  // The attached publisher, or nullptr; taken by value so that a runner stopping meanwhile only
  // detaches it (Publish() on a stopped publisher is ignored).
  std::shared_ptr<SlicePublisher> publisher() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return publisher_;
  }

  // Records the outcome of one Discover() call with its validation (at the runner's Start(), by
  // Publish()): the device source counts as failing from an error until the next success. A
  // valid list (`pools`, when `status` is OK) becomes DraDriver::Pools().
  void RecordPools(const absl::Status& status, std::vector<DraPool> pools)
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    devices_.last = status;
    if (!status.ok()) ++devices_.failures;
    if (status.ok()) pools_ = std::move(pools);
  }
  std::vector<DraPool> pools() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return pools_;
  }
  // The devices of the node's pool (named `node_name()`, or unnamed before a runner set it).
  std::vector<DraDevice> listed() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    for (const DraPool& pool : pools_) {
      if (pool.name.empty() || pool.name == node_name_) return pool.devices;
    }
    return {};
  }
  // The node a runner serves the driver on: the name of the default pool. Set before the
  // runner's first Publish().
  void SetNodeName(std::string node_name) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    node_name_ = std::move(node_name);
  }
  std::string node_name() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return node_name_;
  }
  DevicesRecord devices_record() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return devices_;
  }

  // The completed claims of the runner's checkpoint (DraDriver::PreparedClaims()), replaced each
  // time the runner has read or written it.
  using PreparedDevices = std::map<std::string, std::vector<PreparedDevice>>;
  void SetPreparedClaims(PreparedDevices claims) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    prepared_ = std::move(claims);
  }
  PreparedDevices prepared_claims() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return prepared_;
  }

 private:
  const std::shared_ptr<DeviceHealthTable> health_;
  mutable absl::Mutex mu_;
  std::shared_ptr<SlicePublisher> publisher_ ABSL_GUARDED_BY(mu_);
  DevicesRecord devices_ ABSL_GUARDED_BY(mu_);
  std::vector<DraPool> pools_ ABSL_GUARDED_BY(mu_);
  std::string node_name_ ABSL_GUARDED_BY(mu_);
  PreparedDevices prepared_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kdp::internal

#endif  // KDP_SDK_SRC_DRA_DRIVER_LINK_H_
