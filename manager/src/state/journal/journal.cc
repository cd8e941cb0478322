#include "manager/src/state/journal/journal.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/durable_file.h"
#include "common/logging.h"
#include "common/status_macros.h"

namespace kdp::manager {
namespace {

constexpr char kMagic[] = "KDPJOURNAL\n";
constexpr size_t kMagicSize = sizeof(kMagic) - 1;
constexpr uint32_t kVersion = 1;
constexpr size_t kFileHeaderSize = kMagicSize + 4;
constexpr size_t kFrameHeaderSize = 4 + 4 + 8;  // length, checksum, seq

// CRC-32C (Castagnoli), reflected, table-driven: the checksum iSCSI, ext4 and LevelDB use. It is
// computed here rather than taken from zlib (whose crc32 is the IEEE polynomial anyway) so the
// manager library gains no link dependency.
constexpr std::array<uint32_t, 256> MakeCrc32cTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1u) ? 0x82F63B78u : 0u);
    table[i] = crc;
  }
  return table;
}
constexpr std::array<uint32_t, 256> kCrc32cTable = MakeCrc32cTable();

// Continues a CRC-32C: pass ~0u as `crc` to start and xor the result with ~0u to finish.
uint32_t Crc32cUpdate(uint32_t crc, std::string_view bytes) {
  for (char c : bytes) {
    crc = kCrc32cTable[(crc ^ static_cast<uint8_t>(c)) & 0xFFu] ^ (crc >> 8);
  }
  return crc;
}

void PutU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xFFu));
}
void PutU64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xFFu));
}
uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}
uint64_t GetU64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

// The checksum over `length | seq | payload`, as the file stores it.
uint32_t FrameChecksum(uint32_t length, uint64_t seq, std::string_view payload) {
  std::string prefix;
  PutU32(&prefix, length);
  PutU64(&prefix, seq);
  return ~Crc32cUpdate(Crc32cUpdate(~0u, prefix), payload);
}

void AppendFrame(std::string* out, uint64_t seq, std::string_view payload) {
  const auto length = static_cast<uint32_t>(payload.size());
  PutU32(out, length);
  PutU32(out, FrameChecksum(length, seq, payload));
  PutU64(out, seq);
  out->append(payload);
}

std::string EncodeFile(std::string_view header, uint64_t header_seq,
                       const std::vector<JournalRecord>& records) {
  size_t total = kFileHeaderSize + kFrameHeaderSize + header.size();
  for (const JournalRecord& r : records) total += kFrameHeaderSize + r.payload.size();
  std::string out;
  out.reserve(total);
  out.append(kMagic, kMagicSize);
  PutU32(&out, kVersion);
  AppendFrame(&out, header_seq, header);
  for (const JournalRecord& r : records) AppendFrame(&out, r.seq, r.payload);
  return out;
}

absl::Status ErrnoStatus(int error, std::string_view what, const std::string& path) {
  return kdp::ErrnoStatus(error, absl::StrCat(std::string(what), " ", path));
}

// Writes all of `bytes` at the file's end. Returns 0, or the errno of the failing write (the file
// may then hold a prefix of `bytes`).
int WriteAll(int fd, std::string_view bytes) {
  size_t written = 0;
  while (written < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    written += static_cast<size_t>(n);
  }
  return 0;
}

absl::StatusOr<std::string> ReadAll(int fd, const std::string& path) {
  std::string content;
  char buffer[65536];
  for (off_t offset = 0;;) {
    ssize_t n = ::pread(fd, buffer, sizeof(buffer), offset);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "read journal", path);
    }
    if (n == 0) return content;
    content.append(buffer, static_cast<size_t>(n));
    offset += n;
  }
}

absl::Status FsyncDirectory(const std::string& dir) {
  int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return ErrnoStatus(errno, "open directory", dir);
  int synced = ::fsync(dir_fd);
  int error = errno;
  ::close(dir_fd);
  if (synced != 0) return ErrnoStatus(error, "fsync directory", dir);
  return absl::OkStatus();
}

absl::Status LockFile(int fd, const std::string& path) {
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno == EWOULDBLOCK) {
      return absl::FailedPreconditionError(
          absl::StrCat("journal ", path, " is already open (another Journal holds its flock)"));
    }
    return ErrnoStatus(errno, "lock journal", path);
  }
  return absl::OkStatus();
}

// A new, complete, fsynced and locked file beside the journal, not yet renamed over it.
struct TempFile {
  std::string name;
  int fd = -1;
};

