#include "common/unix_socket.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace kdp {

std::string UnixTarget(absl::string_view path) { return absl::StrCat("unix:", path); }

bool IsSocket(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

absl::Status RemoveSocketIfPresent(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return absl::InternalError(absl::StrCat("stat ", path, ": ", std::strerror(errno)));
  }
  if (!S_ISSOCK(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " exists and is not a unix socket; refusing to remove it"));
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return absl::InternalError(absl::StrCat("remove ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<int> RemoveSocketsIn(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    if (errno == ENOENT) return 0;
    return absl::InternalError(absl::StrCat("open directory ", dir, ": ", std::strerror(errno)));
  }
  int removed = 0;
  std::string errors;
  while (dirent* entry = ::readdir(d)) {
    std::string path = absl::StrCat(dir, "/", entry->d_name);
    if (!IsSocket(path)) continue;
    if (::unlink(path.c_str()) == 0) {
      ++removed;
    } else if (errno != ENOENT) {
      absl::StrAppend(&errors, errors.empty() ? "" : "; ", path, ": ", std::strerror(errno));
    }
  }
  ::closedir(d);
  if (!errors.empty()) return absl::InternalError(absl::StrCat("remove sockets: ", errors));
  return removed;
}

absl::Status MakeDirectories(const std::string& dir, unsigned mode) {
  if (dir.empty()) return absl::InvalidArgumentError("empty directory path");
  std::string partial;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    partial = dir.substr(0, pos);
    if (partial.empty()) continue;
    if (::mkdir(partial.c_str(), mode) != 0 && errno != EEXIST) {
      return absl::InternalError(absl::StrCat("mkdir ", partial, ": ", std::strerror(errno)));
    }
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(dir, " is not a directory"));
  }
  return absl::OkStatus();
}

}  // namespace kdp
