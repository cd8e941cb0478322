// Validation, minimum versions, qualified names and spec files of kdp::cdi. The rules follow the
// Go reference library tags.cncf.io/container-device-interface (pkg/cdi/spec.go `validate`,
// container-edits.go `Validate`, version.go `MinimumRequiredVersion`, pkg/parser/parser.go
// `ValidateVendorName`/`ValidateClassName`/`ValidateDeviceName`/`ParseQualifiedName`,
// annotations.go via k8s `IsQualifiedName`). JSON lives in cdi_json.cc.
#include "kdp/cdi.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "common/absl_view.h"
#include "common/durable_file.h"
#include "common/path_safety.h"

namespace kdp::cdi {
namespace {

// ---- Versions -------------------------------------------------------------------------------

struct Version {
  int major = 0;
  int minor = 0;
  int patch = 0;
  friend auto operator<=>(const Version&, const Version&) = default;
  std::string ToString() const { return absl::StrCat(major, ".", minor, ".", patch); }
};

constexpr Version kKnownVersions[] = {{0, 1, 0}, {0, 2, 0}, {0, 3, 0}, {0, 4, 0}, {0, 5, 0},
                                      {0, 6, 0}, {0, 7, 0}, {0, 8, 0}, {1, 0, 0}, {1, 1, 0}};
constexpr Version kBaseVersion{0, 3, 0};  // "the spec version must be at least v0.3.0"

// A known version, "1.1.0" or "v1.1.0"; nullopt for anything else.
std::optional<Version> ParseKnownVersion(absl::string_view text) {
  if (!text.empty() && text.front() == 'v') text.remove_prefix(1);
  for (const Version& v : kKnownVersions) {
    if (text == v.ToString()) return v;
  }
  return std::nullopt;
}

// The required version with the feature that requires it (the first feature found at the
// highest version, so the message points at something to remove or a version to raise).
struct Requirement {
  Version version = kBaseVersion;
  std::string reason = {};

