// Tests for the shared test helpers: Subprocess/RunCommand, TempDir and WaitUntil.
#include "common/subprocess.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/wait.h"

namespace kdp::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr absl::Duration kGenerous = absl::Seconds(20);

std::unique_ptr<Subprocess> StartOrDie(std::vector<std::string> argv,
                                       SubprocessOptions options = {}) {
  auto process = Subprocess::Start(std::move(argv), std::move(options));
  EXPECT_TRUE(process.ok()) << process.status();
  return process.ok() ? std::move(*process) : nullptr;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

// True when `pid` no longer runs: gone, or a zombie waiting for a reaper that is not us.
bool ProcessGone(pid_t pid) {
  std::ifstream stat(absl::StrCat("/proc/", pid, "/stat"));
  if (!stat) return true;
  std::string line;
  std::getline(stat, line);
  // Format: "pid (comm) S ...": the state follows the last ')'.
  const size_t paren = line.rfind(')');
  return paren == std::string::npos || line.substr(paren + 2, 1) == "Z";
}

// Makes this test process the reaper of orphaned descendants, so a grandchild whose parent died
// becomes our child and its end can be observed with waitpid.
void BecomeSubreaper() { ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0); }

// True once `pid` (our child, or an orphan we reap as subreaper) has ended by SIGKILL.
bool ReapedAfterSigkill(pid_t pid) {
  int status = 0;
  return waitpid(pid, &status, WNOHANG) == pid && WIFSIGNALED(status) &&
         WTERMSIG(status) == SIGKILL;
}

TEST(Subprocess, ReturnsExitCode) {
  auto process = StartOrDie({"/bin/sh", "-c", "exit 3"});
  ASSERT_NE(process, nullptr);
  auto code = process->Wait(kGenerous);
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 3);
  EXPECT_FALSE(process->Running());
  // The code is kept: a second Wait returns it at once.
  code = process->Wait(absl::ZeroDuration());
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 3);
}

TEST(Subprocess, FindsProgramInPath) {
  auto process = StartOrDie({"true"});
  ASSERT_NE(process, nullptr);
  auto code = process->Wait(kGenerous);
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 0);
}

TEST(Subprocess, ReportsSignalAs128PlusNumber) {
  auto process = StartOrDie({"sleep", "1000"});
  ASSERT_NE(process, nullptr);
  EXPECT_TRUE(process->Running());
  ASSERT_TRUE(process->Signal(SIGTERM).ok());
  auto code = process->Wait(kGenerous);
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 128 + SIGTERM);
}

TEST(Subprocess, SignalAfterExitIsFailedPrecondition) {
  auto process = StartOrDie({"true"});
  ASSERT_NE(process, nullptr);
  ASSERT_TRUE(process->Wait(kGenerous).ok());
  EXPECT_EQ(process->Signal(SIGTERM).code(), absl::StatusCode::kFailedPrecondition);
}

TEST(Subprocess, ChildStartsWithDefaultSignalDispositions) {
  // An ignored signal would survive exec; the child must still die of SIGTERM.
  struct sigaction ignore = {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction previous = {};
  ASSERT_EQ(sigaction(SIGTERM, &ignore, &previous), 0);
  auto process = StartOrDie({"sleep", "1000"});
  ASSERT_EQ(sigaction(SIGTERM, &previous, nullptr), 0);
  ASSERT_NE(process, nullptr);
  ASSERT_TRUE(process->Signal(SIGTERM).ok());
  auto code = process->Wait(kGenerous);
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 128 + SIGTERM);
}

TEST(Subprocess, WaitTimesOutWhileChildRuns) {
  auto process = StartOrDie({"sleep", "1000"});
  ASSERT_NE(process, nullptr);
  const absl::Time start = absl::Now();
  auto code = process->Wait(absl::Milliseconds(50));
  EXPECT_EQ(code.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(50));
  EXPECT_TRUE(process->Running());
}

TEST(Subprocess, AddsEnvironmentToInherited) {
  ASSERT_EQ(setenv("KDP_SUBPROCESS_TEST_INHERITED", "parent", 1), 0);
  ASSERT_EQ(setenv("KDP_SUBPROCESS_TEST_OVERRIDDEN", "parent", 1), 0);
  auto process = StartOrDie(
      {"/bin/sh", "-c",
       "echo \"$KDP_SUBPROCESS_TEST_INHERITED $KDP_SUBPROCESS_TEST_OVERRIDDEN "
       "$KDP_SUBPROCESS_TEST_ADDED\""},
      {.env = {{"KDP_SUBPROCESS_TEST_OVERRIDDEN", "child"}, {"KDP_SUBPROCESS_TEST_ADDED", "new"}}});
  unsetenv("KDP_SUBPROCESS_TEST_INHERITED");
  unsetenv("KDP_SUBPROCESS_TEST_OVERRIDDEN");
  ASSERT_NE(process, nullptr);
  ASSERT_TRUE(process->Wait(kGenerous).ok());
  EXPECT_EQ(process->Output(), "parent child new\n");
}

