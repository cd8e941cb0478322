// The kubelet's DRA manager checkpoint, `<kubelet root>/dra_manager_state`, in the layout kubelet
// 1.32+ writes (PR #126303, "DRA: refactor checkpointing"): a JSON envelope
// `{"Data":"<JSON as a string>","Checksum":<uint32>}` whose Checksum is the CRC-32/IEEE of the
// exact Data bytes, and Data the JSON of `{"kind":"DRACheckpoint","apiVersion":
// "checkpoint.dra.kubelet.k8s.io/v1","ClaimInfoStateList":[...]}` with Go's field names and
// encoding/json conventions. The ≤1.31 layout (`{"version":"v1","entries":...,"checksum":N}`,
// FNV over a go-spew dump) is recognised only to say that it is not supported.
//
// The state types mirror the kubelet's pkg/kubelet/cm/dra/state package. Encode/Decode are pure
// functions over bytes; Checkpointer adds the file (durable replacement, create when missing).
//
// Thread-safety: the functions are thread-safe; Checkpointer is thread-safe (every Store writes a
// private temporary file and renames it), but ordering concurrent Stores is the caller's job.
#ifndef KDP_MANAGER_SRC_DRA_CHECKPOINT_H_
#define KDP_MANAGER_SRC_DRA_CHECKPOINT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kdp::manager::dra {

namespace state {

// state.Device: how a driver described one prepared device (from NodePrepareResources).
struct Device {
  std::string pool_name = {};    // PoolName
  std::string device_name = {};  // DeviceName
  // ShareID (kubelet 1.35+, consumable capacity); written only when set.
  std::optional<std::string> share_id = {};
  std::vector<std::string> request_names = {};   // RequestNames; empty: all requests
  std::vector<std::string> cdi_device_ids = {};  // CDIDeviceIDs

  friend bool operator==(const Device&, const Device&) = default;
};

// state.DriverState: the devices one driver prepared for a claim.
struct DriverState {
  std::vector<Device> devices = {};  // Devices

  friend bool operator==(const DriverState&, const DriverState&) = default;
};

// state.ClaimInfoState: the persistent part of a ClaimInfo.
struct ClaimInfoState {
  std::string claim_uid = {};           // ClaimUID
  std::string claim_name = {};          // ClaimName
  std::string namespace_ = {};          // Namespace
  std::set<std::string> pod_uids = {};  // PodUIDs, a set written as {"<uid>":{}}
  // DriverState: one key per driver in the claim's allocation results, even one that returned
  // no devices (that is how unprepare finds the drivers without the API server).
  std::map<std::string, DriverState> driver_state = {};

  friend bool operator==(const ClaimInfoState&, const ClaimInfoState&) = default;
};

}  // namespace state

// The key of a claim in the DRA manager's cache and the state store: "<namespace>/<claimName>".
std::string ClaimInfoKey(const std::string& claim_name, const std::string& namespace_);

inline constexpr char kCheckpointFileName[] = "dra_manager_state";
inline constexpr char kCheckpointKind[] = "DRACheckpoint";
inline constexpr char kCheckpointApiVersion[] = "checkpoint.dra.kubelet.k8s.io/v1";

// The Data string of a checkpoint: the JSON of the claim list exactly as Go's encoding/json
// writes the kubelet's CheckpointData (field order, `null` for empty slices, sorted map keys,
// Go's escaping of <, >, &, U+2028/9 and invalid UTF-8). An empty list is `[]`.
std::string EncodeCheckpointData(const std::vector<state::ClaimInfoState>& claims);

// The whole file: the envelope around EncodeCheckpointData with its CRC-32.
std::string EncodeCheckpoint(const std::vector<state::ClaimInfoState>& claims);

// The envelope as read: the Data bytes (after JSON unescaping), the stored and computed checksums.
struct CheckpointEnvelope {
  std::string data = {};
  uint64_t checksum = 0;           // as stored
  uint32_t computed_checksum = 0;  // CRC-32/IEEE of `data`
  bool checksum_ok() const { return checksum == computed_checksum; }
};

// What Data holds.
struct CheckpointData {
  std::string kind = {};         // "DRACheckpoint"
  std::string api_version = {};  // "checkpoint.dra.kubelet.k8s.io/v1"
  // "ClaimInfoStateList", or "Entries" (an intermediate 1.32 development layout), or "" when
  // neither key is present.
  std::string list_key = {};
  std::vector<state::ClaimInfoState> claims = {};
};

// Parses the envelope without looking inside Data. INVALID_ARGUMENT naming the problem when the
// bytes are not a DRA checkpoint envelope; FAILED_PRECONDITION when they are the ≤1.31 layout
// ("version"/"entries"/"checksum"), which kdp does not read. A checksum mismatch is NOT an error
// here: see CheckpointEnvelope::checksum_ok().
absl::StatusOr<CheckpointEnvelope> DecodeCheckpointEnvelope(std::string_view bytes);

// Parses Data as Go's json.Unmarshal would (field names matched case-insensitively, null for an
// empty value; reads ClaimInfoStateList, else Entries). INVALID_ARGUMENT naming the problem.
absl::StatusOr<CheckpointData> DecodeCheckpointData(std::string_view data);

// Envelope, checksum (verified BEFORE Data is parsed, as the kubelet's VerifyChecksum), then Data.
// DATA_LOSS "checkpoint is corrupted: <why>" for a checksum mismatch or any malformed byte;
// FAILED_PRECONDITION for the unsupported ≤1.31 layout.
absl::StatusOr<std::vector<state::ClaimInfoState>> DecodeCheckpoint(std::string_view bytes);

// CRC-32/IEEE (zlib's crc32), the checksum of Data.
uint32_t Crc32Ieee(std::string_view bytes);

// The checkpoint file of one state directory (the kubelet's dra Checkpointer).
class Checkpointer {
 public:
  // INVALID_ARGUMENT when `state_dir` or `name` is empty or `name` has a '/'. Creates
  // `state_dir` (and its parents) when missing; INTERNAL/PERMISSION_DENIED when that fails.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Checkpointer>> Create(
      const std::string& state_dir, const std::string& name = kCheckpointFileName);

  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  // The stored claims. A missing file is an empty state, and an empty checkpoint is written
  // (as the kubelet's GetOrCreate does). DATA_LOSS "failed to get checkpoint <name>: checkpoint
  // is corrupted: …" for a bad checksum or malformed content — the kubelet then refuses to start
  // (#127653; the remedy is to drain the node and remove the file); FAILED_PRECONDITION for the
  // ≤1.31 layout; other codes for I/O errors, naming the path.
  [[nodiscard]] absl::StatusOr<std::vector<state::ClaimInfoState>> GetOrCreate();

  // Replaces the file durably (temporary file, fsync, rename, directory fsync).
  [[nodiscard]] absl::Status Store(const std::vector<state::ClaimInfoState>& claims);

  const std::string& path() const { return path_; }
  const std::string& name() const { return name_; }

 private:
  Checkpointer(std::string path, std::string name)
      : path_(std::move(path)), name_(std::move(name)) {}

  const std::string path_;
  const std::string name_;
};

}  // namespace kdp::manager::dra

#endif  // KDP_MANAGER_SRC_DRA_CHECKPOINT_H_