  void Need(Version needed, std::string why) {
    if (needed > version) {
      version = needed;
      reason = std::move(why);
    }
  }
};

void RequireForEdits(const ContainerEdits& edits, const std::string& prefix, Requirement* req) {
  for (size_t i = 0; i < edits.mounts.size(); ++i) {
    if (!edits.mounts[i].type.empty()) {
      req->Need({0, 4, 0}, absl::StrCat(prefix, ".mounts[", i, "].type"));
    }
  }
  for (size_t i = 0; i < edits.device_nodes.size(); ++i) {
    if (!edits.device_nodes[i].host_path.empty()) {
      req->Need({0, 5, 0}, absl::StrCat(prefix, ".deviceNodes[", i, "].hostPath"));
    }
  }
  if (edits.intel_rdt.has_value()) {
    req->Need({0, 7, 0}, absl::StrCat(prefix, ".intelRdt"));
    if (!edits.intel_rdt->schemata.empty()) {
      req->Need({1, 1, 0}, absl::StrCat(prefix, ".intelRdt.schemata"));
    }
    if (edits.intel_rdt->enable_monitoring) {
      req->Need({1, 1, 0}, absl::StrCat(prefix, ".intelRdt.enableMonitoring"));
    }
  }
  if (!edits.additional_gids.empty()) {
    req->Need({0, 7, 0}, absl::StrCat(prefix, ".additionalGids"));
  }
  if (!edits.net_devices.empty()) {
    req->Need({1, 1, 0}, absl::StrCat(prefix, ".netDevices"));
  }
}

Requirement ComputeRequirement(const Spec& spec) {
  Requirement req;
  if (!spec.annotations.empty()) req.Need({0, 6, 0}, "annotations");
  size_t slash = spec.kind.find('/');
  if (slash != std::string::npos && spec.kind.find('.', slash + 1) != std::string::npos) {
    req.Need({0, 6, 0}, absl::StrCat("kind \"", spec.kind, "\" (a '.' in the class)"));
  }
  RequireForEdits(spec.container_edits, "containerEdits", &req);
  for (size_t i = 0; i < spec.devices.size(); ++i) {
    const Device& device = spec.devices[i];
    const std::string prefix = absl::StrCat("devices[", i, "]");
    // Go: `!parser.IsLetter(rune(d.Name[0]))` (0.5.0 allowed names starting with a digit).
    if (!device.name.empty() && absl::ascii_isdigit(static_cast<unsigned char>(device.name[0]))) {
      req.Need({0, 5, 0},
               absl::StrCat(prefix, ".name \"", device.name, "\" (starts with a digit)"));
    }
    if (!device.annotations.empty()) req.Need({0, 6, 0}, absl::StrCat(prefix, ".annotations"));
    RequireForEdits(device.container_edits, absl::StrCat(prefix, ".containerEdits"), &req);
  }
  return req;
}

// ---- Names ------------------------------------------------------------------------------------

bool IsLetter(char c) { return absl::ascii_isalpha(static_cast<unsigned char>(c)); }
bool IsAlnum(char c) { return absl::ascii_isalnum(static_cast<unsigned char>(c)); }

// Vendor or class (what = "vendor" / "class"): a letter first, a letter or digit last, letters,
// digits, '_', '-', '.' between. Returns the broken rule, or "" when valid.
std::string CheckKindPart(absl::string_view part, absl::string_view what) {
  if (part.empty()) return absl::StrCat("the ", what, " must not be empty");
  if (!IsLetter(part.front())) {
    return absl::StrCat(what, " \"", part, "\" must start with a letter");
  }
  for (size_t i = 1; i + 1 < part.size(); ++i) {
    char c = part[i];
    if (!IsAlnum(c) && c != '_' && c != '-' && c != '.') {
      return absl::StrCat(what, " \"", part, "\" has the invalid character '", std::string(1, c),
                          "' (allowed: letters, digits, '_', '-', '.')");
    }
  }
  if (!IsAlnum(part.back())) {
    return absl::StrCat(what, " \"", part, "\" must end with a letter or digit");
  }
  return "";
}

// "<vendor>/<class>": split at the first '/' (Go `ParseQualifier`).
std::string CheckKind(absl::string_view kind) {
  size_t slash = kind.find('/');
  if (slash == absl::string_view::npos || slash == 0 || slash + 1 == kind.size()) {
    return absl::StrCat("kind \"", kind, "\" is not of the form <vendor>/<class>");
  }
  std::string error = CheckKindPart(kind.substr(0, slash), "vendor");
  if (error.empty()) error = CheckKindPart(kind.substr(slash + 1), "class");
  return error.empty() ? "" : absl::StrCat("kind \"", kind, "\": ", error);
}

// Device name: a letter or digit first and last, letters, digits, '_', '-', '.', ':' between.
std::string CheckDeviceName(absl::string_view name) {
  if (name.empty()) return "the device name must not be empty";
  if (!IsAlnum(name.front())) {
    return absl::StrCat("device name \"", name, "\" must start with a letter or digit");
  }
  for (size_t i = 1; i + 1 < name.size(); ++i) {
    char c = name[i];
    if (!IsAlnum(c) && c != '_' && c != '-' && c != '.' && c != ':') {
      return absl::StrCat("device name \"", name, "\" has the invalid character '",
                          std::string(1, c), "' (allowed: letters, digits, '_', '-', '.', ':')");
    }
  }
  if (!IsAlnum(name.back())) {
    return absl::StrCat("device name \"", name, "\" must end with a letter or digit");
  }
  return "";
}

// k8s IsDNS1123Subdomain after lower-casing (CDI lower-cases annotation keys before checking).
bool IsDnsSubdomain(absl::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  while (start <= s.size()) {
    size_t dot = s.find('.', start);
    absl::string_view label = s.substr(start, dot == absl::string_view::npos ? dot : dot - start);
    if (label.empty() || !IsAlnum(label.front()) || !IsAlnum(label.back())) return false;
    for (char c : label) {
      if (!IsAlnum(c) && c != '-') return false;
    }
    if (dot == absl::string_view::npos) break;
    start = dot + 1;
  }
  return true;
}

// k8s IsQualifiedName: [prefix/]name, name 1..63 chars, alphanumeric at both ends, '-', '_',
// '.' between; prefix a DNS subdomain.
std::string CheckAnnotationKey(absl::string_view key) {
  absl::string_view name = key;
  size_t slash = key.find('/');
  if (slash != absl::string_view::npos) {
    absl::string_view prefix = key.substr(0, slash);
    name = key.substr(slash + 1);
    if (!IsDnsSubdomain(absl::AsciiStrToLower(std::string(prefix)))) {
      return absl::StrCat("annotation key \"", key,
                          "\": the prefix must be a DNS subdomain (at most 253 characters)");
    }
  }
  bool ok = !name.empty() && name.size() <= 63 && IsAlnum(name.front()) && IsAlnum(name.back());
  for (char c : name) {
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') ok = false;
  }
  if (!ok) {
    return absl::StrCat("annotation key \"", key,
                        "\": the name must be 1-63 characters, alphanumeric at both ends, with "
                        "'-', '_', '.' between (an optional DNS-subdomain prefix and '/' before)");
  }
  return "";
}

constexpr size_t kMaxAnnotationBytes = 256 * 1024;  // k8s TotalAnnotationSizeLimitB

std::string CheckAnnotations(const std::map<std::string, std::string>& annotations,
                             absl::string_view field) {
  size_t total = 0;
  for (const auto& [key, value] : annotations) {
    std::string error = CheckAnnotationKey(key);
    if (!error.empty()) return absl::StrCat(field, ": ", error);
    total += key.size() + value.size();
  }
  if (total > kMaxAnnotationBytes) {
    return absl::StrCat(field, ": ", total, " bytes exceed the limit of ", kMaxAnnotationBytes);
  }
  return "";
}

// ---- Container edits --------------------------------------------------------------------------

// Go `ValidateEnv`: strings.IndexByte(v, '=') must be > 0.
std::string CheckEnv(const std::vector<std::string>& env, const std::string& field) {
  for (size_t i = 0; i < env.size(); ++i) {
    size_t eq = env[i].find('=');
    if (eq == std::string::npos || eq == 0) {
      return absl::StrCat(field, "[", i, "] \"", env[i],
                          "\" is not NAME=VALUE (an '=' is required and must not be first)");
    }
  }
  return "";
}

// Linux interface names: 1..15 bytes (IFNAMSIZ), not "." or "..", no '/', ':' or whitespace.
bool IsInterfaceName(absl::string_view name) {
  if (name.empty() || name.size() > 15 || name == "." || name == "..") return false;
  for (char c : name) {
    if (c == '/' || c == ':' || absl::ascii_isspace(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

std::string CheckEdits(const ContainerEdits& edits, const std::string& prefix) {
  std::string error = CheckEnv(edits.env, prefix + ".env");
  if (!error.empty()) return error;
  for (size_t i = 0; i < edits.device_nodes.size(); ++i) {
    const DeviceNode& node = edits.device_nodes[i];
    std::string field = absl::StrCat(prefix, ".deviceNodes[", i, "]");
    if (node.path.empty()) return absl::StrCat(field, ".path is required");
    if (node.type != "" && node.type != "b" && node.type != "c" && node.type != "u" &&
        node.type != "p") {
      return absl::StrCat(field, ".type \"", node.type, "\" must be one of \"\", b, c, u, p");
    }
    if (node.permissions.find_first_not_of("rwm") != std::string::npos) {
      return absl::StrCat(field, ".permissions \"", node.permissions,
                          "\" must be a subset of \"rwm\"");
    }
  }
  for (size_t i = 0; i < edits.mounts.size(); ++i) {
    const Mount& mount = edits.mounts[i];
    std::string field = absl::StrCat(prefix, ".mounts[", i, "]");
    if (mount.host_path.empty()) return absl::StrCat(field, ".hostPath is required");
    if (mount.container_path.empty()) return absl::StrCat(field, ".containerPath is required");
  }
  static const std::set<std::string, std::less<>> kHookNames = {
      "prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop"};
  for (size_t i = 0; i < edits.hooks.size(); ++i) {
    const Hook& hook = edits.hooks[i];
    std::string field = absl::StrCat(prefix, ".hooks[", i, "]");
    if (kHookNames.count(hook.hook_name) == 0) {
      return absl::StrCat(field, ".hookName \"", hook.hook_name, "\" must be one of ",
                          absl::StrJoin(kHookNames, ", "));
    }
    if (hook.path.empty() || hook.path.front() != '/') {
      return absl::StrCat(field, ".path \"", hook.path, "\" must be an absolute path");
    }
    error = CheckEnv(hook.env, field + ".env");
    if (!error.empty()) return error;
    if (hook.timeout.has_value() && *hook.timeout <= 0) {
      return absl::StrCat(field, ".timeout ", *hook.timeout, " must be greater than 0 seconds");
    }
  }
  if (edits.intel_rdt.has_value()) {
    // Go `ValidateIntelRdt`: closID must be usable as a resctrl directory name; "/" is the
    // root (default) class of service.
    const std::string& clos = edits.intel_rdt->clos_id;
    if (clos != "/" && (clos.size() > 4096 || clos == "." || clos == ".." ||
                        clos.find_first_of("/\n") != std::string::npos)) {
      return absl::StrCat(prefix, ".intelRdt.closID \"", clos,
                          "\" must be a valid file name or \"/\"");
    }
  }
  std::set<std::string> host_names;
  std::set<std::string> names;
  for (size_t i = 0; i < edits.net_devices.size(); ++i) {
    const NetDevice& net = edits.net_devices[i];
    std::string field = absl::StrCat(prefix, ".netDevices[", i, "]");
    if (!IsInterfaceName(net.host_interface_name)) {
      return absl::StrCat(field, ".hostInterfaceName \"", net.host_interface_name,
                          "\" is not a valid interface name (1-15 bytes, no '/', ':' or space)");
    }
    if (!IsInterfaceName(net.name)) {
      return absl::StrCat(field, ".name \"", net.name,
                          "\" is not a valid interface name (1-15 bytes, no '/', ':' or space)");
    }
    if (!host_names.insert(net.host_interface_name).second) {
      return absl::StrCat(field, ".hostInterfaceName \"", net.host_interface_name,
                          "\" is listed twice");
    }
    if (!names.insert(net.name).second) {
      return absl::StrCat(field, ".name \"", net.name, "\" is listed twice");
    }
  }
  return "";
}

// ---- Files ------------------------------------------------------------------------------------

// The name becomes <cdi_root>/<spec_name>.json: one file name (common/path_safety.h's rule), short
// enough that the file and WriteFileDurably's temporary sibling fit NAME_MAX.
absl::Status CheckSpecName(const std::string& cdi_root, const std::string& spec_name) {
  absl::Status valid = ValidateFileName("CDI spec name", spec_name, cdi_root);
  if (!valid.ok()) return valid;
  if (spec_name.size() > kMaxSpecNameLength) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid CDI spec name \"", spec_name, "\": must be at most ", kMaxSpecNameLength,
        " bytes (with \".json\" and a temporary file's prefix and suffix it must fit NAME_MAX)"));
  }
  return absl::OkStatus();
}

// mkdir -p with mode 0755 for every directory created.
absl::Status MakeDirectories(const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError("CDI root directory must not be empty");
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat("CDI root ", path, " is not a directory"));
  }
  const std::string parent = DirectoryOf(path);
  if (parent != path && parent != "." && parent != "/") {
    absl::Status status = MakeDirectories(parent);
    if (!status.ok()) return status;
  }
  if (::mkdir(path.c_str(), 0755) != 0) {
    if (errno == EEXIST) return absl::OkStatus();  // created concurrently
    return ErrnoStatus(errno, absl::StrCat("create CDI root directory ", path));
  }
  // mkdir applies the umask; runtimes running as other users must be able to read the specs.
  if (::chmod(path.c_str(), 0755) != 0) {
    return ErrnoStatus(errno, absl::StrCat("set the mode of ", path));
  }
  return absl::OkStatus();
}

std::string SpecPath(const std::string& cdi_root, const std::string& spec_name) {
  std::string root = cdi_root;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  return absl::StrCat(root, root == "/" ? "" : "/", spec_name, ".json");
}

}  // namespace

