// Journal is a crash-safe, append-only file of numbered records, used by kdp-manager to make a
// change durable with one small fdatasync instead of rewriting a multi-megabyte checkpoint; the
// caller (StateStore) appends records and now and then Rewrite()s the file as a new header plus the
// records still needed. The file is kdp's own; its format, version 1, all integers little-endian:
//
//   file   := magic "KDPJOURNAL\n" (11 bytes) | u32 version (= 1) | header frame | record frame*
//   frame  := u32 length | u32 checksum | u64 seq | payload (`length` bytes, at most 64 MiB)
//
// `checksum` is CRC-32C (Castagnoli, reflected polynomial 0x82F63B78, initial value and final xor
// 0xFFFFFFFF) over the 12 bytes `length | seq` followed by the payload. Record seqs are >= 1 and
// strictly increase along the file (gaps are allowed: Rewrite drops records). The header frame's
// payload is the caller's header; its seq is the last seq issued when the file was written (0 for
// a new journal), so numbering continues after a Rewrite that kept no records. A new file and a
// Rewrite are written to a temporary file and renamed into place, so the magic and the header
// frame are always whole; only the tail can be torn by a crash during an append, and Open cuts a
// torn or corrupt tail off (after saving a copy of the file). While open, the file is held with an
// exclusive flock(2), so a second process (or a second Open) cannot append to it concurrently.
//
// Thread-safe: Append may be called from several threads at once. The lock is held across the
// write(2) (and the fdatasync of a synced append), because the file's end and the seq order are
// exactly what it guards; appends are therefore serialized.
#ifndef KDP_MANAGER_SRC_STATE_JOURNAL_JOURNAL_H_
#define KDP_MANAGER_SRC_STATE_JOURNAL_JOURNAL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace kdp::manager {

struct JournalRecord {
  // 1, 2, 3, ... assigned by Append; kept across Rewrite.
  uint64_t seq = 0;
  std::string payload = {};

  friend bool operator==(const JournalRecord&, const JournalRecord&) = default;
};

// What Open() read back.
struct JournalContents {
  // The header payload of the file (the `initial_header` of a new journal, else the last
  // Rewrite's).
  std::string header = {};
  // The valid records, in file order (increasing seq).
  std::vector<JournalRecord> records = {};
  // Bytes after the last valid record that were cut off; 0 when the file was intact.
  uint64_t dropped_bytes = 0;
  // Why they were cut, e.g. "offset 4096: record checksum mismatch"; empty when nothing was.
  std::string dropped_reason = {};
  // Where the file was copied before the cut (`<path>.corrupt-<YYYYMMDDTHHMMSSZ>`); empty when
  // nothing was cut.
  std::string corrupt_copy_path = {};
};

class Journal {
 public:
  // Largest payload (header or record) a frame may carry; a larger stored length is corruption.
  static constexpr uint32_t kMaxPayloadBytes = 64u << 20;

