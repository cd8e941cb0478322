// kdp::CdiDraDriver is a DraDriver (kdp/dra_driver.h) that prepares claims the way most DRA
// drivers do: one transient CDI spec per claim, "<cdi_root>/<vendor>-<class>_<claim UID>.json",
// holding one CDI device "<claim UID>-<device>" per allocated device ("<claim UID>-<device>-<share
// ID>" for a share of a device with allow_multiple_allocations), whose qualified name goes back
// to the kubelet. The vendor implements Discover() and DeviceEdits() (what one device puts in
// a container); the SDK writes and removes the specs and refuses a device that another claim
// holds, as the SDK's checkpoint records it (DraDriver::PreparedClaims()): a restarted driver
// keeps the in-use check without state of its own.
//
// Thread-safety: as DraDriver: Prepare() and Unprepare() are serialized by the runner;
// DeviceEdits() and ClaimEdits() run inside Prepare().
#ifndef KDP_CDI_DRA_DRIVER_H_
#define KDP_CDI_DRA_DRIVER_H_

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "kdp/cdi.h"
#include "kdp/dra_driver.h"

namespace kdp {

class CdiDraDriver : public DraDriver {
 public:
  // `cdi_kind` is "<vendor>/<class>" ("gpu.example.com/gpu"); the specs live in `cdi_root` (the
  // runtimes' dynamic spec directory, DraRunnerOptions::cdi_root).
  CdiDraDriver(std::string driver_name, std::string cdi_kind, std::string cdi_root);

  // The container edits of one device allocated to `claim`, a device of the driver's Discover();
  // `index` is its place among claim.results. An error fails the claim as it is (e.g.
  // INVALID_ARGUMENT for a config the driver does not accept).
  [[nodiscard]] virtual absl::StatusOr<cdi::ContainerEdits> DeviceEdits(
      const Claim& claim, const AllocatedDevice& device, size_t index) = 0;

  // The spec-wide edits of `claim`'s spec. Default: DRA_RESOURCE_CLAIM_UID=<uid> and
  // DRA_RESOURCE_DRIVER_NAME=<driver>.
  [[nodiscard]] virtual cdi::ContainerEdits ClaimEdits(const Claim& claim);

  // Per claim: NOT_FOUND "device <d> is not a <driver> device of this node" for a device that
  // DiscoverPools() (called once per Prepare; its error fails every claim) does not list;
  // FAILED_PRECONDITION "<device> is already prepared for ResourceClaim <uid>" for a
  // device (without admin access or a share ID) that another claim holds, in PreparedClaims() or
  // earlier in this call; DeviceEdits()' error; the spec's write error. The spec is written on
  // every Prepare, a repeated one too: a reboot empties /var/run/cdi while the checkpoint still
  // lists the claim (kubernetes#141433). A claim without results gets no spec and no devices.
  std::map<std::string, PrepareResult> Prepare(const std::vector<Claim>& claims) override
      ABSL_LOCKS_EXCLUDED(mu_);

  // Removes each claim's spec (missing is OK); the removal's error fails that claim.
  std::map<std::string, absl::Status> Unprepare(const std::vector<ClaimRef>& claims) override
      ABSL_LOCKS_EXCLUDED(mu_);

  // Device name -> UID of the claim holding it: PreparedClaims() with what this object prepared
  // itself (so a driver used without a runner, in a test, checks too).
  [[nodiscard]] std::map<std::string, std::string> InUse() const ABSL_LOCKS_EXCLUDED(mu_);

  // Adds to `edits` the env of a share of a device (a result with a share ID, from a device with
  // allow_multiple_allocations): "<prefix>_SHARE_ID=<id>" and "<prefix>_<CAPACITY>=<quantity>" for
  // each consumed capacity (name upper-cased, other characters '_'), e.g.
  // "GPU_DEVICE_0_MEMORY=4Gi". Nothing for a result without a share ID.
  static void AddShareEnv(const AllocatedDevice& device, std::string_view prefix,
                          cdi::ContainerEdits* edits);

  const std::string& cdi_root() const { return cdi_root_; }
  // The spec name (without ".json") of `claim_uid`'s spec in cdi_root().
  [[nodiscard]] std::string SpecName(const std::string& claim_uid) const;

 private:
  PrepareResult PrepareClaim(const Claim& claim, const std::set<std::string>& devices,
                             std::map<std::string, std::string>& in_use)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string cdi_kind_;
  const std::string cdi_root_;
  mutable absl::Mutex mu_;
  // Claim UID -> its devices, as this object prepared them (until unprepared).
  std::map<std::string, std::vector<std::string>> prepared_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kdp

#endif  // KDP_CDI_DRA_DRIVER_H_
