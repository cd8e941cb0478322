#include "sdk/src/runtime/program_flags.h"

#include <malloc.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "CLI/CLI.hpp"
#include "common/cli_flags.h"
#include "common/logging.h"

namespace kdp {

void Flags::AddString(const std::string& name, std::string* value, const std::string& help) {
  CLI::Option* option = app_->add_option(name, *value, help);
  if (!value->empty()) option->capture_default_str();
}

void Flags::AddInt(const std::string& name, int* value, const std::string& help, int min, int max) {
  CLI::Option* option = app_->add_option(name, *value, help)->capture_default_str();
  if (min != std::numeric_limits<int>::min() || max != std::numeric_limits<int>::max()) {
    option->check(CLI::Range(min, max));
  }
}

void Flags::AddBool(const std::string& name, bool* value, const std::string& help) {
  app_->add_flag(name, *value, help);
}

void Flags::AddDuration(const std::string& name, absl::Duration* value, const std::string& help) {
  cli::AddDurationOption(*app_, name, value, help);
}

void Flags::AddChoice(const std::string& name, std::string* value, std::vector<std::string> choices,
                      const std::string& help) {
  CLI::Option* option = app_->add_option(name, *value, help)->check(CLI::IsMember(choices));
  if (!value->empty()) option->capture_default_str();
}

void Flags::AddParsed(const std::string& name, std::function<absl::Status(std::string_view)> parse,
                      const std::string& help) {
  app_->add_option_function<std::string>(
      name,
      [name, parse = std::move(parse)](const std::string& text) {
        if (absl::Status status = parse(text); !status.ok()) {
          throw CLI::ValidationError(name, std::string(status.message()));
        }
      },
      help);
}

namespace internal {

ProgramFlags::ProgramFlags(const std::string& name, const std::string& description)
    : app_(std::make_unique<CLI::App>(description, name)), flags_(app_.get()) {
  cli::AddVersionFlag(*app_, name);
}

ProgramFlags::~ProgramFlags() = default;

std::optional<int> ProgramFlags::Parse(int argc, char** argv,
                                       const std::function<void(Flags&)>& add_flags,
                                       std::string* metrics_address,
                                       const std::string& metrics_help) {
  if (add_flags) add_flags(flags_);
  metrics_ = app_->add_option("--metrics-address", *metrics_address, metrics_help);
  if (!metrics_address->empty()) metrics_->capture_default_str();
  log::AddLogFlags(*app_, &log_flags_);
  try {
    app_->parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // Prints the help, the version or the error; any bad usage exits 2, like kdpctl.
    return app_->exit(error) == 0 ? 0 : 2;
  }
  if (absl::Status logging = log::ApplyLogFlags(log_flags_); !logging.ok()) {
    std::fprintf(stderr, "%s\n", logging.ToString().c_str());
    return 2;
  }
  return std::nullopt;
}

bool ProgramFlags::metrics_address_given() const {
  return metrics_ != nullptr && metrics_->count() > 0;
}

sigset_t BlockTerminationSignals() {
  signal(SIGPIPE, SIG_IGN);
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

void LimitMallocArenas() {
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr) mallopt(M_ARENA_MAX, 1);
}

void LogFactoryError(const std::string& program, const absl::Status& status) {
  KDP_LOG_ERROR("Failed to start", "program", program, "err", status.ToString());
}

}  // namespace internal
}  // namespace kdp