  // Opens the journal at `path`, creating it with `initial_header` when it does not exist (durably:
  // temporary file, fsync, rename, directory fsync); `initial_header` is ignored otherwise. Fills
  // *contents (when not null) with the header and every valid record.
  //
  // A torn or corrupt tail (a short frame, a length over kMaxPayloadBytes, a checksum mismatch or
  // a seq that does not increase) ends the valid part: the whole original file is first copied
  // to `<path>.corrupt-<UTC time>`, then the tail is cut off (ftruncate + fsync) and reported in
  // dropped_bytes/dropped_reason. Records after the first bad frame are dropped too, and their
  // seqs may be issued again. None of this is an error.
  //
  // Errors (all name the path): DATA_LOSS when the file is not a kdp journal (too short, bad
  // magic, unknown version, or a bad header frame), the file then left untouched;
  // FAILED_PRECONDITION when another Journal holds the file; INVALID_ARGUMENT when a new journal's
  // `initial_header` is over kMaxPayloadBytes; other codes from the failing system call (e.g.
  // PERMISSION_DENIED, RESOURCE_EXHAUSTED) when creating, reading, copying or cutting fails, in
  // which case the file is not cut. On error *contents holds nothing to rely on.
  static absl::StatusOr<std::unique_ptr<Journal>> Open(const std::string& path,
                                                       std::string_view initial_header,
                                                       JournalContents* contents);
  ~Journal();  // Closes the file (releasing the lock). Nothing is synced.

  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // Appends one record with seq = last_seq() + 1 and returns that seq. With `sync` the record
  // (and every earlier one) is on disk (fdatasync) when OK is returned; without, it is written
  // (write(2), so a process crash keeps it) and a later Sync() or synced Append makes it durable.
  //
  // Errors name the path; on any of them the seq is not consumed and the file is cut back to its
  // previous end, so no half record sits before later ones. INVALID_ARGUMENT: `payload` is over
  // kMaxPayloadBytes. RESOURCE_EXHAUSTED: the write failed for lack of space (ENOSPC, EDQUOT,
  // EFBIG); the journal stays usable, retrying may work. INTERNAL: another write error, or a
  // failed fdatasync; after a failed fdatasync the kernel may have dropped unsynced pages of
  // earlier records, so the journal stops accepting appends: every later Append and Sync returns
  // FAILED_PRECONDITION until a Rewrite succeeds.
  [[nodiscard]] absl::StatusOr<uint64_t> Append(std::string_view payload, bool sync)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Makes every appended record durable (fdatasync). INTERNAL when it fails (the journal then
  // stops accepting appends, as for a failed synced Append); FAILED_PRECONDITION after such a
  // failure until a Rewrite succeeds.
  [[nodiscard]] absl::Status Sync() ABSL_LOCKS_EXCLUDED(mu_);

  // Atomically and durably replaces the journal with `header` + `records`, their seqs kept: a
  // temporary file `.<name>.XXXXXX` in the same directory is written, fsynced, renamed over the
  // journal, and the directory fsynced. Later appends go to the new file and continue from
  // max(last_seq(), records.back().seq). Appends wait while a Rewrite runs.
  //
  // Errors name the path. INVALID_ARGUMENT: a record seq of 0 or not above the previous one, or a
  // payload over kMaxPayloadBytes. Codes of the failing system call (PERMISSION_DENIED for an
  // unwritable directory, RESOURCE_EXHAUSTED for a full disk, else INTERNAL) when creating,
  // writing, syncing or renaming the temporary file fails: the temporary file is removed and the
  // old journal stays in use, unchanged. The one exception is a failed fsync of the directory
  // after the rename: the new file is then in place and in use (the old one is gone from the
  // directory), but the rename may not survive a power loss; INTERNAL says so.
  [[nodiscard]] absl::Status Rewrite(std::string_view header,
                                     const std::vector<JournalRecord>& records)
      ABSL_LOCKS_EXCLUDED(mu_);

  // The highest seq issued or kept so far (0 for a new journal).
  uint64_t last_seq() const ABSL_LOCKS_EXCLUDED(mu_);
  // The current file size in bytes.
  uint64_t size_bytes() const ABSL_LOCKS_EXCLUDED(mu_);
  const std::string& path() const { return path_; }

 private:
  Journal(std::string path, int fd, uint64_t last_seq, uint64_t size);

  // Cuts the file back to size_ after a failed append; records the error in failed_ when even
  // that fails (the file may now hold a half record).
  void CutBackLocked(const absl::Status& cause) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  [[nodiscard]] absl::Status SyncLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  mutable absl::Mutex mu_;
  int fd_ ABSL_GUARDED_BY(mu_);
  uint64_t last_seq_ ABSL_GUARDED_BY(mu_);
  uint64_t size_ ABSL_GUARDED_BY(mu_);
  // Not OK once the file can no longer be trusted (failed fdatasync, failed cut-back).
  absl::Status failed_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_STATE_JOURNAL_JOURNAL_H_
