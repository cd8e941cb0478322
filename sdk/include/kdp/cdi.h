// kdp::cdi writes the Container Device Interface (CDI 1.1.0) specs through which a DRA driver
// tells the container runtime what to inject for a prepared device: a DRA driver builds a Spec in
// NodePrepareResources, writes it with WriteSpec() under the runtime's dynamic spec directory
// (/var/run/cdi) *before* returning the fully-qualified device names (QualifiedName()) to the
// kubelet, and removes it with RemoveSpec() in NodeUnprepareResources. The model mirrors the Go
// types of tags.cncf.io/container-device-interface/specs-go field by field (JSON keys included),
// without any protobuf or YAML type. Validate() applies the rules the Go library applies when a
// runtime loads a spec (pkg/cdi/spec.go, container-edits.go, parser/parser.go), so a spec that
// passes here is not dropped by containerd or CRI-O. Only JSON is read and written: a YAML spec
// is equally valid for runtimes, but a writer needs one format and JSON needs no extra parser.
//
// Thread-safety: the functions are thread-safe (no shared state); the value types are regular
// and externally synchronized like any std::vector. Concurrent WriteSpec() calls for different
// spec names are safe; for the same name the last rename wins.
#ifndef KDP_CDI_H_
#define KDP_CDI_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kdp::cdi {

// The newest spec version this model knows; WriteSpec() accepts any known version >= 0.3.0.
inline constexpr char kCurrentVersion[] = "1.1.0";
// The runtimes' directory for dynamically generated specs (CDI default order: /etc/cdi, then
// /var/run/cdi, the later one winning on duplicate devices).
inline constexpr char kDynamicSpecDir[] = "/var/run/cdi";

// A device node to create in the container ("deviceNodes"). Unset major/minor/fileMode/uid/gid
// are filled in by the runtime from the host's node.
struct DeviceNode {
  std::string path = {};                   // "path": in the container; required
  std::string host_path = {};              // "hostPath": defaults to `path`; needs 0.5.0
  std::string type = {};                   // "type": "", "b", "c", "u" or "p"
  std::optional<int64_t> major = {};       // "major"
  std::optional<int64_t> minor = {};       // "minor"
  std::optional<uint32_t> file_mode = {};  // "fileMode": e.g. 0666
  std::string permissions = {};            // "permissions": subset of "rwm"; "" means "rwm"
  std::optional<uint32_t> uid = {};        // "uid"
  std::optional<uint32_t> gid = {};        // "gid"
};

// A mount ("mounts").
struct Mount {
  std::string host_path = {};             // "hostPath": required
  std::string container_path = {};        // "containerPath": required
  std::string type = {};                  // "type": e.g. "bind"; needs 0.4.0
  std::vector<std::string> options = {};  // "options": e.g. {"ro", "nosuid", "bind"}
};

// An OCI hook ("hooks").
struct Hook {
  std::string hook_name = {};          // "hookName": prestart, createRuntime, createContainer,
                                       // startContainer, poststart or poststop
  std::string path = {};               // "path": absolute; required
  std::vector<std::string> args = {};  // "args": argv, including argv[0]
  std::vector<std::string> env = {};   // "env": NAME=VALUE
  std::optional<int> timeout = {};     // "timeout": seconds, > 0
};

// Intel RDT settings ("intelRdt"); needs 0.7.0, `schemata` and `enable_monitoring` need 1.1.0.
struct IntelRdt {
  std::string clos_id = {};                // "closID": a file name, or "/"
  std::string l3_cache_schema = {};        // "l3CacheSchema"
  std::string mem_bw_schema = {};          // "memBwSchema"
  std::vector<std::string> schemata = {};  // "schemata"
  bool enable_monitoring = false;          // "enableMonitoring"
};

// A host network interface moved into the container ("netDevices"); needs 1.1.0.
struct NetDevice {
  std::string host_interface_name = {};  // "hostInterfaceName": required
  std::string name = {};                 // "name": the name inside the container; required
};

// What to change in the container ("containerEdits").
struct ContainerEdits {
  std::vector<std::string> env = {};           // "env": NAME=VALUE, appended
  std::vector<DeviceNode> device_nodes = {};   // "deviceNodes"
  std::vector<Mount> mounts = {};              // "mounts"
  std::vector<Hook> hooks = {};                // "hooks"
  std::vector<uint32_t> additional_gids = {};  // "additionalGids" (0 is ignored); needs 0.7.0
  std::optional<IntelRdt> intel_rdt = {};      // "intelRdt"
  std::vector<NetDevice> net_devices = {};     // "netDevices"

  // True when no edit is present (an empty device is invalid, CDI #250).
  bool empty() const;
};

// One device of a spec ("devices[]"); its qualified name is QualifiedName(spec.kind, name).
struct Device {
  std::string name = {};                                // "name": see Validate()
  std::map<std::string, std::string> annotations = {};  // "annotations"; needs 0.6.0
  ContainerEdits container_edits = {};                  // "containerEdits": must not be empty
};

// A whole spec file. The spec-level `container_edits` are applied when any of its devices is
// requested.
struct Spec {
  std::string cdi_version = {};                         // "cdiVersion": e.g. "0.5.0" or "v0.5.0"
  std::string kind = {};                                // "kind": "<vendor>/<class>"
  std::map<std::string, std::string> annotations = {};  // "annotations"; needs 0.6.0
  std::vector<Device> devices = {};                     // "devices": at least one
  ContainerEdits container_edits = {};                  // "containerEdits"
};

