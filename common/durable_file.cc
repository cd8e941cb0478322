#include "common/durable_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace kdp {

absl::Status ErrnoStatus(int error, const std::string& what) {
  std::string message = absl::StrCat(what, ": ", std::strerror(error));
  switch (error) {
    case ENOENT:
      return absl::NotFoundError(message);
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(message);
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
      return absl::ResourceExhaustedError(message);
    default:
      return absl::InternalError(message);
  }
}

std::string DirectoryOf(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string BaseName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

absl::Status WriteFileDurably(const std::string& path, std::string_view content, mode_t mode) {
  const std::string dir = DirectoryOf(path);
  std::string temp = absl::StrCat(dir, "/.", BaseName(path), ".XXXXXX");
  int fd = ::mkstemp(temp.data());
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("create a temporary file beside ", path));
  auto fail = [&](const std::string& step) {
    int error = errno;
    ::close(fd);
    ::unlink(temp.c_str());
    return ErrnoStatus(error, absl::StrCat(step, " ", path));
  };
  if (::fchmod(fd, mode) != 0) return fail("set the mode of");
  for (size_t written = 0; written < content.size();) {
    ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("write");
    }
    written += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) return fail("fsync");
  if (::close(fd) != 0) {
    int error = errno;
    ::unlink(temp.c_str());
    return ErrnoStatus(error, absl::StrCat("close ", path));
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    int error = errno;
    ::unlink(temp.c_str());
    return ErrnoStatus(error, absl::StrCat("rename over ", path));
  }
  int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return ErrnoStatus(errno, absl::StrCat("open directory ", dir));
  int synced = ::fsync(dir_fd);
  int error = errno;
  ::close(dir_fd);
  if (synced != 0) return ErrnoStatus(error, absl::StrCat("fsync directory ", dir));
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFile(const std::string& path, size_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("open ", path));
  std::string content;
  char buffer[65536];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      int error = errno;
      ::close(fd);
      return ErrnoStatus(error, absl::StrCat("read ", path));
    }
    if (n == 0) break;
    if (static_cast<size_t>(n) > max_bytes - content.size()) {
      ::close(fd);
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": larger than the ", max_bytes, "-byte limit"));
    }
    content.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return content;
}

}  // namespace kdp