bool ContainerEdits::empty() const {
  return env.empty() && device_nodes.empty() && mounts.empty() && hooks.empty() &&
         additional_gids.empty() && !intel_rdt.has_value() && net_devices.empty();
}

std::string MinimumRequiredVersion(const Spec& spec) {
  return ComputeRequirement(spec).version.ToString();
}

absl::Status Validate(const Spec& spec) {
  auto invalid = [&spec](absl::string_view rule) {
    return absl::InvalidArgumentError(absl::StrCat("CDI spec \"", spec.kind, "\": ", rule));
  };
  std::string error = CheckKind(spec.kind);
  if (!error.empty()) return invalid(error);

  if (spec.cdi_version.empty()) return invalid("cdiVersion is required");
  std::optional<Version> declared = ParseKnownVersion(spec.cdi_version);
  if (!declared.has_value()) {
    std::vector<std::string> known;
    for (const Version& v : kKnownVersions) known.push_back(v.ToString());
    return invalid(
        absl::StrCat("cdiVersion \"", spec.cdi_version,
                     "\" is not a known CDI version (known: ", absl::StrJoin(known, ", "), ")"));
  }
  if (*declared < kBaseVersion) {
    return invalid(absl::StrCat("cdiVersion ", declared->ToString(), " is below ",
                                kBaseVersion.ToString(),
                                " (the spec version must be at least v0.3.0)"));
  }
  Requirement required = ComputeRequirement(spec);
  if (*declared < required.version) {
    return invalid(absl::StrCat("cdiVersion ", declared->ToString(), " is below the minimum ",
                                required.version.ToString(), " required by ", required.reason));
  }

  error = CheckAnnotations(spec.annotations, "annotations");
  if (!error.empty()) return invalid(error);
  error = CheckEdits(spec.container_edits, "containerEdits");
  if (!error.empty()) return invalid(error);

  if (spec.devices.empty()) return invalid("devices must list at least one device");
  std::set<absl::string_view> names;
  for (size_t i = 0; i < spec.devices.size(); ++i) {
    const Device& device = spec.devices[i];
    error = CheckDeviceName(device.name);
    if (!error.empty()) return invalid(absl::StrCat("devices[", i, "]: ", error));
    auto device_error = [&](absl::string_view rule) {
      return invalid(absl::StrCat("device \"", device.name, "\": ", rule));
    };
    if (!names.insert(device.name).second) {
      return device_error("the name is used by more than one device");
    }
    error = CheckAnnotations(device.annotations, "annotations");
    if (!error.empty()) return device_error(error);
    // CDI #250 / moby #47633: a device with only spec-level edits is rejected by runtimes.
    if (device.container_edits.empty()) return device_error("containerEdits must not be empty");
    error = CheckEdits(device.container_edits, "containerEdits");
    if (!error.empty()) return device_error(error);
  }
  return absl::OkStatus();
}

