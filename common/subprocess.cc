#include "common/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"

extern char** environ;

namespace kdp {
namespace {

// Closes a file descriptor when it goes out of scope.
class ScopedFd {
 public:
  explicit ScopedFd(int fd = -1) : fd_(fd) {}
  ~ScopedFd() { Reset(); }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;

  int get() const { return fd_; }
  void Reset(int fd = -1) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

absl::Status ErrnoStatus(absl::string_view what, int err) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(err)));
}

// The inherited environment with `overrides` applied, as "NAME=value" strings.
std::vector<std::string> MergeEnvironment(
    const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::vector<std::string> env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    env.emplace_back(*entry);
  }
  for (const auto& [name, value] : overrides) {
    const std::string prefix = name + "=";
    auto it = std::find_if(env.begin(), env.end(), [&prefix](const std::string& e) {
      return e.compare(0, prefix.size(), prefix) == 0;
    });
    if (it != env.end()) {
      *it = prefix + value;
    } else {
      env.push_back(prefix + value);
    }
  }
  return env;
}

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

// Resolves argv[0] the way execvp does, but before fork (the child may only make
// async-signal-safe calls, and execvpe allocates).
absl::StatusOr<std::string> ResolveProgram(const std::string& name,
                                           const std::vector<std::string>& env) {
  if (name.find('/') != std::string::npos) {
    if (IsExecutableFile(name)) return name;
    return absl::NotFoundError(absl::StrCat("no executable file at ", name));
  }
  std::string path = "/usr/local/bin:/usr/bin:/bin";
  for (const std::string& entry : env) {
    if (absl::string_view(entry).substr(0, 5) == "PATH=") path = entry.substr(5);
  }
  for (absl::string_view dir : absl::StrSplit(path, ':', absl::SkipEmpty())) {
    std::string candidate = absl::StrCat(dir, "/", name);
    if (IsExecutableFile(candidate)) return candidate;
  }
  return absl::NotFoundError(absl::StrCat(name, " not found in PATH ", path));
}

absl::StatusOr<int> OpenForAppend(const std::string& path) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoStatus(absl::StrCat("open ", path), errno);
  return fd;
}

