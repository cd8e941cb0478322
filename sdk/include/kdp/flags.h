// kdp::Flags is how a plugin or driver adds its own command-line flags next to the ones the SDK's
// main helpers (kdp::RunPlugins in kdp/plugin_runner.h, kdp::RunDraDriver in kdp/dra_runner.h)
// own: the vendor's `add_flags` hook receives one and binds each flag to a variable of its own,
// which holds the parsed value when the vendor's factory runs. Every flag gets a line in --help;
// a value that does not parse ends the program with exit status 2 and a message naming the flag.
// No parser type appears here: the SDK parses with CLI11, privately.
//
// Thread-safety: externally synchronized; a Flags lives only while `add_flags` runs (main()'s
// thread, before any other thread exists).
#ifndef KDP_FLAGS_H_
#define KDP_FLAGS_H_

#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace CLI {
class App;
}  // namespace CLI

namespace kdp {

namespace internal {
class ProgramFlags;
}  // namespace internal

class Flags {
 public:
  Flags(const Flags&) = delete;
  Flags& operator=(const Flags&) = delete;

  // Every Add*() takes the long name with its dashes ("--topology-xml") and the one-line help; the
  // bound variable (borrowed: it must outlive the factory call) keeps its value when the flag is
  // absent, and --help shows that value as the default unless it is empty.

  // Any text.
  void AddString(const std::string& name, std::string* value, const std::string& help);
  // An integer in [min, max].
  void AddInt(const std::string& name, int* value, const std::string& help,
              int min = std::numeric_limits<int>::min(), int max = std::numeric_limits<int>::max());
  // A switch without a value: present sets `*value` to true.
  void AddBool(const std::string& name, bool* value, const std::string& help);
  // A positive duration in Go's form ("30s", "500ms", "5m"; a bare number is seconds), the way
  // every kdp binary spells durations.
  void AddDuration(const std::string& name, absl::Duration* value, const std::string& help);
  // One of `choices`.
  void AddChoice(const std::string& name, std::string* value, std::vector<std::string> choices,
                 const std::string& help);
  // A value `parse` checks and stores (into the vendor's own variables): its error's message
  // fails parsing ("--vendor: invalid PCI vendor ID ...", exit 2). Called once per occurrence.
  void AddParsed(const std::string& name, std::function<absl::Status(std::string_view)> parse,
                 const std::string& help);
  // A value `parse` (std::string_view -> absl::StatusOr<U>, U assignable to T) converts, stored
  // into `*value`; its error fails parsing as AddParsed()'s: kdp::ParsePciId (kdp/gpus.h),
  // kdp::ParseAllocationPolicy (kdp/preferred_allocation.h), or the vendor's own.
  template <typename T, typename Parse>
  void AddValue(const std::string& name, T* value, Parse parse, const std::string& help) {
    AddParsed(
        name,
        [value, parse](std::string_view text) -> absl::Status {
          auto parsed = parse(text);
          if (parsed.ok()) *value = *std::move(parsed);
          return parsed.status();
        },
        help);
  }

 private:
  friend class internal::ProgramFlags;
  explicit Flags(CLI::App* app) : app_(app) {}

  CLI::App* const app_;
};

}  // namespace kdp

#endif  // KDP_FLAGS_H_
