// A DRA driver for the admin server's tests (apply_test, get_topology_test): it prepares every
// device allocated to it (CDI ID "<driver>/gpu=<device>", read from the claim in the store) and
// unprepares anything; FakeDrivers knows only that one driver, "gpu.example.com".
#ifndef KDP_TESTS_UNIT_MANAGER_ADMIN_FAKE_DRA_DRIVER_H_
#define KDP_TESTS_UNIT_MANAGER_ADMIN_FAKE_DRA_DRIVER_H_

#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "manager/src/controlplane/resourceapi/store.h"
#include "manager/src/dra/plugin/plugin.h"
#include "nlohmann/json.hpp"

namespace kdp::manager {

inline constexpr char kFakeDriverName[] = "gpu.example.com";
// The node whose slices and pods the admin tests use.
inline constexpr char kFakeDriverNode[] = "node-a";

// The fake driver's ResourceSlice "node-a-gpus": one pool on kFakeDriverNode with `devices`.
inline nlohmann::json FakeDriverSlice(nlohmann::json devices) {
  return {{"metadata", {{"name", "node-a-gpus"}}},
          {"spec",
           {{"driver", kFakeDriverName},
            {"nodeName", kFakeDriverNode},
            {"pool", {{"name", kFakeDriverNode}, {"generation", 1}, {"resourceSliceCount", 1}}},
            {"devices", std::move(devices)}}}};
}

class FakeDriver final : public dra::DraPlugin {
 public:
  explicit FakeDriver(resourceapi::ObjectStore* store) : store_(store) {}
  const std::string& driver_name() const override { return name_; }
  absl::StatusOr<dra::drapb::NodePrepareResourcesResponse> NodePrepareResources(
      const dra::drapb::NodePrepareResourcesRequest& request) override {
    dra::drapb::NodePrepareResourcesResponse response;
    for (const dra::drapb::Claim& claim : request.claims()) {
      auto& result = (*response.mutable_claims())[claim.uid()];
      absl::StatusOr<resourceapi::ResourceClaim> stored =
          store_->GetClaim(claim.namespace_(), claim.name());
      if (!stored.ok() || !stored->status.allocation.has_value()) {
        result.set_error("not allocated");
        continue;
      }
      for (const auto& r : stored->status.allocation->results) {
        dra::drapb::Device* device = result.add_devices();
        device->set_pool_name(r.pool);
        device->set_device_name(r.device);
        device->add_request_names(r.request);
        device->add_cdi_device_ids(absl::StrCat(name_, "/gpu=", r.device));
      }
    }
    return response;
  }
  absl::StatusOr<dra::drapb::NodeUnprepareResourcesResponse> NodeUnprepareResources(
      const dra::drapb::NodeUnprepareResourcesRequest& request) override {
    dra::drapb::NodeUnprepareResourcesResponse response;
    for (const dra::drapb::Claim& claim : request.claims()) {
      (*response.mutable_claims())[claim.uid()];
    }
    return response;
  }

 private:
  const std::string name_ = kFakeDriverName;
  resourceapi::ObjectStore* const store_;
};

class FakeDrivers final : public dra::DraPlugins {
 public:
  explicit FakeDrivers(resourceapi::ObjectStore* store)
      : driver_(std::make_shared<FakeDriver>(store)) {}
  absl::StatusOr<std::shared_ptr<dra::DraPlugin>> Get(const std::string& driver) override {
    if (driver != kFakeDriverName) {
      return absl::FailedPreconditionError(
          absl::StrCat("DRA driver ", driver, " is not registered"));
    }
    return std::shared_ptr<dra::DraPlugin>(driver_);
  }

 private:
  const std::shared_ptr<FakeDriver> driver_;
};

}  // namespace kdp::manager

#endif  // KDP_TESTS_UNIT_MANAGER_ADMIN_FAKE_DRA_DRIVER_H_
