// TempDir: a fresh, private directory for one test, removed with everything in it (files, unix
// sockets, subdirectories) when the object is destroyed. Names are short (/tmp/kdp-XXXXXX) so
// that socket paths built under it stay far below the 107-byte unix socket limit.
//
// Thread-safety: const-safe; path() may be called from any thread while the object lives.
#ifndef KDP_TESTS_TESTING_TEMP_DIR_H_
#define KDP_TESTS_TESTING_TEMP_DIR_H_

#include <set>
#include <string>

#include "absl/strings/string_view.h"

namespace kdp::testing {

class TempDir {
 public:
  // Creates the directory (mode 0700) with mkdtemp. A test cannot go on without it, so a failure
  // (/tmp missing or full) prints the reason to stderr and aborts the test binary.
  TempDir();
  // Removes the directory recursively, first making any read-only subdirectory writable. Errors
  // are printed to stderr and otherwise ignored: a leftover directory must not fail a test.
  ~TempDir();

  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // The absolute path of the directory, without a trailing slash.
  const std::string& path() const { return path_; }

  // path() + "/" + `name`; does not create anything.
  std::string Path(absl::string_view name) const;

 private:
  std::string path_;
};

// Every entry below `dir`, recursively, as "<type> <relative path>" (type d, s or f): what a test
// compares before and after to show that nothing was written. With `skip_hidden`, entries whose
// name starts with '.' (the temporary files of atomic writes, which come and go) are left out.
// A directory that does not exist gives an empty set.
std::set<std::string> DirectoryTree(const std::string& dir, bool skip_hidden = false);

}  // namespace kdp::testing

#endif  // KDP_TESTS_TESTING_TEMP_DIR_H_