// Writes `bytes` to `.<name>.XXXXXX` beside `path` (mode 0600, opened O_APPEND | O_CLOEXEC so it
// can serve as the journal's fd once renamed), fsyncs it and locks it. On error nothing is left.
absl::StatusOr<TempFile> WriteTempFile(const std::string& path, std::string_view bytes) {
  TempFile temp{.name = absl::StrCat(DirectoryOf(path), "/.", BaseName(path), ".XXXXXX")};
  temp.fd = ::mkostemp(temp.name.data(), O_APPEND | O_CLOEXEC);
  if (temp.fd < 0) return ErrnoStatus(errno, "create a temporary file beside", path);
  auto fail = [&](std::string_view step, int error) {
    ::close(temp.fd);
    ::unlink(temp.name.c_str());
    return ErrnoStatus(error, absl::StrCat(std::string(step), " ", temp.name, " for"), path);
  };
  if (::fchmod(temp.fd, 0600) != 0) return fail("set the mode of", errno);
  if (int error = WriteAll(temp.fd, bytes); error != 0) return fail("write", error);
  if (::fsync(temp.fd) != 0) return fail("fsync", errno);
  if (absl::Status locked = LockFile(temp.fd, path); !locked.ok()) {
    ::close(temp.fd);
    ::unlink(temp.name.c_str());
    return locked;
  }
  return temp;
}

// Renames `temp` over `path`; on failure removes and closes it.
absl::Status RenameInto(const TempFile& temp, const std::string& path) {
  if (::rename(temp.name.c_str(), path.c_str()) == 0) return absl::OkStatus();
  int error = errno;
  ::close(temp.fd);
  ::unlink(temp.name.c_str());
  return ErrnoStatus(error, "rename a temporary file over", path);
}

struct Parsed {
  std::string header;
  uint64_t header_seq = 0;
  std::vector<JournalRecord> records;
  uint64_t valid_end = 0;  // offset just past the last valid frame
  std::string reason;      // why the bytes after valid_end are invalid; empty when there are none
};

// Reads one frame at `offset`. Returns false with *reason set when there is no valid frame there.
bool ParseFrame(std::string_view file, uint64_t offset, uint64_t* seq, std::string_view* payload,
                std::string* reason) {
  const uint64_t left = file.size() - offset;
  if (left < kFrameHeaderSize) {
    *reason = absl::StrCat("offset ", offset, ": short frame header (", left, " of ",
                           kFrameHeaderSize, " bytes)");
    return false;
  }
  const char* p = file.data() + offset;
  const uint32_t length = GetU32(p);
  if (length > Journal::kMaxPayloadBytes) {
    *reason = absl::StrCat("offset ", offset, ": frame length ", length, " is over the limit of ",
                           Journal::kMaxPayloadBytes, " bytes");
    return false;
  }
  if (left - kFrameHeaderSize < length) {
    *reason = absl::StrCat("offset ", offset, ": short frame (", left, " of ",
                           kFrameHeaderSize + length, " bytes)");
    return false;
  }
  *seq = GetU64(p + 8);
  *payload = file.substr(offset + kFrameHeaderSize, length);
  if (GetU32(p + 4) != FrameChecksum(length, *seq, *payload)) {
    *reason = absl::StrCat("offset ", offset, ": record checksum mismatch");
    return false;
  }
  return true;
}

// DATA_LOSS when `file` is not a journal; else its valid part and why the rest is not.
absl::StatusOr<Parsed> ParseFile(std::string_view file, const std::string& path) {
  auto not_a_journal = [&](std::string_view rule) {
    return absl::DataLossError(
        absl::StrCat("file ", path, " is not a kdp journal: ", std::string(rule)));
  };
  if (file.size() < kFileHeaderSize || file.substr(0, kMagicSize) != kMagic) {
    return not_a_journal("it does not start with the magic \"KDPJOURNAL\\n\" and a version");
  }
  if (uint32_t version = GetU32(file.data() + kMagicSize); version != kVersion) {
    return not_a_journal(absl::StrCat("version ", version, " is not the supported ", kVersion));
  }
  Parsed parsed;
  uint64_t seq = 0;
  std::string_view payload;
  if (!ParseFrame(file, kFileHeaderSize, &seq, &payload, &parsed.reason)) {
    // The header frame is written whole before the file gets its name, so this is no torn append.
    return not_a_journal(absl::StrCat("bad header frame at ", parsed.reason));
  }
  parsed.header = std::string(payload);
  parsed.header_seq = seq;
  uint64_t offset = kFileHeaderSize + kFrameHeaderSize + payload.size();
  uint64_t previous_seq = 0;
  while (offset < file.size()) {
    if (!ParseFrame(file, offset, &seq, &payload, &parsed.reason)) break;
    if (seq <= previous_seq) {
      parsed.reason = absl::StrCat("offset ", offset, ": record seq ", seq, " does not follow seq ",
                                   previous_seq);
      break;
    }
    parsed.records.push_back(JournalRecord{.seq = seq, .payload = std::string(payload)});
    previous_seq = seq;
    offset += kFrameHeaderSize + payload.size();
  }
  parsed.valid_end = offset;
  return parsed;
}

