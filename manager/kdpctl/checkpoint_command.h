// `kdpctl checkpoint inspect|convert`: offline tools over the kubelet's device-manager checkpoint
// file (no kdp-manager needed). docs/kdpctl.md documents the JSON and exit statuses.
#ifndef KDP_MANAGER_KDPCTL_CHECKPOINT_COMMAND_H_
#define KDP_MANAGER_KDPCTL_CHECKPOINT_COMMAND_H_

#include <string>

#include "manager/src/devicemanager/checkpoint/checkpoint.h"
#include "nlohmann/json.hpp"

namespace kdp::kdpctl {

// {"format","checksum_ok","checksum","computed_checksum","entries":[...],"registered_devices":{}}
// with each entry's AllocResp decoded from protobuf.
nlohmann::json CheckpointJson(const manager::checkpoint::Decoded& decoded);

// Exit status: 0 valid; 1 unreadable file; 2 not a checkpoint or checksum mismatch (one line on
// stderr says which). Prints JSON with `json`, else a readable summary.
int InspectCheckpoint(const std::string& path, bool json);

// Reads `in` (v1 or v2, checksum must match) and writes it to `out` in the v2 layout, durably.
// Exit status as InspectCheckpoint; 1 when `out` cannot be written.
int ConvertCheckpoint(const std::string& in, const std::string& out);

}  // namespace kdp::kdpctl

#endif  // KDP_MANAGER_KDPCTL_CHECKPOINT_COMMAND_H_