// A fresh private directory ($TMPDIR, else /tmp) for output nobody named.
absl::StatusOr<std::string> MakeScratchDir() {
  const char* tmpdir = std::getenv("TMPDIR");
  std::string templ =
      absl::StrCat(tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp", "/kdp-XXXXXX");
  if (mkdtemp(templ.data()) == nullptr) return ErrnoStatus(absl::StrCat("mkdtemp ", templ), errno);
  return templ;
}

void RemoveScratchDir(const std::string& dir) {
  if (dir.empty()) return;
  std::error_code ignored;  // a leftover directory must not fail the caller
  std::filesystem::remove_all(dir, ignored);
}

int ExitCodeFromWaitStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// Makes `from` the child's descriptor `to`, without close-on-exec. Async-signal-safe.
bool Redirect(int from, int to) {
  if (from == to) return fcntl(to, F_SETFD, 0) == 0;
  return dup2(from, to) == to;
}

// Runs in the forked child: only async-signal-safe calls until execve. Never returns.
[[noreturn]] void ExecChild(pid_t parent, const char* program, char* const* argv, char* const* envp,
                            int stdin_fd, int stdout_fd, int stderr_fd, int error_fd) {
  // Own process group, so the destructor can kill the child and anything it started.
  setpgid(0, 0);
  // Die with the parent. If the parent already died before prctl, getppid() has changed.
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(127);
  // Ignored signals and the blocked mask survive exec: give the program a clean slate (gRPC,
  // for one, may leave SIGPIPE ignored in the test process).
  struct sigaction default_action;
  std::memset(&default_action, 0, sizeof(default_action));
  default_action.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) sigaction(sig, &default_action, nullptr);
  }
  sigset_t empty;
  sigemptyset(&empty);
  sigprocmask(SIG_SETMASK, &empty, nullptr);
  int err = 0;
  if (!Redirect(stdin_fd, STDIN_FILENO) || !Redirect(stdout_fd, STDOUT_FILENO) ||
      !Redirect(stderr_fd, STDERR_FILENO)) {
    err = errno;
  } else {
    execve(program, argv, envp);
    err = errno;
  }
  while (write(error_fd, &err, sizeof(err)) < 0 && errno == EINTR) {
  }
  _exit(127);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Subprocess>> Subprocess::Start(std::vector<std::string> argv,
                                                              SubprocessOptions options) {
  if (argv.empty()) return absl::InvalidArgumentError("Subprocess::Start: empty argv");
  const std::vector<std::string> env = MergeEnvironment(options.env);
  auto program = ResolveProgram(argv[0], env);
  if (!program.ok()) return program.status();

  std::string owned_dir;
  std::string output_path = options.output_path;
  if (output_path.empty()) {
    absl::StatusOr<std::string> dir = MakeScratchDir();
    if (!dir.ok()) return dir.status();
    owned_dir = *dir;
    output_path = owned_dir + "/output";
  }
  // Removed again unless the Subprocess takes it over.
  std::string cleanup_dir = owned_dir;
  struct DirCleanup {
    std::string* dir;
    ~DirCleanup() { RemoveScratchDir(*dir); }
  } dir_cleanup{&cleanup_dir};
  auto out = OpenForAppend(output_path);
  if (!out.ok()) return out.status();
  ScopedFd stdout_fd(*out);
  ScopedFd stderr_fd;
  if (!options.stderr_path.empty()) {
    auto err = OpenForAppend(options.stderr_path);
    if (!err.ok()) return err.status();
    stderr_fd.Reset(*err);
  }
  ScopedFd stdin_fd(open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (stdin_fd.get() < 0) return ErrnoStatus("open /dev/null", errno);
  int error_pipe[2];
  if (pipe2(error_pipe, O_CLOEXEC) != 0) return ErrnoStatus("pipe2", errno);
  ScopedFd error_read(error_pipe[0]);
  ScopedFd error_write(error_pipe[1]);

  // Everything the child needs is built before fork: it may not allocate.
  std::vector<char*> child_argv;
  for (std::string& arg : argv) child_argv.push_back(arg.data());
  child_argv.push_back(nullptr);
  std::vector<std::string> env_storage = env;
  std::vector<char*> child_envp;
  for (std::string& entry : env_storage) child_envp.push_back(entry.data());
  child_envp.push_back(nullptr);

  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return ErrnoStatus("fork", errno);
  if (pid == 0) {
    ExecChild(parent, program->c_str(), child_argv.data(), child_envp.data(), stdin_fd.get(),
              stdout_fd.get(), stderr_fd.get() >= 0 ? stderr_fd.get() : stdout_fd.get(),
              error_write.get());
  }
  error_write.Reset();
  // The pipe closes without data when execve succeeds (close-on-exec); else it carries errno.
  int child_errno = 0;
  ssize_t n;
  do {
    n = read(error_read.get(), &child_errno, sizeof(child_errno));
  } while (n < 0 && errno == EINTR);
  if (n != 0) {
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    const std::string what = absl::StrCat("exec ", absl::StrJoin(argv, " "));
    if (n != sizeof(child_errno)) return absl::InternalError(absl::StrCat(what, ": child died"));
    if (child_errno == ENOENT) return absl::NotFoundError(absl::StrCat(what, ": no such file"));
    return ErrnoStatus(what, child_errno);
  }
  // A pidfd lets Wait sleep in poll() until the exit; without one (old kernel) Wait polls.
  // Called through syscall(): glibc 2.36's <sys/pidfd.h> lacks extern "C", so its
  // pidfd_open() does not link from C++.
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  cleanup_dir.clear();  // the Subprocess owns it now
  return std::unique_ptr<Subprocess>(
      new Subprocess(pid, pidfd, std::move(output_path), std::move(owned_dir)));
}

Subprocess::Subprocess(pid_t pid, int pidfd, std::string output_path, std::string owned_dir)
    : pid_(pid),
      pidfd_(pidfd),
      output_path_(std::move(output_path)),
      owned_dir_(std::move(owned_dir)) {}

Subprocess::~Subprocess() {
  {
    absl::MutexLock lock(&mu_);
    auto reaped = ReapLocked();
    // The whole group, even once the child itself is gone: what it started (a wrapper script's
    // program) must not outlive it. A process group's ID is not reused while any member lives,
    // so this reaches only the child's own group (or nothing: ESRCH).
    kill(-pid_, SIGKILL);
    if (reaped.ok() && !*reaped) {
      kill(pid_, SIGKILL);
      int status;
      while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
    }
  }
  if (pidfd_ >= 0) close(pidfd_);
  RemoveScratchDir(owned_dir_);
}

absl::StatusOr<bool> Subprocess::ReapLocked() {
  if (exit_code_.has_value()) return true;
  int status;
  pid_t r;
  do {
    r = waitpid(pid_, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r < 0) return ErrnoStatus(absl::StrCat("waitpid ", pid_), errno);
  if (r == 0) return false;
  exit_code_ = ExitCodeFromWaitStatus(status);
  return true;
}

absl::Status Subprocess::Signal(int sig) {
  absl::MutexLock lock(&mu_);
  auto reaped = ReapLocked();
  if (!reaped.ok()) return reaped.status();
  if (*reaped) {
    return absl::FailedPreconditionError(
        absl::StrCat("process ", pid_, " has already exited with ", *exit_code_));
  }
  // The child is not reaped, so pid_ still names it (at worst a zombie, which ignores signals).
  if (kill(pid_, sig) != 0) return ErrnoStatus(absl::StrCat("kill ", pid_), errno);
  return absl::OkStatus();
}

absl::Status Subprocess::SignalGroup(int sig) {
  absl::MutexLock lock(&mu_);
  // Its own group (setpgid in the child): the group's ID is the child's pid, which cannot be
  // reused while any member of the group lives.
  if (kill(-pid_, sig) != 0) return ErrnoStatus(absl::StrCat("kill -", pid_), errno);
  return absl::OkStatus();
}

absl::StatusOr<int> Subprocess::Wait(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto reaped = ReapLocked();
      if (!reaped.ok()) return reaped.status();
      if (*reaped) return *exit_code_;
    }
    const absl::Duration remaining = deadline - absl::Now();
    if (remaining <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError(
          absl::StrCat("process ", pid_, " still running after ", absl::FormatDuration(timeout)));
    }
    if (pidfd_ >= 0) {
      // Readable once the child has exited; the loop then reaps it.
      struct pollfd pfd = {pidfd_, POLLIN, 0};
      const int64_t ms = std::min<int64_t>(absl::ToInt64Milliseconds(remaining) + 1, INT_MAX);
      if (poll(&pfd, 1, static_cast<int>(ms)) < 0 && errno != EINTR) {
        return ErrnoStatus("poll pidfd", errno);
      }
    } else {
      absl::SleepFor(std::min(remaining, absl::Milliseconds(5)));
    }
  }
}

