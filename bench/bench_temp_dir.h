// TempDir for the benchmark programs: a fresh directory, removed with everything in it when the
// TempDir goes. The tests' kdp::testing::TempDir lives in kdp_testing, which links GoogleTest and
// exists only when the tests are built; the benchmarks build without them.
// Not thread-safe; one owner.
#ifndef KDP_BENCH_BENCH_TEMP_DIR_H_
#define KDP_BENCH_BENCH_TEMP_DIR_H_

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

namespace kdp::bench {

class TempDir {
 public:
  // $TMPDIR, else /tmp.
  static std::string DefaultBase() {
    const char* base = std::getenv("TMPDIR");
    return base != nullptr ? base : "/tmp";
  }

  // Creates <base>/<prefix>XXXXXX; path() is empty when mkdtemp fails (errno says why).
  explicit TempDir(std::string_view prefix, const std::string& base = DefaultBase())
      : path_(base + "/" + std::string(prefix) + "XXXXXX") {
    if (mkdtemp(path_.data()) == nullptr) path_.clear();
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace kdp::bench

#endif  // KDP_BENCH_BENCH_TEMP_DIR_H_