// Saves `file` as `<path>.corrupt-<UTC time>` (with "-N" added if that name is taken) and returns
// the copy's path.
absl::StatusOr<std::string> SaveCorruptCopy(const std::string& path, std::string_view file) {
  const std::string stem = absl::StrCat(
      path, ".corrupt-", absl::FormatTime("%Y%m%dT%H%M%SZ", absl::Now(), absl::UTCTimeZone()));
  std::string name = stem;
  for (int n = 1; ::access(name.c_str(), F_OK) == 0; ++n) name = absl::StrCat(stem, "-", n);
  absl::Status written = WriteFileDurably(name, file);
  if (!written.ok()) {
    return absl::Status(written.code(), absl::StrCat("save a copy of corrupt journal ", path,
                                                     " before cutting it: ", written.message()));
  }
  return name;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Journal>> Journal::Open(const std::string& path,
                                                       std::string_view initial_header,
                                                       JournalContents* contents) {
  JournalContents ignored;
  if (contents == nullptr) contents = &ignored;
  *contents = JournalContents{};

  int fd = ::open(path.c_str(), O_RDWR | O_APPEND | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) {
    if (initial_header.size() > kMaxPayloadBytes) {
      return absl::InvalidArgumentError(absl::StrCat("initial header of journal ", path, " is ",
                                                     initial_header.size(), " bytes, over the ",
                                                     kMaxPayloadBytes, "-byte limit"));
    }
    const std::string bytes = EncodeFile(initial_header, 0, {});
    KDP_ASSIGN_OR_RETURN(TempFile temp, WriteTempFile(path, bytes));
    KDP_RETURN_IF_ERROR(RenameInto(temp, path));
    if (absl::Status synced = FsyncDirectory(DirectoryOf(path)); !synced.ok()) {
      ::close(temp.fd);
      return synced;
    }
    contents->header = std::string(initial_header);
    KDP_LOG_INFO("Created journal", "path", path);
    return std::unique_ptr<Journal>(new Journal(path, temp.fd, 0, bytes.size()));
  }
  if (fd < 0) return ErrnoStatus(errno, "open journal", path);
  auto fail = [fd](absl::Status status) {
    ::close(fd);
    return status;
  };

  if (absl::Status locked = LockFile(fd, path); !locked.ok()) return fail(locked);
  absl::StatusOr<std::string> file = ReadAll(fd, path);
  if (!file.ok()) return fail(file.status());
  absl::StatusOr<Parsed> parsed = ParseFile(*file, path);
  if (!parsed.ok()) return fail(parsed.status());

  if (parsed->valid_end < file->size()) {
    contents->dropped_bytes = file->size() - parsed->valid_end;
    contents->dropped_reason = parsed->reason;
    absl::StatusOr<std::string> copy = SaveCorruptCopy(path, *file);
    if (!copy.ok()) return fail(copy.status());
    contents->corrupt_copy_path = *copy;
    if (::ftruncate(fd, static_cast<off_t>(parsed->valid_end)) != 0) {
      return fail(ErrnoStatus(errno, "cut the corrupt tail off journal", path));
    }
    if (::fsync(fd) != 0) return fail(ErrnoStatus(errno, "fsync journal", path));
    KDP_LOG_WARNING("Cut a torn or corrupt tail off the journal", "path", path, "droppedBytes",
                    contents->dropped_bytes, "reason", contents->dropped_reason, "copy", *copy);
  }

  uint64_t last_seq = parsed->header_seq;
  if (!parsed->records.empty()) last_seq = std::max(last_seq, parsed->records.back().seq);
  contents->header = std::move(parsed->header);
  contents->records = std::move(parsed->records);
  return std::unique_ptr<Journal>(new Journal(path, fd, last_seq, parsed->valid_end));
}

Journal::Journal(std::string path, int fd, uint64_t last_seq, uint64_t size)
    : path_(std::move(path)), fd_(fd), last_seq_(last_seq), size_(size) {}

Journal::~Journal() {
  absl::MutexLock lock(&mu_);
  ::close(fd_);
}

void Journal::CutBackLocked(const absl::Status& cause) {
  while (::ftruncate(fd_, static_cast<off_t>(size_)) != 0) {
    if (errno == EINTR) continue;
    absl::Status cut = ErrnoStatus(errno, "cut a failed append off journal", path_);
    failed_ = absl::InternalError(absl::StrCat(cut.message(), " (after: ", cause.message(), ")"));
    KDP_LOG_ERROR("Journal unusable: a failed append could not be cut off", "path", path_, "error",
                  failed_.message());
    return;
  }
}

absl::StatusOr<uint64_t> Journal::Append(std::string_view payload, bool sync) {
  if (payload.size() > kMaxPayloadBytes) {
    return absl::InvalidArgumentError(absl::StrCat("record of ", payload.size(),
                                                   " bytes for journal ", path_, " is over the ",
                                                   kMaxPayloadBytes, "-byte limit"));
  }
  absl::MutexLock lock(&mu_);
  if (!failed_.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("journal ", path_, " is unusable until rewritten: ", failed_.message()));
  }
  const uint64_t seq = last_seq_ + 1;
  std::string frame;
  frame.reserve(kFrameHeaderSize + payload.size());
  AppendFrame(&frame, seq, payload);
  if (int error = WriteAll(fd_, frame); error != 0) {
    absl::Status status = ErrnoStatus(error, "append to journal", path_);
    CutBackLocked(status);
    return status;
  }
  if (sync && ::fdatasync(fd_) != 0) {
    // The kernel may have dropped dirty pages of earlier unsynced records and will not report it
    // again (the "fsyncgate" behaviour), so the file can no longer be trusted.
    absl::Status status =
        absl::InternalError(absl::StrCat("fdatasync journal ", path_, ": ", std::strerror(errno)));
    CutBackLocked(status);
    failed_ = status;
    return status;
  }
  size_ += frame.size();
  last_seq_ = seq;
  return seq;
}