bool Subprocess::Running() {
  absl::MutexLock lock(&mu_);
  auto reaped = ReapLocked();
  return reaped.ok() && !*reaped;
}

std::string Subprocess::Output() const {
  std::ifstream in(output_path_, std::ios::binary);
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

absl::StatusOr<CommandResult> RunCommand(std::vector<std::string> argv, absl::Duration timeout,
                                         std::vector<std::pair<std::string, std::string>> env) {
  absl::StatusOr<std::string> scratch = MakeScratchDir();
  if (!scratch.ok()) return scratch.status();
  // Declared before the Subprocess writing into it, so removed after it.
  struct DirCleanup {
    std::string dir;
    ~DirCleanup() { RemoveScratchDir(dir); }
    std::string Path(const char* name) const { return dir + "/" + name; }
  } dir{*scratch};
  const std::string command = absl::StrJoin(argv, " ");
  auto process = Subprocess::Start(std::move(argv), {.env = std::move(env),
                                                     .output_path = dir.Path("stdout"),
                                                     .stderr_path = dir.Path("stderr")});
  if (!process.ok()) return process.status();
  auto exit_code = (*process)->Wait(timeout);
  auto read_file = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream content;
    content << in.rdbuf();
    return content.str();
  };
  if (!exit_code.ok()) {
    process->reset();  // Kills and reaps the command before its output is read.
    return absl::Status(
        exit_code.status().code(),
        absl::StrCat(command, ": ", exit_code.status().message(), "\nstdout:\n",
                     read_file(dir.Path("stdout")), "\nstderr:\n", read_file(dir.Path("stderr"))));
  }
  return CommandResult{.exit_code = *exit_code,
                       .out = read_file(dir.Path("stdout")),
                       .err = read_file(dir.Path("stderr"))};
}

}  // namespace kdp
