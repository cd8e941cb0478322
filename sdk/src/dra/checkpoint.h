// The DRA driver's own checkpoint: which claims this driver prepared and what it returned, so that
// NodeUnprepareResources (which carries only namespace, name and UID) knows whether to call the
// vendor, and survives driver restarts. The kubelet's dra_manager_state is no help here: it belongs
// to the kubelet.
//
// File format (kdp's own, modelled on the kubelet's "format B": a CRC-32 over the exact data
// string, so the checksum never depends on how a JSON library orders or spaces fields):
//   {"checksum": <crc32 (zlib) of the bytes of "data">, "data": "<JSON text>"}
// where the data text is
//   {"apiVersion": "kdp.dev/v1", "kind": "DraDriverCheckpoint", "driver": "<name>",
//    "preparedClaims": [{"uid", "namespace", "name", "state": "PrepareStarted"|"PrepareCompleted",
//                        "devices": [{"requests", "pool", "device", "cdiDeviceIDs", "shareID"}]}]}
// sorted by UID. "PrepareStarted" is written before the vendor's Prepare runs (NVIDIA's driver
// keeps the same two states), "PrepareCompleted" with the devices after it succeeded. Written
// atomically and durably (common/durable_file.h).
//
// Thread-safety: thread-compatible; the runner reads and writes it under its serialization lock.
#ifndef KDP_SDK_SRC_DRA_CHECKPOINT_H_
#define KDP_SDK_SRC_DRA_CHECKPOINT_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kdp/dra_driver.h"

namespace kdp::internal {

struct PreparedClaimRecord {
  ClaimRef ref = {};
  // False: Prepare was called but has not (yet) succeeded; Unprepare must still reach the vendor.
  bool completed = false;
  std::vector<PreparedDevice> devices = {};

  friend bool operator==(const PreparedClaimRecord&, const PreparedClaimRecord&) = default;
};

// Prepared claims by UID.
using PreparedClaims = std::map<std::string, PreparedClaimRecord>;

// The file's bytes for `claims` of `driver`.
std::string EncodeDraCheckpoint(const std::string& driver, const PreparedClaims& claims);

// Parses file bytes. DATA_LOSS (naming `what`, normally the path) when the JSON is malformed, the
// checksum does not match or a field has the wrong type; FAILED_PRECONDITION when the file belongs
// to another driver or has an unknown apiVersion.
absl::StatusOr<PreparedClaims> DecodeDraCheckpoint(const std::string& bytes,
                                                   const std::string& driver,
                                                   const std::string& what);

class DraCheckpoint {
 public:
  DraCheckpoint(std::string path, std::string driver)
      : path_(std::move(path)), driver_(std::move(driver)) {}

  const std::string& path() const { return path_; }

  // The recorded claims; empty when the file does not exist. Errors as DecodeDraCheckpoint, or
  // the read error naming the path.
  absl::StatusOr<PreparedClaims> Load() const;

  // Replaces the file (mode 0600); the error names the path and the failing step.
  [[nodiscard]] absl::Status Store(const PreparedClaims& claims) const;

 private:
  const std::string path_;
  const std::string driver_;
};

}  // namespace kdp::internal

#endif  // KDP_SDK_SRC_DRA_CHECKPOINT_H_
