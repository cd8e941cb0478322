// Atomic, durable replacement of a file's contents, for state that must survive a crash: the new
// bytes go to a temporary file in the same directory (named with a leading '.', which the
// kubelet's checkpoint store ignores when listing), are fsynced, renamed over the target, and the
// directory is fsynced so the rename itself survives a power loss. Readers see the old file or the
// new one, never a mix.
#ifndef KDP_COMMON_DURABLE_FILE_H_
#define KDP_COMMON_DURABLE_FILE_H_

#include <sys/types.h>

#include <cstddef>
#include <limits>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kdp {

// Replaces `path` with `content` (file mode `mode`). On any error the target is untouched, the
// temporary file is removed, and the status names the path and the failing step (e.g. a full disk
// at write or fsync: RESOURCE_EXHAUSTED).
[[nodiscard]] absl::Status WriteFileDurably(const std::string& path, std::string_view content,
                                            mode_t mode = 0600);

// A status for a failed system call: "<what>: <strerror>", with the code a caller can act on
// (NOT_FOUND, PERMISSION_DENIED incl. a read-only file system, RESOURCE_EXHAUSTED for a full
// disk, quota or file-size limit, else INTERNAL).
absl::Status ErrnoStatus(int error, const std::string& what);
// The directory part of `path` ("." when none, "/" for a file at the root) and the last part.
std::string DirectoryOf(const std::string& path);
std::string BaseName(const std::string& path);

// The whole file; NOT_FOUND when it does not exist, other codes naming the path and the error.
// A file of more than `max_bytes` is not read whole: INVALID_ARGUMENT "<path>: larger than the
// <max_bytes>-byte limit" (a limit for files an operator or a peer controls).
absl::StatusOr<std::string> ReadFile(const std::string& path,
                                     size_t max_bytes = std::numeric_limits<size_t>::max());

}  // namespace kdp

#endif  // KDP_COMMON_DURABLE_FILE_H_