std::string QualifiedName(std::string_view kind, std::string_view device_name) {
  return absl::StrCat(Sv(kind), "=", Sv(device_name));
}

absl::Status ParseQualifiedName(std::string_view std_name, std::string* kind, std::string* device) {
  const absl::string_view name = Sv(std_name);
  auto invalid = [name](absl::string_view rule) {
    return absl::InvalidArgumentError(
        absl::StrCat("CDI device name \"", name, "\" is not fully qualified: ", rule));
  };
  // Go `ParseDevice`: "" or a leading '/' is an (unqualified) device path.
  if (name.empty() || name.front() == '/') {
    return invalid("expected <vendor>/<class>=<name>, got a device path or an empty name");
  }
  size_t eq = name.find('=');
  if (eq == absl::string_view::npos || eq == 0 || eq + 1 == name.size()) {
    return invalid("expected <vendor>/<class>=<name> (split at the first '=')");
  }
  absl::string_view qualifier = name.substr(0, eq);
  absl::string_view device_name = name.substr(eq + 1);
  std::string error = CheckKind(qualifier);
  if (error.empty()) error = CheckDeviceName(device_name);
  if (!error.empty()) return invalid(error);
  if (kind != nullptr) *kind = std::string(qualifier);
  if (device != nullptr) *device = std::string(device_name);
  return absl::OkStatus();
}