absl::Status Journal::SyncLocked() {
  if (!failed_.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("journal ", path_, " is unusable until rewritten: ", failed_.message()));
  }
  if (::fdatasync(fd_) != 0) {
    failed_ =
        absl::InternalError(absl::StrCat("fdatasync journal ", path_, ": ", std::strerror(errno)));
    return failed_;
  }
  return absl::OkStatus();
}

absl::Status Journal::Sync() {
  absl::MutexLock lock(&mu_);
  return SyncLocked();
}

absl::Status Journal::Rewrite(std::string_view header, const std::vector<JournalRecord>& records) {
  if (header.size() > kMaxPayloadBytes) {
    return absl::InvalidArgumentError(absl::StrCat("header of ", header.size(),
                                                   " bytes for journal ", path_, " is over the ",
                                                   kMaxPayloadBytes, "-byte limit"));
  }
  uint64_t previous = 0;
  for (const JournalRecord& record : records) {
    if (record.seq <= previous) {
      return absl::InvalidArgumentError(absl::StrCat("rewrite of journal ", path_, ": record seq ",
                                                     record.seq, " is not above ", previous));
    }
    if (record.payload.size() > kMaxPayloadBytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "rewrite of journal ", path_, ": record seq ", record.seq, " has ", record.payload.size(),
          " bytes, over the ", kMaxPayloadBytes, "-byte limit"));
    }
    previous = record.seq;
  }

  absl::MutexLock lock(&mu_);
  const uint64_t last_seq = std::max(last_seq_, previous);
  const std::string bytes = EncodeFile(header, last_seq, records);
  KDP_ASSIGN_OR_RETURN(TempFile temp, WriteTempFile(path_, bytes));
  KDP_RETURN_IF_ERROR(RenameInto(temp, path_));
  // From here the path names the new file: the old one is unlinked, so appending to it would lose
  // the records. Switch even if the directory fsync fails.
  ::close(fd_);
  fd_ = temp.fd;
  size_ = bytes.size();
  last_seq_ = last_seq;
  failed_ = absl::OkStatus();
  if (absl::Status synced = FsyncDirectory(DirectoryOf(path_)); !synced.ok()) {
    return absl::InternalError(absl::StrCat("journal ", path_,
                                            " was rewritten and is in use, but the rename may not "
                                            "survive a power loss: ",
                                            synced.message()));
  }
  return absl::OkStatus();
}

uint64_t Journal::last_seq() const {
  absl::MutexLock lock(&mu_);
  return last_seq_;
}

uint64_t Journal::size_bytes() const {
  absl::MutexLock lock(&mu_);
  return size_;
}

}  // namespace kdp::manager
