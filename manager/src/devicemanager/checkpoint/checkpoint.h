// The kubelet's device-manager checkpoint, `device-plugins/kubelet_internal_checkpoint`, byte for
// byte (pkg/kubelet/cm/devicemanager/checkpoint): the current ("v2", kubelet 1.20+) layout for
// writing, and both v2 and the legacy v1 layout (DeviceIDs as a plain list, checkpointv1.go) for
// reading, each with its checksum: FNV-1a 32 over the go-spew `%#v` dump of the Data member
// (pkg/kubelet/checkpointmanager/checksum). Pure functions over bytes; no file I/O here.
#ifndef KDP_MANAGER_SRC_DEVICEMANAGER_CHECKPOINT_CHECKPOINT_H_
#define KDP_MANAGER_SRC_DEVICEMANAGER_CHECKPOINT_CHECKPOINT_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace kdp::manager::checkpoint {

// File name inside the device-plugins directory.
inline constexpr char kFileName[] = "kubelet_internal_checkpoint";

// One (pod, container, resource) allocation: a PodDevicesEntry.
struct Entry {
  std::string pod_uid = {};
  std::string container_name = {};
  std::string resource_name = {};
  // NUMA node → device IDs; -1 for devices without topology (the kubelet's DevicesPerNUMA).
  std::map<int64_t, std::vector<std::string>> devices = {};
  // Protobuf bytes of the plugin's ContainerAllocateResponse.
  std::string alloc_resp = {};

  friend bool operator==(const Entry&, const Entry&) = default;
};

// What the checkpoint holds.
struct Data {
  // In write order (the kubelet writes `null` when there are none).
  std::vector<Entry> entries = {};
  // Resource → IDs of its healthy devices at write time.
  std::map<std::string, std::vector<std::string>> registered_devices = {};

  friend bool operator==(const Data&, const Data&) = default;
};

enum class Format {
  kV2,  // DeviceIDs keyed by NUMA node (kubelet 1.20+)
  kV1,  // DeviceIDs as a plain list (kubelet <= 1.19); read only
};
const char* FormatName(Format format);  // "v2" / "v1"

// The file's bytes in the kubelet's current layout: compact JSON as Go's encoding/json writes it
// (field order, `null` for no entries, NUMA keys as decimal strings in string order, base64
// AllocResp, Go's escaping of <, >, &, U+2028/9 and invalid UTF-8), with the checksum.
std::string Encode(const Data& data);

struct Decoded {
  Format format = Format::kV2;
  Data data = {};
  uint64_t checksum = 0;           // as stored
  uint64_t computed_checksum = 0;  // of what was read
  bool checksum_ok() const { return checksum == computed_checksum; }
};

// Parses either layout; a v1 entry's devices land under NUMA node 0, as the kubelet 1.21–1.29
// reader converts them. INVALID_ARGUMENT naming what is wrong when the bytes are not a device
// manager checkpoint. A checksum mismatch is NOT an error here: see Decoded::checksum_ok().
absl::StatusOr<Decoded> Decode(std::string_view bytes);

// FNV-1a 32-bit, the kubelet's checksum hash (over the go-spew dump of Data; see
// pkg/kubelet/checkpointmanager/checksum).
uint32_t Fnv1a32(std::string_view bytes);

}  // namespace kdp::manager::checkpoint

#endif  // KDP_MANAGER_SRC_DEVICEMANAGER_CHECKPOINT_CHECKPOINT_H_
