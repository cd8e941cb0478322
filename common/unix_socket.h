// Unix-socket and directory helpers shared by the SDK and the manager.
#ifndef KDP_COMMON_UNIX_SOCKET_H_
#define KDP_COMMON_UNIX_SOCKET_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kdp {

// gRPC target for a socket path: "unix:" + path.
std::string UnixTarget(absl::string_view path);

// True when `path` exists and is a unix socket (lstat: a symlink is not followed).
bool IsSocket(const std::string& path);

// Removes `path` when it is a socket; OK when it does not exist. FAILED_PRECONDITION when it
// exists and is not a socket (kdp never deletes a file it does not own).
[[nodiscard]] absl::Status RemoveSocketIfPresent(const std::string& path);

// Removes every socket directly inside `dir`, leaving directories and regular files (the
// checkpoint) alone, as the kubelet's CleanupPluginDirectory does. Returns the names removed.
absl::StatusOr<int> RemoveSocketsIn(const std::string& dir);

// mkdir -p with `mode` for the directories it creates.
[[nodiscard]] absl::Status MakeDirectories(const std::string& dir, unsigned mode = 0750);

// Longest path a unix socket address can hold (sun_path minus the terminating NUL).
constexpr size_t kMaxUnixSocketPath = 107;

}  // namespace kdp

#endif  // KDP_COMMON_UNIX_SOCKET_H_
