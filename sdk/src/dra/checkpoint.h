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
// sorted by UID, plus "generation": N (absent in files of kdp before 0.19: 0). "PrepareStarted" is
// written before the vendor's Prepare runs (NVIDIA's driver keeps the same two states),
// "PrepareCompleted" with the devices after it succeeded.
//
// Two slots: the checkpoint is `<path>` and `<path>.1`, each a whole file of the format above
// (padded with spaces to a multiple of 4 KiB, so an overwrite keeps the file's size), and
// the valid one with the higher generation is the state. A write overwrites the slot that does NOT
// hold the newest durable state, in place, and (when durable) fdatasyncs it: one small synced
// write instead of a temporary file, fsync, rename and directory fsync, while a write the crash
// tears (a checksum that fails) leaves the other slot's state. The record before the vendor's
// Prepare is written without a sync (a crash of the process keeps it; the record after it,
// synced, goes to the same slot and makes it durable). A slot found newer than what this process
// knows durable (another instance's, or written before a crash) is synced before the other one
// is overwritten, so the last durable state is never the one at risk.
//
// Thread-safety: thread-safe; the runner reads and writes it under its serialization lock (and
// the lock file, across instances).
#ifndef KDP_SDK_SRC_DRA_CHECKPOINT_H_
#define KDP_SDK_SRC_DRA_CHECKPOINT_H_

#include <cstdint>
#include <map>
#include <memory>
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

// The file's bytes for `claims` of `driver` (generation 0: the field is left out).
std::string EncodeDraCheckpoint(const std::string& driver, const PreparedClaims& claims,
                                uint64_t generation = 0);

// Parses file bytes. DATA_LOSS (naming `what`, normally the path) when the JSON is malformed, the
// checksum does not match or a field has the wrong type; FAILED_PRECONDITION when the file belongs
// to another driver or has an unknown apiVersion.
absl::StatusOr<PreparedClaims> DecodeDraCheckpoint(const std::string& bytes,
                                                   const std::string& driver,
                                                   const std::string& what,
                                                   uint64_t* generation = nullptr);

class DraCheckpoint {
 public:
  DraCheckpoint(std::string path, std::string driver);

  const std::string& path() const { return path_; }
  // The file of slot 0 (`path`) or 1 (`<path>.1`).
  std::string SlotPath(int slot) const { return slot == 0 ? path_ : path_ + ".1"; }

  // The recorded claims: the newest valid slot; empty when neither file exists. A slot that does
  // not parse is skipped when the other one does (a torn write); when neither does, DATA_LOSS
  // naming the first. FAILED_PRECONDITION when a slot belongs to another driver or apiVersion;
  // other codes for read errors, naming the path. Also chooses the slot the next Stores write.
  absl::StatusOr<PreparedClaims> Load() const;

  // Writes `claims` as the next generation (mode 0600 when created); with `sync`, durable on
  // return. Stores between two Loads go to the same slot. The error names the path and the step.
  [[nodiscard]] absl::Status Store(const PreparedClaims& claims, bool sync = true) const;

 private:
  struct Slots;
  absl::StatusOr<PreparedClaims> LoadLocked(Slots& slots) const;

  const std::string path_;
  const std::string driver_;
  const std::shared_ptr<Slots> slots_;  // the write position, shared by copies
};

}  // namespace kdp::internal

#endif  // KDP_SDK_SRC_DRA_CHECKPOINT_H_