TEST(Subprocess, CapturesStdoutAndStderrInOutput) {
  auto process = StartOrDie({"/bin/sh", "-c", "echo out; echo err >&2"});
  ASSERT_NE(process, nullptr);
  ASSERT_TRUE(process->Wait(kGenerous).ok());
  EXPECT_EQ(process->Output(), "out\nerr\n");
}

TEST(Subprocess, OutputIsReadableWhileChildRuns) {
  auto process = StartOrDie({"/bin/sh", "-c", "echo ready; exec sleep 1000"});
  ASSERT_NE(process, nullptr);
  EXPECT_TRUE(WaitUntil([&] { return process->Output() == "ready\n"; }));
  EXPECT_TRUE(process->Running());
}

TEST(Subprocess, AppendsToGivenOutputPath) {
  TempDir dir;
  const std::string path = dir.Path("log");
  std::ofstream(path) << "previous\n";
  auto process = StartOrDie({"/bin/sh", "-c", "echo out; echo err >&2"}, {.output_path = path});
  ASSERT_NE(process, nullptr);
  ASSERT_TRUE(process->Wait(kGenerous).ok());
  EXPECT_EQ(process->output_path(), path);
  EXPECT_EQ(process->Output(), "previous\nout\nerr\n");
}

TEST(Subprocess, SendsStderrToStderrPath) {
  TempDir dir;
  auto process = StartOrDie({"/bin/sh", "-c", "echo out; echo err >&2"},
                            {.output_path = dir.Path("out"), .stderr_path = dir.Path("err")});
  ASSERT_NE(process, nullptr);
  ASSERT_TRUE(process->Wait(kGenerous).ok());
  EXPECT_EQ(process->Output(), "out\n");
  EXPECT_EQ(ReadFile(dir.Path("err")), "err\n");
}

TEST(Subprocess, StdinIsEmpty) {
  auto process = StartOrDie({"/bin/sh", "-c", "cat; echo done"});
  ASSERT_NE(process, nullptr);
  auto code = process->Wait(kGenerous);
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 0);
  EXPECT_EQ(process->Output(), "done\n");
}