std::string TransientSpecName(std::string_view vendor, std::string_view class_name,
                              std::string_view transient_id) {
  std::string id(transient_id);
  for (char& c : id) {
    if (c == '/') c = '_';
  }
  return absl::StrCat(Sv(vendor), "-", Sv(class_name), "_", id);
}

absl::Status WriteSpec(const std::string& cdi_root, const std::string& spec_name,
                       const Spec& spec) {
  absl::Status status = CheckSpecName(cdi_root, spec_name);
  if (!status.ok()) return status;
  status = Validate(spec);
  if (!status.ok()) return status;
  status = MakeDirectories(cdi_root);
  if (!status.ok()) return status;
  // WriteFileDurably's temporary file is ".<name>.json.XXXXXX": neither *.json nor *.yaml, so a
  // runtime's directory scan never loads it.
  return WriteFileDurably(SpecPath(cdi_root, spec_name), ToJson(spec), 0644);
}

absl::Status RemoveSpec(const std::string& cdi_root, const std::string& spec_name) {
  absl::Status status = CheckSpecName(cdi_root, spec_name);
  if (!status.ok()) return status;
  const std::string path = SpecPath(cdi_root, spec_name);
  if (::unlink(path.c_str()) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return ErrnoStatus(errno, absl::StrCat("remove CDI spec ", path));
  }
  return absl::OkStatus();
}

}  // namespace kdp::cdi
