// The main() a fuzz target links when the build is not a libFuzzer build (gcc, ThreadSanitizer):
// it feeds every file named on the command line, or found directly in a directory named there,
// to LLVMFuzzerTestOneInput once, so the seeds and the crash reproducers under tests/fuzz are
// regression tests in every build. A directory that does not exist is skipped (a target may have
// no regressions yet); a file that cannot be read fails the run.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

bool RunFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "replay: cannot read %s\n", path.c_str());
    return false;
  }
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // A copy with exactly size bytes, as libFuzzer gives, so reading past the end is caught.
  const std::vector<uint8_t> input(bytes.begin(), bytes.end());
  LLVMFuzzerTestOneInput(input.data(), input.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int files = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg(argv[i]);
    std::error_code ec;
    if (std::filesystem::is_directory(arg, ec)) {
      std::vector<std::filesystem::path> entries;
      for (const auto& entry : std::filesystem::directory_iterator(arg)) {
        if (entry.is_regular_file()) entries.push_back(entry.path());
      }
      std::sort(entries.begin(), entries.end());  // A stable order, for a reproducible run.
      for (const auto& entry : entries) {
        if (!RunFile(entry)) return 1;
        ++files;
      }
    } else if (std::filesystem::exists(arg, ec)) {
      if (!RunFile(arg)) return 1;
      ++files;
    }
  }
  std::printf("replay: %d inputs ran without a finding\n", files);
  return 0;
}
