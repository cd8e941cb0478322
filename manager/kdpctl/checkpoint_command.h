// `kdpctl checkpoint inspect|convert`: offline tools over the kubelet's device-manager checkpoint
// file (no kdp-manager needed). `inspect` also reads the DRA manager's checkpoint
// (`dra_manager_state`), recognised by content: a JSON envelope whose "Data" is a string.
// docs/kdpctl.md documents the JSON and exit statuses.
#ifndef KDP_MANAGER_KDPCTL_CHECKPOINT_COMMAND_H_
#define KDP_MANAGER_KDPCTL_CHECKPOINT_COMMAND_H_

#include <string>

#include "absl/status/statusor.h"
#include "manager/src/devicemanager/checkpoint/checkpoint.h"
#include "manager/src/dra/checkpoint/checkpoint.h"
#include "nlohmann/json.hpp"

namespace kdp::kdpctl {

// {"format","checksum_ok","checksum","computed_checksum","entries":[...],"registered_devices":{}}
// with each entry's AllocResp decoded from protobuf.
nlohmann::json CheckpointJson(const manager::checkpoint::Decoded& decoded);

// {"format":"dra","checksum_ok","checksum","computed_checksum","kind","api_version",
//  "claims":[{"namespace","name","uid","pod_uids":[...],"drivers":{"<driver>":[{"pool","device",
//  "request_names","cdi_device_ids"[,"share_id"]}]}}]} for a DRA manager checkpoint; `data` is
// null when Data could not be parsed, and then "error" says why instead of "claims".
nlohmann::json DraCheckpointJson(const manager::dra::CheckpointEnvelope& envelope,
                                 const absl::StatusOr<manager::dra::CheckpointData>& data);

// Exit status: 0 valid; 1 unreadable file; 2 not a checkpoint, checksum mismatch, a DRA
// checkpoint whose Data does not parse, or the unsupported <= 1.31 DRA layout (one line on
// stderr says which). Prints JSON with `json`, else a readable summary. Device-manager and DRA
// manager checkpoints are told apart by content.
int InspectCheckpoint(const std::string& path, bool json);

// Reads `in` (v1 or v2, checksum must match) and writes it to `out` in the v2 layout, durably.
// Exit status as InspectCheckpoint; 1 when `out` cannot be written.
int ConvertCheckpoint(const std::string& in, const std::string& out);

}  // namespace kdp::kdpctl

#endif  // KDP_MANAGER_KDPCTL_CHECKPOINT_COMMAND_H_
