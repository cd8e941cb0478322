// The rules for names that become part of a filesystem path, shared by the SDK and the manager so
// that each kind of name is checked in one place, before it is joined to a directory: a file name
// inside a known directory (a device plugin's registration endpoint, a CDI spec name, a
// registration socket name, a checkpoint name), an absolute socket path a peer asks to be dialled
// (a plugin's GetInfo endpoint), a UID (a claim UID a driver may put in a file name), a DRA driver
// name (plugins/<driver>/). Every failure is INVALID_ARGUMENT naming the input (quoted as Go's %q
// quotes it, so a NUL byte shows as \x00) and the rule, e.g.
//   invalid endpoint "../x.sock": must be a file name in /var/lib/kubelet/device-plugins, without
//   '/' or ".." (not empty, not "." or "..", no '/' or NUL, at most 255 bytes)
// Also the mode kdp gives the unix sockets it serves (owner only).
//
// Thread-safe: every function here is pure, except RestrictSocketToOwner (one chmod).
#ifndef KDP_COMMON_PATH_SAFETY_H_
#define KDP_COMMON_PATH_SAFETY_H_

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace kdp {

// NAME_MAX on Linux: the longest single file name.
inline constexpr std::size_t kMaxFileNameLength = 255;
// Longest UID ValidateUid accepts (a UUID is 36).
inline constexpr std::size_t kMaxUidLength = 128;
// Longest DRA driver name (resource.k8s.io DriverNameMaxLength).
inline constexpr std::size_t kMaxDriverNameLength = 63;
// The mode of every unix socket kdp serves: only its owner (root on a node, as the kubelet) may
// connect.
inline constexpr mode_t kSocketMode = 0600;

// OK when `name` names one file directly inside `dir`: not empty, not "." or "..", no '/' and no
// NUL, at most kMaxFileNameLength bytes. Otherwise INVALID_ARGUMENT
// `invalid <what> "<name>": must be a file name in <dir>, without '/' or ".." (...)`.
// The kubelet's device manager joins RegisterRequest.endpoint to its device-plugins directory
// (api.proto: "PATH = path.Join(DevicePluginPath, endpoint)"); this keeps the join inside it.
[[nodiscard]] absl::Status ValidateFileName(std::string_view what, std::string_view name,
                                            std::string_view dir);

// OK when `path` is an absolute unix socket path a peer may ask kdp to dial: starts with '/', has
// no ".." component and no NUL, at most kMaxUnixSocketPath (107) bytes. Otherwise INVALID_ARGUMENT
// `invalid <what> "<path>": must be an absolute unix socket path without ".." components (...)`.
[[nodiscard]] absl::Status ValidateSocketPath(std::string_view what, std::string_view path);

// OK when `uid` is a UID kdp may put into a file name: 1 to kMaxUidLength characters, letters,
// digits, '-', '_' and '.', starting with a letter or digit (the API server's UUIDs, and the
// short test UIDs such as "uid-1"); so never "", ".", "..", '/' or NUL. Otherwise
// INVALID_ARGUMENT `invalid <what> "<uid>": must be 1 to 128 letters, digits, ...`.
[[nodiscard]] absl::Status ValidateUid(std::string_view what, std::string_view uid);

// OK when `name` is a DRA driver name as the API server validates ResourceSlice.spec.driver: a
// DNS-1123 subdomain of at most kMaxDriverNameLength characters (so no '/', no "..", lower case).
// Otherwise INVALID_ARGUMENT `invalid driver name "<name>": must be a DNS subdomain of at most
// 63 characters (e.g. "gpu.example.com")`.
[[nodiscard]] absl::Status ValidateDraDriverName(std::string_view name);

// Sets the socket at `path` to kSocketMode. gRPC creates the socket file itself (bind applies the
// umask to 0777), so every server kdp starts on a unix socket calls this right after binding;
// until then the directory (0750 or 0700, created by kdp) keeps others out. Errors name the path.
[[nodiscard]] absl::Status RestrictSocketToOwner(const std::string& path);

}  // namespace kdp

#endif  // KDP_COMMON_PATH_SAFETY_H_
