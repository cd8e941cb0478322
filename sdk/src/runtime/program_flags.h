// ProgramFlags is the command line of kdp::RunPlugins and kdp::RunDraDriver (private): a CLI11 app
// with --help, --version, the runner's own flags (added by each main helper), the vendor's flags
// (kdp::Flags), --metrics-address and the log flags every kdp binary shares
// (common/log_flags.h). Parse() prints help, version or the error and says which exit status
// ends the program: 0 after --help/--version, 2 for bad usage, as kdpctl and kdp-manager do.
//
// Thread-safety: externally synchronized; main()'s thread only.
#ifndef KDP_SDK_SRC_RUNTIME_PROGRAM_FLAGS_H_
#define KDP_SDK_SRC_RUNTIME_PROGRAM_FLAGS_H_

#include <signal.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "common/log_flags.h"
#include "kdp/flags.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace kdp::internal {

class ProgramFlags {
 public:
  // `name` is what --version prints ("kdp-gpu-plugin 0.1.0"); `description` opens --help.
  ProgramFlags(const std::string& name, const std::string& description);
  ~ProgramFlags();

  ProgramFlags(const ProgramFlags&) = delete;
  ProgramFlags& operator=(const ProgramFlags&) = delete;

  // For the main helper's own flags; valid while this object lives.
  CLI::App& app() { return *app_; }
  // The same app behind the vendor's interface.
  Flags& flags() { return flags_; }

  // Adds the vendor's flags (when `add_flags` is set), then --metrics-address (default `*address`,
  // help `metrics_help`) and the log flags; parses `argv` and applies the log flags. nullopt: go
  // on; otherwise the process exit status, help, version or error already printed.
  [[nodiscard]] std::optional<int> Parse(int argc, char** argv,
                                         const std::function<void(Flags&)>& add_flags,
                                         std::string* metrics_address,
                                         const std::string& metrics_help);

  // Whether --metrics-address was given (then it must be served; a default may be taken by
  // another plugin on the host and only warns). Valid after Parse().
  bool metrics_address_given() const;

 private:
  std::unique_ptr<CLI::App> app_;
  Flags flags_;
  log::LogFlags log_flags_;
  CLI::Option* metrics_ = nullptr;
};

// Ignores SIGPIPE (a write to a closed connection fails with EPIPE instead of killing the process)
// and blocks SIGTERM and SIGINT in the calling thread, so that every thread it starts later
// inherits the mask and only the runner's sigwait() sees them. Returns the set it blocked, the one
// to sigwait() for.
sigset_t BlockTerminationSignals();

// One malloc arena for the whole process (mallopt(M_ARENA_MAX, 1)) unless MALLOC_ARENA_MAX is set
// in the environment (the user's choice wins). glibc gives each thread that meets a locked arena
// one of its own, up to 8 per core, and each keeps its freed pages: a plugin with ten threads
// held 1.2-1.8 MiB more (docs/benchmarks.md, footprint_benchmark). A plugin's threads allocate
// little and seldom at once, so they lose nothing by sharing. Called first by RunPlugins() and
// RunDraDriver(), which own the process; a library never changes malloc's settings.
void LimitMallocArenas();

// Logs a vendor factory's failure (the process then exits 1).
void LogFactoryError(const std::string& program, const absl::Status& status);

}  // namespace kdp::internal

#endif  // KDP_SDK_SRC_RUNTIME_PROGRAM_FLAGS_H_
