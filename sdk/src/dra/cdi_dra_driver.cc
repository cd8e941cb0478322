#include "kdp/cdi_dra_driver.h"

#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/absl_view.h"

namespace kdp {

CdiDraDriver::CdiDraDriver(std::string driver_name, std::string cdi_kind, std::string cdi_root)
    : DraDriver(std::move(driver_name)),
      cdi_kind_(std::move(cdi_kind)),
      cdi_root_(std::move(cdi_root)) {}

cdi::ContainerEdits CdiDraDriver::ClaimEdits(const Claim& claim) {
  return {.env = {absl::StrCat("DRA_RESOURCE_CLAIM_UID=", claim.ref.uid),
                  absl::StrCat("DRA_RESOURCE_DRIVER_NAME=", driver_name())}};
}

void CdiDraDriver::AddShareEnv(const AllocatedDevice& device, std::string_view prefix,
                               cdi::ContainerEdits* edits) {
  if (device.share_id.empty()) return;
  edits->env.push_back(absl::StrCat(Sv(prefix), "_SHARE_ID=", device.share_id));
  for (const auto& [name, quantity] : device.consumed_capacity) {
    std::string var = name;
    for (char& c : var) {
      const auto u = static_cast<unsigned char>(c);
      c = absl::ascii_isalnum(u) ? absl::ascii_toupper(u) : '_';
    }
    edits->env.push_back(absl::StrCat(Sv(prefix), "_", var, "=", quantity));
  }
}

std::string CdiDraDriver::SpecName(const std::string& claim_uid) const {
  const size_t slash = cdi_kind_.find('/');
  return cdi::TransientSpecName(cdi_kind_.substr(0, slash),
                                slash == std::string::npos ? "" : cdi_kind_.substr(slash + 1),
                                claim_uid);
}

std::map<std::string, std::string> CdiDraDriver::InUse() const {
  std::map<std::string, std::string> in_use;
  for (const auto& [uid, devices] : PreparedClaims()) {
    for (const PreparedDevice& device : devices) in_use[device.device] = uid;
  }
  absl::MutexLock lock(&mu_);
  for (const auto& [uid, devices] : prepared_) {
    for (const std::string& device : devices) in_use[device] = uid;
  }
  return in_use;
}

PrepareResult CdiDraDriver::PrepareClaim(const Claim& claim, const std::set<std::string>& devices,
                                         std::map<std::string, std::string>& in_use) {
  const std::string& uid = claim.ref.uid;
  cdi::Spec spec{.kind = cdi_kind_, .container_edits = ClaimEdits(claim)};
  std::vector<PreparedDevice> prepared;
  for (size_t i = 0; i < claim.results.size(); ++i) {
    const AllocatedDevice& result = claim.results[i];
    if (!devices.contains(result.device)) {
      return {.status = absl::NotFoundError(absl::StrCat("device ", result.device, " is not a ",
                                                         driver_name(), " device of this node")),
              .devices = {}};
    }
    absl::StatusOr<cdi::ContainerEdits> edits = DeviceEdits(claim, result, i);
    if (!edits.ok()) return {.status = edits.status(), .devices = {}};
    // The last line of defence against a double allocation: the scheduler should never do it.
    // A share of a device with allowMultipleAllocations (a share ID) is not exclusive.
    auto holder = in_use.find(result.device);
    if (holder != in_use.end() && holder->second != uid && !result.admin_access &&
        result.share_id.empty()) {
      return {.status = absl::FailedPreconditionError(absl::StrCat(
                  result.device, " is already prepared for ResourceClaim ", holder->second)),
              .devices = {}};
    }
    spec.devices.push_back({.name = result.share_id.empty() ? absl::StrCat(uid, "-", result.device)
                                                            : absl::StrCat(uid, "-", result.device,
                                                                           "-", result.share_id),
                            .container_edits = *std::move(edits)});
    prepared.push_back({.requests = {result.request},
                        .pool = result.pool,
                        .device = result.device,
                        .cdi_device_ids = {cdi::QualifiedName(cdi_kind_, spec.devices.back().name)},
                        .share_id = result.share_id});
  }
  if (spec.devices.empty()) return {.status = absl::OkStatus(), .devices = {}};
  spec.cdi_version = cdi::MinimumRequiredVersion(spec);
  if (absl::Status written = cdi::WriteSpec(cdi_root_, SpecName(uid), spec); !written.ok()) {
    return {.status = written, .devices = {}};
  }
  std::vector<std::string>& mine = prepared_[uid];
  mine.clear();
  for (const AllocatedDevice& result : claim.results) {
    if (!result.share_id.empty()) continue;  // shared: not exclusive to this claim
    in_use[result.device] = uid;
    mine.push_back(result.device);
  }
  return {.status = absl::OkStatus(), .devices = std::move(prepared)};
}

std::map<std::string, PrepareResult> CdiDraDriver::Prepare(const std::vector<Claim>& claims) {
  std::map<std::string, std::string> in_use = InUse();
  absl::StatusOr<std::vector<DraPool>> devices = DiscoverPools();
  std::set<std::string> names;
  if (devices.ok()) {
    for (const DraPool& pool : *devices) {
      for (const DraDevice& device : pool.devices) names.insert(device.name);
    }
  }
  absl::MutexLock lock(&mu_);
  std::map<std::string, PrepareResult> results;
  for (const Claim& claim : claims) {
    results[claim.ref.uid] = devices.ok()
                                 ? PrepareClaim(claim, names, in_use)
                                 : PrepareResult{.status = devices.status(), .devices = {}};
  }
  return results;
}

std::map<std::string, absl::Status> CdiDraDriver::Unprepare(const std::vector<ClaimRef>& claims) {
  absl::MutexLock lock(&mu_);
  std::map<std::string, absl::Status> results;
  for (const ClaimRef& claim : claims) {
    absl::Status removed = cdi::RemoveSpec(cdi_root_, SpecName(claim.uid));
    if (removed.ok()) prepared_.erase(claim.uid);
    results[claim.uid] = removed;
  }
  return results;
}

}  // namespace kdp
