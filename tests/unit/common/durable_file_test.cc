#include "common/durable_file.h"

#include <dirent.h>
#include <sys/stat.h>

#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace kdp {
namespace {

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(d);
  return names;
}

TEST(WriteFileDurably, CreatesAndReplacesWithTheModeAndNoLeftovers) {
  testing::TempDir dir;
  const std::string path = dir.Path("state");
  ASSERT_TRUE(WriteFileDurably(path, "first").ok());
  ASSERT_TRUE(WriteFileDurably(path, std::string("second\0bytes", 12)).ok());
  EXPECT_EQ(*ReadFile(path), std::string("second\0bytes", 12));
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_THAT(Entries(dir.path()), ::testing::ElementsAre("state"));
}

TEST(WriteFileDurably, AFailedWriteLeavesTheOldFileAndNamesThePath) {
  testing::TempDir dir;
  const std::string path = dir.Path("missing-dir/state");
  absl::Status status = WriteFileDurably(path, "x");
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), ::testing::HasSubstr(path));

  // A target that is a directory: rename fails, the temporary file is removed.
  const std::string target = dir.Path("adir");
  ASSERT_EQ(::mkdir(target.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((target + "/child").c_str(), 0755), 0);
  EXPECT_FALSE(WriteFileDurably(target, "x").ok());
  EXPECT_THAT(Entries(dir.path()), ::testing::ElementsAre("adir"));
}

TEST(ReadFile, MissingIsNotFound) {
  testing::TempDir dir;
  EXPECT_EQ(ReadFile(dir.Path("nope")).status().code(), absl::StatusCode::kNotFound);
}

TEST(ReadFile, AFileOverTheLimitIsRefusedNamingItAndTheLimit) {
  testing::TempDir dir;
  const std::string path = dir.Path("big");
  ASSERT_TRUE(WriteFileDurably(path, std::string(200000, 'x')).ok());
  EXPECT_EQ(ReadFile(path, 200000).value_or(""), std::string(200000, 'x'));  // at the limit
  absl::StatusOr<std::string> over = ReadFile(path, 199999);
  EXPECT_EQ(over.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(over.status().message(), path + ": larger than the 199999-byte limit");
  // A file that never ends is refused too, not read until memory runs out.
  absl::StatusOr<std::string> endless = ReadFile("/dev/zero", 1 << 20);
  EXPECT_EQ(endless.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kdp