// OK when `spec` would be accepted by the Go CDI library; otherwise INVALID_ARGUMENT naming the
// spec's kind, the device and field, and the rule, e.g.
//   CDI spec "vendor.com/gpu": device "x": containerEdits must not be empty
//   CDI spec "vendor.com/gpu": cdiVersion 0.3.0 is below the minimum 0.5.0 required by
//   devices[0].containerEdits.deviceNodes[0].hostPath
// Rules: cdiVersion known (0.1.0..1.1.0, optional leading 'v') and >= both 0.3.0 and
// MinimumRequiredVersion(); kind "<vendor>/<class>" where each part starts with a letter, ends
// with a letter or digit and has only letters, digits, '_', '-', '.' between; annotation keys
// are Kubernetes qualified names ([dns-prefix/]name, name <= 63) and all annotations together
// <= 256 KiB; at least one device; device names start and end with a letter or digit with
// letters, digits, '_', '-', '.', ':' between, unique in the spec; every device's
// containerEdits non-empty; env entries NAME=VALUE with '=' not first; device nodes with a
// path, type in {"", b, c, u, p}, permissions a subset of "rwm"; mounts with hostPath and
// containerPath; hooks with a known hookName, an absolute path, valid env and timeout > 0;
// intelRdt closID a file name or "/"; netDevices with valid, unique interface names.
[[nodiscard]] absl::Status Validate(const Spec& spec);

// The lowest cdiVersion able to express `spec` ("0.3.0" at least), as the Go library's
// MinimumRequiredVersion computes it: 0.4.0 for a mount type; 0.5.0 for hostPath on a device
// node or a device name starting with a digit; 0.6.0 for annotations or a '.' in the kind's
// class; 0.7.0 for intelRdt or additionalGids; 1.1.0 for netDevices or intelRdt
// schemata/enableMonitoring. Writers set `cdi_version` to this.
std::string MinimumRequiredVersion(const Spec& spec);

// The spec as JSON with the Go types' keys (cdiVersion, kind, annotations, devices,
// containerEdits, deviceNodes, hostPath, fileMode, additionalGids, intelRdt, netDevices, ...),
// in a fixed order (the top level as in the Go Spec type), empty and unset optional fields
// omitted, pretty-printed with a final newline. Deterministic; does not validate.
std::string ToJson(const Spec& spec);

// Parses a JSON spec strictly, as runtimes load specs: an unknown field, a value of the wrong
// type or out of range, or malformed JSON is INVALID_ARGUMENT naming `source_name` (e.g. the file
// path) and the field ("devices[0].containerEdits.foo"). null counts as absent. Does not
// validate: call Validate() on the result. YAML is not accepted.
absl::StatusOr<Spec> ParseJson(std::string_view text, std::string_view source_name);

// "<kind>=<device_name>", e.g. QualifiedName("vendor.com/gpu", "gpu0") == "vendor.com/gpu=gpu0",
// the form returned to the kubelet in cdi_device_ids. Does not validate.
std::string QualifiedName(std::string_view kind, std::string_view device_name);

// Splits a fully-qualified device name as the Go parser does: at the first '=', the qualifier at
// its first '/'; then validates vendor, class and device name. INVALID_ARGUMENT naming `name`
// for an unqualified name (including a device path starting with '/') or an invalid part. On
// success sets `*kind` ("vendor.com/gpu") and `*device` ("gpu0"); either may be null.
[[nodiscard]] absl::Status ParseQualifiedName(std::string_view name, std::string* kind,
                                              std::string* device);

// The Go helpers' transient spec name: "<vendor>-<class>_<transient_id>" with every '/' in the
// id replaced by '_'. One spec per claim: TransientSpecName(vendor, class, claim_uid).
std::string TransientSpecName(std::string_view vendor, std::string_view class_name,
                              std::string_view transient_id);

// The longest spec name WriteSpec() accepts: "<name>.json" and WriteFileDurably's temporary
// ".<name>.json.XXXXXX" must both fit NAME_MAX (255 bytes).
inline constexpr size_t kMaxSpecNameLength = 240;

// Validates `spec`, creates `cdi_root` (and missing parents, mode 0755) and atomically replaces
// `<cdi_root>/<spec_name>.json` (mode 0644): the bytes go to a '.'-prefixed temporary file in
// the same directory (runtimes only load *.json and *.yaml, so they never see a partial spec),
// are fsynced, renamed over the target, and the directory is fsynced. `spec_name` must be a
// plain file name: not empty, not "." or "..", no '/' or NUL, at most kMaxSpecNameLength bytes
// (so the file and its temporary sibling fit NAME_MAX); otherwise INVALID_ARGUMENT. An invalid
// spec is INVALID_ARGUMENT (see Validate()); file system errors carry the codes of
// kdp::WriteFileDurably (PERMISSION_DENIED, RESOURCE_EXHAUSTED, ...), naming the path.
[[nodiscard]] absl::Status WriteSpec(const std::string& cdi_root, const std::string& spec_name,
                                     const Spec& spec);

// Removes `<cdi_root>/<spec_name>.json`. A missing file (or directory) is OK, so unprepare can
// be retried. INVALID_ARGUMENT for a spec_name WriteSpec() would refuse; other failures name the
// path.
[[nodiscard]] absl::Status RemoveSpec(const std::string& cdi_root, const std::string& spec_name);

}  // namespace kdp::cdi

#endif  // KDP_CDI_H_
