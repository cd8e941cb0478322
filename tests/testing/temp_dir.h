// TempDir: a fresh, private directory for one test, removed with everything in it (files, unix
// sockets, subdirectories) when the object is destroyed. Names are short (/tmp/kdp-XXXXXX) so
// that socket paths built under it stay far below the 107-byte unix socket limit.
//
// Thread-safety: const-safe; path() may be called from any thread while the object lives.
#ifndef KDP_TESTS_TESTING_TEMP_DIR_H_
#define KDP_TESTS_TESTING_TEMP_DIR_H_

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

}  // namespace kdp::testing

#endif  // KDP_TESTS_TESTING_TEMP_DIR_H_