TEST(Subprocess, MissingProgramIsNotFound) {
  EXPECT_EQ(Subprocess::Start({"/nonexistent/kdp-program"}).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(Subprocess::Start({"kdp-no-such-program-in-path"}).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(Subprocess, EmptyArgvIsInvalidArgument) {
  EXPECT_EQ(Subprocess::Start({}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(Subprocess, UnwritableOutputPathIsInternal) {
  EXPECT_EQ(Subprocess::Start({"true"}, {.output_path = "/nonexistent/dir/out"}).status().code(),
            absl::StatusCode::kInternal);
}

TEST(Subprocess, DestructorKillsChildAndItsProcessGroup) {
  BecomeSubreaper();
  TempDir dir;
  const std::string pid_file = dir.Path("grandchild.pid");
  auto process = StartOrDie({"/bin/sh", "-c",
                             absl::StrCat("sleep 1000 & echo $! > ", pid_file, ".tmp; mv ",
                                          pid_file, ".tmp ", pid_file, "; wait")});
  ASSERT_NE(process, nullptr);
  ASSERT_TRUE(WaitUntil([&] { return std::filesystem::exists(pid_file); }));
  int grandchild = 0;
  ASSERT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(ReadFile(pid_file)), &grandchild));
  const pid_t child = process->pid();
  ASSERT_FALSE(ProcessGone(child));
  ASSERT_FALSE(ProcessGone(grandchild));

  process.reset();
  // The child is reaped by the destructor, so its /proc entry is gone at once.
  EXPECT_TRUE(ProcessGone(child));
  // The orphaned grandchild is ours to reap; it must have been killed with the group.
  EXPECT_TRUE(WaitUntil([&] { return ReapedAfterSigkill(grandchild); }));
}

TEST(Subprocess, ChildDiesWithTheTestProcess) {
  // An intermediate process stands in for the test binary: it starts a child, then dies
  // without running any destructor. PR_SET_PDEATHSIG must take the child down with it.
  BecomeSubreaper();
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  const pid_t intermediate = fork();
  ASSERT_GE(intermediate, 0);
  if (intermediate == 0) {
    close(pipe_fds[0]);
    auto process = Subprocess::Start({"sleep", "1000"}, {.output_path = "/dev/null"});
    pid_t pid = process.ok() ? (*process)->pid() : -1;
    if (write(pipe_fds[1], &pid, sizeof(pid)) != sizeof(pid)) _exit(2);
    _exit(0);
  }
  close(pipe_fds[1]);
  pid_t child = -1;
  ASSERT_EQ(read(pipe_fds[0], &child, sizeof(child)), static_cast<ssize_t>(sizeof(child)));
  close(pipe_fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(intermediate, &status, 0), intermediate);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_GT(child, 0);
  EXPECT_TRUE(WaitUntil([&] { return ReapedAfterSigkill(child); }));
}

TEST(RunCommand, CapturesStdoutAndStderrSeparately) {
  auto result = RunCommand({"/bin/sh", "-c", "echo out; echo err >&2; exit 4"});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->exit_code, 4);
  EXPECT_EQ(result->out, "out\n");
  EXPECT_EQ(result->err, "err\n");
}

TEST(RunCommand, PassesEnvironment) {
  auto result =
      RunCommand({"/bin/sh", "-c", "echo $KDP_RUN_TEST"}, kGenerous, {{"KDP_RUN_TEST", "value"}});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->exit_code, 0);
  EXPECT_EQ(result->out, "value\n");
}

TEST(RunCommand, TimeoutIsDeadlineExceededWithPartialOutput) {
  auto result =
      RunCommand({"/bin/sh", "-c", "echo partial; exec sleep 1000"}, absl::Milliseconds(200));
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(result.status().message()), HasSubstr("partial"));
}

TEST(RunCommand, MissingProgramIsNotFound) {
  EXPECT_EQ(RunCommand({"/nonexistent/kdp-program"}).status().code(), absl::StatusCode::kNotFound);
}

TEST(TempDir, CreatesShortPrivateDirectory) {
  TempDir a;
  TempDir b;
  EXPECT_NE(a.path(), b.path());
  EXPECT_THAT(a.path(), StartsWith("/tmp/kdp-"));
  EXPECT_LE(a.path().size(), 20u);
  struct stat st;
  ASSERT_EQ(stat(a.path().c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(a.Path("x.sock"), a.path() + "/x.sock");
}

TEST(TempDir, RemovesEverythingOnDestruction) {
  std::string path;
  {
    TempDir dir;
    path = dir.path();
    std::filesystem::create_directories(dir.Path("a/b"));
    std::ofstream(dir.Path("a/b/file")) << "data";
    // A bound unix socket, as plugins and the manager leave behind.
    const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    struct sockaddr_un addr = {};
    addr.sun_family = AF_UNIX;
    const std::string socket_path = dir.Path("a/plugin.sock");
    std::strncpy(addr.sun_path, socket_path.c_str(), sizeof(addr.sun_path) - 1);
    ASSERT_EQ(bind(fd, reinterpret_cast<struct sockaddr*>(&addr), sizeof(addr)), 0);
    close(fd);
    // A read-only directory with an entry: remove_all alone cannot empty it (unless root).
    std::filesystem::create_directories(dir.Path("ro"));
    std::ofstream(dir.Path("ro/file")) << "data";
    ASSERT_EQ(chmod(dir.Path("ro").c_str(), 0500), 0);
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(WaitUntil, ReturnsTrueOnceConditionHolds) {
  int calls = 0;
  EXPECT_TRUE(WaitUntil([&] { return ++calls == 3; }, kGenerous, absl::Milliseconds(1)));
  EXPECT_EQ(calls, 3);
}

TEST(WaitUntil, ChecksBeforeWaiting) {
  int calls = 0;
  EXPECT_TRUE(WaitUntil(
      [&] {
        ++calls;
        return true;
      },
      absl::ZeroDuration()));
  EXPECT_EQ(calls, 1);
}

TEST(WaitUntil, ReturnsFalseAtDeadline) {
  int calls = 0;
  const absl::Time start = absl::Now();
  EXPECT_FALSE(WaitUntil(
      [&] {
        ++calls;
        return false;
      },
      absl::Milliseconds(50), absl::Milliseconds(10)));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(50));
  EXPECT_GE(calls, 2);
}

}  // namespace
}  // namespace kdp::testing
