// Subprocess: runs a program (kdp-manager, kdpctl, an example plugin, the plugin kdp-conformance
// checks) as a child, with its output in a file the parent can read at any time, and guarantees
// the child never outlives its parent: it gets SIGKILL when the parent process dies
// (PR_SET_PDEATHSIG) and when the Subprocess is destroyed. RunCommand is the one-shot form that
// captures stdout and stderr apart. The tests and kdp-conformance share it.
//
// Thread-safety: thread-safe; Wait may block in one thread while another calls Signal, Running
// or Output. The child is killed if the thread that called Start exits (a PR_SET_PDEATHSIG
// rule), so start children from the main thread or one that outlives them.
#ifndef KDP_COMMON_SUBPROCESS_H_
#define KDP_COMMON_SUBPROCESS_H_

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace kdp {

struct SubprocessOptions {
  // Variables added to the environment inherited from the parent; an entry whose name is already
  // set replaces it. Default: none (the child sees the parent's environment).
  std::vector<std::pair<std::string, std::string>> env = {};
  // File the child's stdout and stderr are appended to (created 0600 if missing). Default
  // (empty): "output" in a temporary directory ($TMPDIR, else /tmp) that the Subprocess owns and
  // removes.
  std::string output_path = {};
  // When non-empty, stderr is appended here instead of to `output_path`. Default: empty.
  std::string stderr_path = {};
};

class Subprocess {
 public:
  // Starts argv[0] with arguments argv[1..]; a name without '/' is looked up in the PATH (of
  // the child's environment). stdin is /dev/null; the child gets its own process group.
  // Errors: INVALID_ARGUMENT for an empty argv; NOT_FOUND when the program does not exist or
  // is not executable; INTERNAL when the output file cannot be opened, fork fails, or exec
  // fails for another reason (the message carries strerror).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Subprocess>> Start(
      std::vector<std::string> argv, SubprocessOptions options = {});

  // Sends SIGKILL to the child's process group (also when the child itself has exited: what it
  // started goes too), then reaps the child.
  ~Subprocess();

  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  // The child's process id (also its process group id). Stays valid as a number after exit.
  pid_t pid() const { return pid_; }

  // Sends `sig` to the child. FAILED_PRECONDITION when the child has already been reaped (by
  // Wait or Running): the pid may belong to another process by then. INTERNAL if kill fails.
  [[nodiscard]] absl::Status Signal(int sig) ABSL_LOCKS_EXCLUDED(mu_);
  // Sends `sig` to the child's whole process group (the child and what it started, as a
  // container runtime kills a container). INTERNAL (ESRCH) when no member is left.
  [[nodiscard]] absl::Status SignalGroup(int sig) ABSL_LOCKS_EXCLUDED(mu_);

  // Waits up to `timeout` for the child to exit. Returns its exit code, or 128 + the signal
  // number when a signal ended it (the shell's convention). Once the child has exited, every
  // call returns the same value at once. DEADLINE_EXCEEDED when it is still running at the
  // deadline (it is left running); INTERNAL when waiting fails.
  [[nodiscard]] absl::StatusOr<int> Wait(absl::Duration timeout) ABSL_LOCKS_EXCLUDED(mu_);

  // True while the child has not exited. Reaps it when it has, so a later Wait returns at once.
  bool Running() ABSL_LOCKS_EXCLUDED(mu_);

  // Everything written to the output file so far; "" when it cannot be read.
  std::string Output() const;

  // The file stdout (and, unless SubprocessOptions::stderr_path was set, stderr) goes to.
  const std::string& output_path() const { return output_path_; }

 private:
  Subprocess(pid_t pid, int pidfd, std::string output_path, std::string owned_dir);

  // Collects the exit status without blocking: true once the child has been reaped (exit_code_
  // is set), false while it runs; INTERNAL when waitpid fails.
  absl::StatusOr<bool> ReapLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const pid_t pid_;
  const int pidfd_;  // -1 when the kernel has no pidfd_open; Wait then polls.
  const std::string output_path_;
  const std::string owned_dir_;  // Holds output_path_ when the caller gave none; "" otherwise.

  absl::Mutex mu_;
  std::optional<int> exit_code_ ABSL_GUARDED_BY(mu_);  // Set once the child is reaped.
};

// What a finished command wrote and how it ended (exit code, or 128 + signal number).
struct CommandResult {
  int exit_code = -1;
  std::string out = {};
  std::string err = {};
};

// Runs argv to completion with stdout and stderr captured separately; `env` is added to the
// inherited environment as in SubprocessOptions::env. Errors: those of Subprocess::Start;
// DEADLINE_EXCEEDED when the command runs longer than `timeout` (it is then killed).
[[nodiscard]] absl::StatusOr<CommandResult> RunCommand(
    std::vector<std::string> argv, absl::Duration timeout = absl::Seconds(60),
    std::vector<std::pair<std::string, std::string>> env = {});

}  // namespace kdp

#endif  // KDP_COMMON_SUBPROCESS_H_
