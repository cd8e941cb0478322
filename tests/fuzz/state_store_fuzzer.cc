// Fuzzes how kdp-manager reads its state back at start (manager/src/state/state_store.h
// StateStore::Open): the pod store `kdp/pods.json`, the device checkpoint and the journal
// `kdp/journal` (manager/src/state/journal/journal.h), all files on disk that a crash, a full disk
// or a hand edit may have damaged. The first input byte picks what the rest of the input is:
//   0: the bytes of pods.json;
//   1: the bytes of the checkpoint;
//   2: a journal written through the Journal API (so frames and CRCs are right): the first line
//      is the header payload, each further line a record payload;
//   3: the raw bytes of the journal file.
// The files live in a per-process directory (in /dev/shm when there is one) emptied after each
// input. Open runs `strict`, so an unreadable file is an error instead of a copy set aside.
//
// Property checked beyond "no crash": Open fails only with DATA_LOSS (a damaged file) or
// FAILED_PRECONDITION/INVALID_ARGUMENT, never with an uncaught exception or another code.
#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "common/logging.h"
#include "manager/src/state/journal/journal.h"
#include "manager/src/state/state_store.h"

namespace {

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "state_store_fuzzer: %s\n%s\n", what, detail.c_str());
  std::abort();
}

const std::string& Dir() {
  static const std::string* const kDir = [] {
    std::error_code ec;
    const bool shm = std::filesystem::is_directory("/dev/shm", ec);
    std::string templ = std::string(shm ? "/dev/shm" : "/tmp") + "/kdp-state-fuzz-XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr) Fail("mkdtemp", templ);
    std::atexit([] {
      std::error_code error;
      std::filesystem::remove_all(Dir(), error);
    });
    return new std::string(templ);
  }();
  return *kDir;
}

void Write(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void Clear() {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(Dir(), ec)) {
    std::filesystem::remove_all(entry.path(), ec);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool kQuiet = [] {
    kdp::log::SetMinLevel(kdp::log::Level::kError);
    return true;
  }();
  (void)kQuiet;
  if (size == 0 || size > 64 * 1024) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  const kdp::manager::StateStoreOptions options{
      .checkpoint_path = Dir() + "/kubelet_internal_checkpoint",
      .pods_path = Dir() + "/pods.json",
      .journal_path = Dir() + "/journal",
      .compaction_delay = absl::Hours(1),
      .strict = true};
  switch (data[0] % 4) {
    case 0:
      Write(options.pods_path, body);
      break;
    case 1:
      Write(options.checkpoint_path, body);
      break;
    case 2: {
      std::vector<std::string> lines =
          absl::StrSplit(absl::string_view(body.data(), body.size()), '\n');
      kdp::manager::JournalContents contents;
      absl::StatusOr<std::unique_ptr<kdp::manager::Journal>> journal =
          kdp::manager::Journal::Open(options.journal_path, lines[0], &contents);
      if (!journal.ok()) Fail("a new journal cannot be written", journal.status().ToString());
      for (size_t i = 1; i < lines.size(); ++i) {
        if (!(*journal)->Append(lines[i], /*sync=*/false).ok()) Fail("Append failed", "");
      }
      break;
    }
    default:
      Write(options.journal_path, body);
      break;
  }
  {
    kdp::manager::RestoredState restored;
    absl::StatusOr<std::unique_ptr<kdp::manager::StateStore>> store =
        kdp::manager::StateStore::Open(options, &restored);
    if (!store.ok()) {
      const absl::StatusCode code = store.status().code();
      if (code != absl::StatusCode::kDataLoss && code != absl::StatusCode::kFailedPrecondition &&
          code != absl::StatusCode::kInvalidArgument) {
        Fail("Open failed with an undocumented code", store.status().ToString());
      }
    }
  }
  Clear();
  return 0;
}
