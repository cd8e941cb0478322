// Validation of names that become part of a path, and the mode of kdp's sockets (path_safety.h).
#include "common/path_safety.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/absl_view.h"
#include "common/resource_name.h"
#include "common/unix_socket.h"

namespace kdp {
namespace {

absl::Status Invalid(std::string_view what, std::string_view value, std::string_view rule) {
  return absl::InvalidArgumentError(
      absl::StrCat("invalid ", Sv(what), " ", GoQuote(value), ": ", Sv(rule)));
}

bool IsAsciiAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

}  // namespace

absl::Status ValidateFileName(std::string_view what, std::string_view name, std::string_view dir) {
  if (name.empty() || name == "." || name == ".." ||
      name.find_first_of(std::string_view("/\0", 2)) != std::string_view::npos ||
      name.size() > kMaxFileNameLength) {
    return Invalid(what, name,
                   absl::StrCat("must be a file name in ", Sv(dir),
                                ", without '/' or \"..\" (not empty, not \".\" or \"..\", no '/' "
                                "or NUL, at most ",
                                kMaxFileNameLength, " bytes)"));
  }
  return absl::OkStatus();
}

absl::Status ValidateSocketPath(std::string_view what, std::string_view path) {
  bool dot_dot = false;
  for (size_t start = 0; start < path.size();) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    if (path.substr(start, end - start) == "..") dot_dot = true;
    start = end + 1;
  }
  if (path.empty() || path.front() != '/' || dot_dot || path.find('\0') != std::string_view::npos ||
      path.size() > kMaxUnixSocketPath) {
    return Invalid(what, path,
                   absl::StrCat("must be an absolute unix socket path without \"..\" components "
                                "or NUL, at most ",
                                kMaxUnixSocketPath, " bytes"));
  }
  return absl::OkStatus();
}

absl::Status ValidateUid(std::string_view what, std::string_view uid) {
  bool valid = !uid.empty() && uid.size() <= kMaxUidLength && IsAsciiAlnum(uid.front());
  for (char c : uid) {
    if (!IsAsciiAlnum(c) && c != '-' && c != '_' && c != '.') valid = false;
  }
  if (!valid) {
    return Invalid(what, uid,
                   absl::StrCat("must be 1 to ", kMaxUidLength,
                                " letters, digits, '-', '_' or '.', starting with a letter or "
                                "digit (a UID such as \"5b1c3e0a-9d7e-4f7a-8a51-2f3c4d5e6f70\")"));
  }
  return absl::OkStatus();
}

absl::Status ValidateDraDriverName(std::string_view name) {
  if (name.size() > kMaxDriverNameLength || !IsDns1123Subdomain(name)) {
    return Invalid("driver name", name,
                   absl::StrCat("must be a DNS subdomain of at most ", kMaxDriverNameLength,
                                " characters (e.g. \"gpu.example.com\")"));
  }
  return absl::OkStatus();
}

absl::Status RestrictSocketToOwner(const std::string& path) {
  if (::chmod(path.c_str(), kSocketMode) != 0) {
    return absl::InternalError(
        absl::StrCat("set the mode of socket ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace kdp
