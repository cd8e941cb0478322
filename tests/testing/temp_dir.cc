#include "tests/testing/temp_dir.h"

#include <stdlib.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace kdp::testing {
namespace {

// Gives the owner rwx on every directory below `root`, so remove_all can unlink their entries
// even when a test made one read-only (permission tests do).
void MakeDirectoriesWritable(const std::filesystem::path& root) {
  std::error_code ec;
  std::filesystem::permissions(root, std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::add, ec);
  for (auto it = std::filesystem::recursive_directory_iterator(
           root, std::filesystem::directory_options::skip_permission_denied, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code ignored;
    if (it->is_directory(ignored) && !it->is_symlink(ignored)) {
      std::filesystem::permissions(it->path(), std::filesystem::perms::owner_all,
                                   std::filesystem::perm_options::add, ignored);
    }
  }
}

}  // namespace

TempDir::TempDir() {
  char templ[] = "/tmp/kdp-XXXXXX";
  if (mkdtemp(templ) == nullptr) {
    std::fprintf(stderr, "kdp::testing::TempDir: mkdtemp(/tmp/kdp-XXXXXX) failed: %s\n",
                 std::strerror(errno));
    std::abort();
  }
  path_ = templ;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
  if (ec) {
    MakeDirectoriesWritable(path_);
    ec.clear();
    std::filesystem::remove_all(path_, ec);
  }
  if (ec) {
    std::fprintf(stderr, "kdp::testing::TempDir: cannot remove %s: %s\n", path_.c_str(),
                 ec.message().c_str());
  }
}

std::string TempDir::Path(absl::string_view name) const { return absl::StrCat(path_, "/", name); }

std::set<std::string> DirectoryTree(const std::string& dir, bool skip_hidden) {
  std::set<std::string> out;
  std::error_code error;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, error);
       it != std::filesystem::recursive_directory_iterator(); it.increment(error)) {
    if (error) break;
    if (skip_hidden && absl::StartsWith(it->path().filename().string(), ".")) continue;
    // Non-throwing and lexical: a file renamed away meanwhile (a running process's temporary)
    // must not throw out of the walk.
    std::error_code type_error;
    const char type = it->is_directory(type_error) ? 'd' : it->is_socket(type_error) ? 's' : 'f';
    out.insert(
        absl::StrCat(std::string(1, type), " ", it->path().lexically_relative(dir).string()));
  }
  return out;
}

}  // namespace kdp::testing
