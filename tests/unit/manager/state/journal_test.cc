// The journal: the documented byte format, numbering across reopen and Rewrite, cutting torn and
// corrupt tails (with a saved copy), refusing files that are not journals, failed writes that must
// leave no half record behind, and concurrent appends.
#include "manager/src/state/journal/journal.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/file_size_limit.h"
#include "tests/testing/temp_dir.h"

namespace kdp::manager {
namespace {

using ::kdp::testing::ScopedFileSizeLimit;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

constexpr char kMagicAndVersion[] = "KDPJOURNAL\n\x01\x00\x00\x00";
constexpr size_t kMagicAndVersionSize = sizeof(kMagicAndVersion) - 1;
constexpr size_t kFrameHeaderSize = 16;

// Bitwise CRC-32C, written independently of journal.cc's table-driven one.
uint32_t Crc32c(std::string_view bytes) {
  uint32_t crc = ~0u;
  for (char c : bytes) {
    crc ^= static_cast<uint8_t>(c);
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return ~crc;
}

std::string Le(uint64_t v, int bytes) {
  std::string out;
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  return out;
}

// A frame as the header comment of journal.h describes it.
std::string Frame(uint64_t seq, std::string_view payload) {
  const std::string length = Le(payload.size(), 4);
  const std::string seq_bytes = Le(seq, 8);
  return absl::StrCat(length, Le(Crc32c(absl::StrCat(length, seq_bytes, std::string(payload))), 4),
                      seq_bytes, std::string(payload));
}

std::string FileStart(std::string_view header, uint64_t header_seq = 0) {
  return absl::StrCat(std::string(kMagicAndVersion, kMagicAndVersionSize),
                      Frame(header_seq, header));
}

std::string ReadJournalFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void WriteJournalFile(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

// Names of the entries of `dir`, ordered.
std::vector<std::string> ListDir(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    names.insert(entry.path().filename().string());
  }
  return {names.begin(), names.end()};
}

std::unique_ptr<Journal> OpenOrDie(const std::string& path, JournalContents* contents,
                                   std::string_view initial_header = "hdr") {
  absl::StatusOr<std::unique_ptr<Journal>> journal = Journal::Open(path, initial_header, contents);
  EXPECT_TRUE(journal.ok()) << journal.status();
  return journal.ok() ? std::move(*journal) : nullptr;
}

TEST(Journal, TestChecksumIsCrc32c) {
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);  // the standard CRC-32C check value
}

TEST(Journal, WritesTheDocumentedFormat) {
  kdp::testing::TempDir dir;
  const std::string path = dir.Path("journal");
  {
    std::unique_ptr<Journal> journal = OpenOrDie(path, nullptr, "the header");
    ASSERT_NE(journal, nullptr);
    ASSERT_TRUE(journal->Append("one", /*sync=*/true).ok());
    ASSERT_TRUE(journal->Append("", /*sync=*/false).ok());
    EXPECT_EQ(journal->size_bytes(), ReadJournalFile(path).size());
  }
  EXPECT_EQ(ReadJournalFile(path),
            absl::StrCat(FileStart("the header"), Frame(1, "one"), Frame(2, "")));
  EXPECT_EQ((std::filesystem::status(path).permissions() & std::filesystem::perms::all),
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
}

TEST(Journal, CreatesAndReopensWithTheHeader) {
  kdp::testing::TempDir dir;
  const std::string path = dir.Path("journal");
  JournalContents contents;
  {
    std::unique_ptr<Journal> journal = OpenOrDie(path, &contents, "first header");
    ASSERT_NE(journal, nullptr);
    EXPECT_EQ(contents.header, "first header");
    EXPECT_THAT(contents.records, IsEmpty());
    EXPECT_EQ(contents.dropped_bytes, 0u);
    EXPECT_EQ(journal->last_seq(), 0u);
    EXPECT_EQ(journal->path(), path);
  }
  EXPECT_THAT(ListDir(dir.path()), ElementsAre("journal"));  // no temporary file left

  std::unique_ptr<Journal> reopened = OpenOrDie(path, &contents, "ignored header");
  ASSERT_NE(reopened, nullptr);
  EXPECT_EQ(contents.header, "first header");
  EXPECT_THAT(contents.records, IsEmpty());
  EXPECT_EQ(reopened->last_seq(), 0u);
}

TEST(Journal, NumbersRecordsFromOne) {
  kdp::testing::TempDir dir;
  std::unique_ptr<Journal> journal = OpenOrDie(dir.Path("journal"), nullptr);
  ASSERT_NE(journal, nullptr);
  for (uint64_t want = 1; want <= 3; ++want) {
    absl::StatusOr<uint64_t> seq = journal->Append(absl::StrCat("r", want), want % 2 == 0);
    ASSERT_TRUE(seq.ok()) << seq.status();
    EXPECT_EQ(*seq, want);
    EXPECT_EQ(journal->last_seq(), want);
  }
}

TEST(Journal, SyncedAndUnsyncedAppendsAreReadBack) {
  kdp::testing::TempDir dir;
  const std::string path = dir.Path("journal");
  {
    std::unique_ptr<Journal> journal = OpenOrDie(path, nullptr);
    ASSERT_NE(journal, nullptr);
    ASSERT_TRUE(journal->Append("synced", /*sync=*/true).ok());
    ASSERT_TRUE(journal->Append("unsynced", /*sync=*/false).ok());
    ASSERT_TRUE(journal->Sync().ok());
    ASSERT_TRUE(journal->Append(std::string("bin\0ary", 7), /*sync=*/false).ok());
  }
  JournalContents contents;
  std::unique_ptr<Journal> journal = OpenOrDie(path, &contents);
  ASSERT_NE(journal, nullptr);
  EXPECT_EQ(contents.header, "hdr");
  EXPECT_THAT(contents.records,
              ElementsAre(JournalRecord{1, "synced"}, JournalRecord{2, "unsynced"},
                          JournalRecord{3, std::string("bin\0ary", 7)}));
  EXPECT_EQ(contents.dropped_bytes, 0u);
  EXPECT_THAT(contents.dropped_reason, IsEmpty());
  EXPECT_THAT(contents.corrupt_copy_path, IsEmpty());
  EXPECT_THAT(ListDir(dir.path()), ElementsAre("journal"));
  absl::StatusOr<uint64_t> seq = journal->Append("next", /*sync=*/true);
  ASSERT_TRUE(seq.ok());
  EXPECT_EQ(*seq, 4u);
}

TEST(Journal, CutsATornLastRecordAtEveryLength) {
  // What a crash in the middle of an append leaves: any prefix of the last frame.
  const std::string intact = absl::StrCat(FileStart("hdr"), Frame(1, "first"), Frame(2, "second"));
  const std::string last = Frame(3, "the third record");
  for (size_t kept = 1; kept < last.size(); ++kept) {
    SCOPED_TRACE(absl::StrCat("kept ", kept, " of ", last.size(), " bytes of the last frame"));
    kdp::testing::TempDir dir;
    const std::string path = dir.Path("journal");
    const std::string torn = absl::StrCat(intact, last.substr(0, kept));
    WriteJournalFile(path, torn);

    JournalContents contents;
    {
      std::unique_ptr<Journal> journal = OpenOrDie(path, &contents);
      ASSERT_NE(journal, nullptr);
      EXPECT_THAT(contents.records,
                  ElementsAre(JournalRecord{1, "first"}, JournalRecord{2, "second"}));
      EXPECT_EQ(contents.dropped_bytes, kept);
      EXPECT_THAT(contents.dropped_reason,
                  HasSubstr(absl::StrCat("offset ", intact.size(), ": short frame")));
      EXPECT_EQ(ReadJournalFile(path), intact);
      EXPECT_EQ(journal->size_bytes(), intact.size());
      EXPECT_THAT(contents.corrupt_copy_path, StartsWith(path + ".corrupt-"));
      EXPECT_EQ(ReadJournalFile(contents.corrupt_copy_path), torn);

      absl::StatusOr<uint64_t> seq = journal->Append("after the cut", /*sync=*/true);
      ASSERT_TRUE(seq.ok()) << seq.status();
      EXPECT_EQ(*seq, 3u);
    }
    std::vector<std::string> names = ListDir(dir.path());
    ASSERT_EQ(names.size(), 2u);
    EXPECT_EQ(names[0], "journal");
    EXPECT_THAT(names[1], ::testing::MatchesRegex("journal\\.corrupt-[0-9]{8}T[0-9]{6}Z"));

    std::unique_ptr<Journal> reopened = OpenOrDie(path, &contents);
    ASSERT_NE(reopened, nullptr);
    EXPECT_THAT(contents.records, ElementsAre(JournalRecord{1, "first"}, JournalRecord{2, "second"},
                                              JournalRecord{3, "after the cut"}));
    EXPECT_EQ(contents.dropped_bytes, 0u);
  }
}

TEST(Journal, DropsEverythingFromACorruptRecordOn) {
  kdp::testing::TempDir dir;
  const std::string path = dir.Path("journal");
  const std::string before = absl::StrCat(FileStart("hdr"), Frame(1, "first"));
  std::string file = absl::StrCat(before, Frame(2, "second"), Frame(3, "third"));
  file[before.size() + kFrameHeaderSize + 3] ^= 0x01;  // a bit of "second"
  WriteJournalFile(path, file);

  JournalContents contents;
  std::unique_ptr<Journal> journal = OpenOrDie(path, &contents);
  ASSERT_NE(journal, nullptr);
  EXPECT_THAT(contents.records, ElementsAre(JournalRecord{1, "first"}));
  EXPECT_EQ(contents.dropped_bytes, file.size() - before.size());
  EXPECT_EQ(contents.dropped_reason,
            absl::StrCat("offset ", before.size(), ": record checksum mismatch"));
  EXPECT_EQ(ReadJournalFile(path), before);
  EXPECT_EQ(ReadJournalFile(contents.corrupt_copy_path), file);
  EXPECT_EQ(journal->last_seq(), 1u);
}

TEST(Journal, DropsAFrameWithAGarbageLength) {
  const std::string before = absl::StrCat(FileStart("hdr"), Frame(1, "first"));
  struct Case {
    uint32_t length;
    std::string reason;
  };
  for (const Case& c : {Case{0xFFFFFFFFu, "is over the limit"}, Case{1u << 20, "short frame"}}) {
    SCOPED_TRACE(c.length);
    kdp::testing::TempDir dir;
    const std::string path = dir.Path("journal");
    std::string garbage = absl::StrCat(Frame(2, "second"), Frame(3, "third"));
    garbage.replace(0, 4, Le(c.length, 4));
    WriteJournalFile(path, absl::StrCat(before, garbage));

    JournalContents contents;
    std::unique_ptr<Journal> journal = OpenOrDie(path, &contents);
    ASSERT_NE(journal, nullptr);
    EXPECT_THAT(contents.records, ElementsAre(JournalRecord{1, "first"}));
    EXPECT_EQ(contents.dropped_bytes, garbage.size());
    EXPECT_THAT(contents.dropped_reason, HasSubstr(c.reason));
    EXPECT_EQ(ReadJournalFile(path), before);
  }
}

TEST(Journal, DropsAZeroFilledTail) {
  // A crash can leave the file longer than the data that reached the disk, the rest read as zeros.
  kdp::testing::TempDir dir;
  const std::string path = dir.Path("journal");
  const std::string before = absl::StrCat(FileStart("hdr"), Frame(1, "first"));
  WriteJournalFile(path, absl::StrCat(before, std::string(4096, '\0')));

  JournalContents contents;
  std::unique_ptr<Journal> journal = OpenOrDie(path, &contents);
  ASSERT_NE(journal, nullptr);
  EXPECT_THAT(contents.records, ElementsAre(JournalRecord{1, "first"}));
  EXPECT_EQ(contents.dropped_bytes, 4096u);
  EXPECT_EQ(contents.dropped_reason,
            absl::StrCat("offset ", before.size(), ": record checksum mismatch"));
  EXPECT_EQ(ReadJournalFile(path), before);
}

TEST(Journal, DropsARecordWhoseSeqDoesNotIncrease) {
  kdp::testing::TempDir dir;
  const std::string path = dir.Path("journal");
  const std::string before = absl::StrCat(FileStart("hdr"), Frame(4, "four"));
  WriteJournalFile(path, absl::StrCat(before, Frame(4, "four again"), Frame(5, "five")));

  JournalContents contents;
  std::unique_ptr<Journal> journal = OpenOrDie(path, &contents);
  ASSERT_NE(journal, nullptr);
  EXPECT_THAT(contents.records, ElementsAre(JournalRecord{4, "four"}));
  EXPECT_EQ(contents.dropped_reason,
            absl::StrCat("offset ", before.size(), ": record seq 4 does not follow seq 4"));
  absl::StatusOr<uint64_t> seq = journal->Append("five", false);
  ASSERT_TRUE(seq.ok());
  EXPECT_EQ(*seq, 5u);
}

TEST(Journal, RejectsAFileThatIsNotAJournal) {
  struct Case {
    std::string name;
    std::string bytes;
    std::string rule;
  };
  const std::string bad_header_frame = FileStart("hdr").substr(0, kMagicAndVersionSize + 10);
  const std::vector<Case> cases = {
      {"empty", "", "magic"},
      {"text", "this is not a journal, but quite long enough\n", "magic"},
      {"version 2", absl::StrCat("KDPJOURNAL\n", Le(2, 4), Frame(0, "hdr")), "version 2"},
      {"torn header frame", bad_header_frame, "bad header frame"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    kdp::testing::TempDir dir;
    const std::string path = dir.Path("journal");
    WriteJournalFile(path, c.bytes);
    JournalContents contents;
    absl::StatusOr<std::unique_ptr<Journal>> journal = Journal::Open(path, "hdr", &contents);
    ASSERT_FALSE(journal.ok());
    EXPECT_EQ(journal.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(journal.status().message(), HasSubstr(path));
    EXPECT_THAT(journal.status().message(), HasSubstr(c.rule));
    EXPECT_EQ(ReadJournalFile(path), c.bytes);
    EXPECT_THAT(ListDir(dir.path()), ElementsAre("journal"));
  }
}

TEST(Journal, RefusesASecondOpenOfTheSameFile) {
  kdp::testing::TempDir dir;
  const std::string path = dir.Path("journal");
  std::unique_ptr<Journal> journal = OpenOrDie(path, nullptr);
  ASSERT_NE(journal, nullptr);
  absl::StatusOr<std::unique_ptr<Journal>> second = Journal::Open(path, "hdr", nullptr);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(second.status().message(), HasSubstr(path));

  // The rewritten file is locked before it takes the journal's name.
  ASSERT_TRUE(journal->Rewrite("new header", {}).ok());
  second = Journal::Open(path, "hdr", nullptr);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  journal.reset();
  EXPECT_NE(OpenOrDie(path, nullptr), nullptr);
}

TEST(Journal, OpenInAMissingDirectoryIsNotFound) {
  kdp::testing::TempDir dir;
  const std::string path = dir.Path("missing/journal");
  absl::StatusOr<std::unique_ptr<Journal>> journal = Journal::Open(path, "hdr", nullptr);
  EXPECT_EQ(journal.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(journal.status().message(), HasSubstr(path));
}

TEST(Journal, RewriteKeepsSeqsAndAppendsContinue) {
  kdp::testing::TempDir dir;
  const std::string path = dir.Path("journal");
  {
    std::unique_ptr<Journal> journal = OpenOrDie(path, nullptr);
    ASSERT_NE(journal, nullptr);
    for (int i = 1; i <= 5; ++i) ASSERT_TRUE(journal->Append(absl::StrCat("r", i), false).ok());
    ASSERT_TRUE(journal->Rewrite("snapshot", {{2, "r2"}, {4, "r4"}}).ok());
    EXPECT_EQ(journal->last_seq(), 5u);
    EXPECT_EQ(journal->size_bytes(), ReadJournalFile(path).size());
    absl::StatusOr<uint64_t> seq = journal->Append("r6", /*sync=*/true);
    ASSERT_TRUE(seq.ok());
    EXPECT_EQ(*seq, 6u);
    // Records above last_seq() are allowed; numbering continues after them.
    ASSERT_TRUE(journal->Rewrite("snapshot 2", {{6, "r6"}, {10, "r10"}}).ok());
    EXPECT_EQ(journal->last_seq(), 10u);
    seq = journal->Append("r11", /*sync=*/true);
    ASSERT_TRUE(seq.ok());
    EXPECT_EQ(*seq, 11u);
  }
  EXPECT_THAT(ListDir(dir.path()), ElementsAre("journal"));
  JournalContents contents;
  std::unique_ptr<Journal> journal = OpenOrDie(path, &contents);
  ASSERT_NE(journal, nullptr);
  EXPECT_EQ(contents.header, "snapshot 2");
  EXPECT_THAT(contents.records, ElementsAre(JournalRecord{6, "r6"}, JournalRecord{10, "r10"},
                                            JournalRecord{11, "r11"}));
}

TEST(Journal, RewriteWithoutRecordsKeepsTheNumberingAcrossReopen) {
  kdp::testing::TempDir dir;
  const std::string path = dir.Path("journal");
  {
    std::unique_ptr<Journal> journal = OpenOrDie(path, nullptr);
    ASSERT_NE(journal, nullptr);
    for (int i = 1; i <= 3; ++i) ASSERT_TRUE(journal->Append("r", false).ok());
    ASSERT_TRUE(journal->Rewrite("empty", {}).ok());
  }
  EXPECT_EQ(ReadJournalFile(path), FileStart("empty", /*header_seq=*/3));
  JournalContents contents;
  std::unique_ptr<Journal> journal = OpenOrDie(path, &contents);
  ASSERT_NE(journal, nullptr);
  EXPECT_THAT(contents.records, IsEmpty());
  EXPECT_EQ(journal->last_seq(), 3u);
  absl::StatusOr<uint64_t> seq = journal->Append("r4", true);
  ASSERT_TRUE(seq.ok());
  EXPECT_EQ(*seq, 4u);
}

TEST(Journal, RewriteRejectsSeqsThatDoNotIncrease) {
  kdp::testing::TempDir dir;
  const std::string path = dir.Path("journal");
  std::unique_ptr<Journal> journal = OpenOrDie(path, nullptr);
  ASSERT_NE(journal, nullptr);
  ASSERT_TRUE(journal->Append("r1", true).ok());
  const std::string bytes = ReadJournalFile(path);
  for (const std::vector<JournalRecord>& records :
       {std::vector<JournalRecord>{{0, "zero"}}, std::vector<JournalRecord>{{2, "a"}, {2, "b"}},
        std::vector<JournalRecord>{{3, "a"}, {1, "b"}}}) {
    absl::Status status = journal->Rewrite("new", records);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_THAT(status.message(), HasSubstr(path));
  }
  EXPECT_EQ(ReadJournalFile(path), bytes);
  EXPECT_EQ(journal->last_seq(), 1u);
}

// Checks that `journal` (holding records r1, r2 at `path`) still appends to the same file after a
// failed Rewrite.
void ExpectOldJournalKeepsWorking(std::unique_ptr<Journal> journal, const std::string& path,
                                  const std::string& old_bytes) {
  EXPECT_EQ(ReadJournalFile(path), old_bytes);
  EXPECT_EQ(journal->last_seq(), 2u);
  absl::StatusOr<uint64_t> seq = journal->Append("r3", /*sync=*/true);
  ASSERT_TRUE(seq.ok()) << seq.status();
  EXPECT_EQ(*seq, 3u);
  journal.reset();
  JournalContents contents;
  std::unique_ptr<Journal> reopened = OpenOrDie(path, &contents);
  ASSERT_NE(reopened, nullptr);
  EXPECT_EQ(contents.header, "hdr");
  EXPECT_THAT(contents.records,
              ElementsAre(JournalRecord{1, "r1"}, JournalRecord{2, "r2"}, JournalRecord{3, "r3"}));
}

TEST(Journal, RewriteInAReadOnlyDirectoryKeepsTheOldJournal) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
  kdp::testing::TempDir dir;
  const std::string sub = dir.Path("state");
  ASSERT_TRUE(std::filesystem::create_directory(sub));
  const std::string path = sub + "/journal";
  std::unique_ptr<Journal> journal = OpenOrDie(path, nullptr);
  ASSERT_NE(journal, nullptr);
  ASSERT_TRUE(journal->Append("r1", false).ok());
  ASSERT_TRUE(journal->Append("r2", false).ok());
  const std::string old_bytes = ReadJournalFile(path);

  ASSERT_EQ(::chmod(sub.c_str(), 0500), 0);
  absl::Status status = journal->Rewrite("new", {{2, "r2"}});
  EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied) << status;
  EXPECT_THAT(status.message(), HasSubstr(path));
  ASSERT_EQ(::chmod(sub.c_str(), 0700), 0);
  EXPECT_THAT(ListDir(sub), ElementsAre("journal"));
  ExpectOldJournalKeepsWorking(std::move(journal), path, old_bytes);
}

TEST(Journal, RewriteThatCannotBeWrittenKeepsTheOldJournal) {
  kdp::testing::TempDir dir;
  const std::string path = dir.Path("journal");
  std::unique_ptr<Journal> journal = OpenOrDie(path, nullptr);
  ASSERT_NE(journal, nullptr);
  ASSERT_TRUE(journal->Append("r1", false).ok());
  ASSERT_TRUE(journal->Append("r2", false).ok());
  const std::string old_bytes = ReadJournalFile(path);
  {
    ScopedFileSizeLimit limit(old_bytes.size() + 10);
    absl::Status status = journal->Rewrite(std::string(100, 'h'), {{2, "r2"}});
    EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
    EXPECT_THAT(status.message(), HasSubstr(path));
  }
  EXPECT_THAT(ListDir(dir.path()), ElementsAre("journal"));  // the temporary file is gone
  ExpectOldJournalKeepsWorking(std::move(journal), path, old_bytes);
}

TEST(Journal, FailedAppendIsCutBackAndKeepsItsSeq) {
  kdp::testing::TempDir dir;
  const std::string path = dir.Path("journal");
  std::unique_ptr<Journal> journal = OpenOrDie(path, nullptr);
  ASSERT_NE(journal, nullptr);
  ASSERT_TRUE(journal->Append("r1", true).ok());
  const std::string old_bytes = ReadJournalFile(path);
  {
    // Room for part of the next frame: the write comes back short, then fails.
    ScopedFileSizeLimit limit(old_bytes.size() + 20);
    absl::StatusOr<uint64_t> seq = journal->Append(std::string(100, 'x'), /*sync=*/true);
    EXPECT_EQ(seq.status().code(), absl::StatusCode::kResourceExhausted) << seq.status();
    EXPECT_THAT(seq.status().message(), HasSubstr(path));
    EXPECT_EQ(ReadJournalFile(path), old_bytes);  // no half record left
    EXPECT_EQ(journal->size_bytes(), old_bytes.size());
    EXPECT_EQ(journal->last_seq(), 1u);
  }
  absl::StatusOr<uint64_t> seq = journal->Append("r2", /*sync=*/true);
  ASSERT_TRUE(seq.ok()) << seq.status();
  EXPECT_EQ(*seq, 2u);
  journal.reset();
  JournalContents contents;
  ASSERT_NE(OpenOrDie(path, &contents), nullptr);
  EXPECT_THAT(contents.records, ElementsAre(JournalRecord{1, "r1"}, JournalRecord{2, "r2"}));
  EXPECT_EQ(contents.dropped_bytes, 0u);
}

TEST(Journal, RejectsAPayloadOverTheLimit) {
  kdp::testing::TempDir dir;
  const std::string path = dir.Path("journal");
  std::unique_ptr<Journal> journal = OpenOrDie(path, nullptr);
  ASSERT_NE(journal, nullptr);
  const std::string big(Journal::kMaxPayloadBytes + 1, 'x');
  EXPECT_EQ(journal->Append(big, false).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(journal->Rewrite(big, {}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(journal->last_seq(), 0u);
  EXPECT_EQ(ReadJournalFile(path), FileStart("hdr"));
}

TEST(Journal, ConcurrentAppendsGetUniqueSeqs) {
  kdp::testing::TempDir dir;
  const std::string path = dir.Path("journal");
  constexpr int kThreads = 4;
  constexpr int kPerThread = 100;
  std::vector<std::vector<uint64_t>> seqs(kThreads);
  {
    std::unique_ptr<Journal> journal = OpenOrDie(path, nullptr);
    ASSERT_NE(journal, nullptr);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kPerThread; ++i) {
          absl::StatusOr<uint64_t> seq =
              journal->Append(absl::StrCat("t", t, "-", i), /*sync=*/i % 10 == 0);
          EXPECT_TRUE(seq.ok()) << seq.status();
          if (seq.ok()) seqs[t].push_back(*seq);
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    EXPECT_EQ(journal->last_seq(), uint64_t{kThreads * kPerThread});
  }

  std::map<uint64_t, std::string> want;
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(seqs[t].size(), size_t{kPerThread});
    for (int i = 0; i < kPerThread; ++i) {
      EXPECT_TRUE(want.emplace(seqs[t][i], absl::StrCat("t", t, "-", i)).second)
          << "seq " << seqs[t][i] << " issued twice";
      if (i > 0) {
        EXPECT_LT(seqs[t][i - 1], seqs[t][i]);
      }
    }
  }
  JournalContents contents;
  ASSERT_NE(OpenOrDie(path, &contents), nullptr);
  EXPECT_EQ(contents.dropped_bytes, 0u);
  ASSERT_EQ(contents.records.size(), want.size());
  uint64_t expected_seq = 1;
  for (const JournalRecord& record : contents.records) {
    EXPECT_EQ(record.seq, expected_seq++);
    EXPECT_EQ(record.payload, want[record.seq]);
  }
}

}  // namespace
}  // namespace kdp::manager
