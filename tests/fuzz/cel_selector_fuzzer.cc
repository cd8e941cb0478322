// Fuzzes the CEL-subset selector compiler and evaluator (manager/src/scheduling/cel_subset.h,
// cel_lexer.h): DeviceClass and ResourceClaim selectors come from manifests and from clients of
// the local resource API. The input is an expression; it is lexed, compiled, and a compiled
// selector is evaluated against a few fixed devices (every attribute type, capacities, none).
//
// Properties checked beyond "no crash": errors are INVALID_ARGUMENT and name the expression;
// lexing never fails where compiling succeeds; a compiled selector gives the same answer twice.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/match.h"
#include "manager/src/controlplane/resourceapi/types.h"
#include "manager/src/controlplane/scheduling/cel_lexer.h"
#include "manager/src/controlplane/scheduling/cel_subset.h"

namespace {

namespace sched = kdp::manager::scheduling;
namespace ra = kdp::manager::resourceapi;

// Selectors are at most 10 KiB in the API (CELSelectorExpressionMaxLength); beyond is refused
// before compiling there, so longer inputs only slow the search.
constexpr size_t kMaxInput = 10 * 1024;

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "cel_selector_fuzzer: %s\n%s\n", what, detail.c_str());
  std::abort();
}

std::vector<sched::DeviceView> BuildDevices() {
  constexpr char kDriver[] = "gpu.example.com";
  ra::Device full{.name = "gpu-0", .attributes = {}, .capacity = {}};
  full.attributes["model"].string_value = "A100";
  full.attributes["index"].int_value = 0;
  full.attributes["gpu.example.com/mig"].bool_value = true;
  full.attributes["driverVersion"].version_value = "1.2.3-rc.1+build.5";
  full.attributes["example.com/numa"].int_value = -1;
  full.attributes["example.com/pcie"].string_value = "0000:3b:00.0";
  full.capacity["memory"].value = "80Gi";
  full.capacity["example.com/bandwidth"].value = "1500m";
  ra::Device empty{.name = "gpu-1", .attributes = {}, .capacity = {}};
  ra::Device extremes{.name = "gpu-2", .attributes = {}, .capacity = {}};
  extremes.attributes["index"].int_value = INT64_MIN;
  extremes.attributes["model"].string_value = "";
  extremes.attributes["driverVersion"].version_value = "0.0.0";
  extremes.capacity["memory"].value = "8Ei";
  std::vector<sched::DeviceView> views;
  for (const ra::Device* device : {&full, &empty, &extremes}) {
    absl::StatusOr<sched::DeviceView> view = sched::DeviceView::Build(kDriver, *device);
    if (!view.ok()) Fail("a fixed device does not build", view.status().ToString());
    views.push_back(*std::move(view));
  }
  return views;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kMaxInput) return 0;
  static const std::vector<sched::DeviceView>* const kDevices =
      new std::vector<sched::DeviceView>(BuildDevices());
  const std::string_view expression(reinterpret_cast<const char*>(data), size);

  std::vector<sched::internal::Token> tokens;
  sched::internal::LexError lex_error;
  const bool lexed = sched::internal::Lex(expression, &tokens, &lex_error);
  if (lexed && (tokens.empty() || tokens.back().kind != sched::internal::TokenKind::kEnd)) {
    Fail("Lex succeeded without a final kEnd token", std::string(expression));
  }

  absl::StatusOr<sched::CompiledSelector> selector = sched::CompiledSelector::Compile(expression);
  if (!selector.ok()) {
    if (selector.status().code() != absl::StatusCode::kInvalidArgument) {
      Fail("Compile failed with a code other than INVALID_ARGUMENT", selector.status().ToString());
    }
    if (!absl::StartsWith(selector.status().message(), "selector \"")) {
      Fail("Compile's error does not name the selector", selector.status().ToString());
    }
    return 0;
  }
  if (!lexed) Fail("Compile accepted an expression Lex rejects", std::string(expression));
  for (const sched::DeviceView& device : *kDevices) {
    absl::StatusOr<bool> first = selector->Matches(device);
    absl::StatusOr<bool> second = selector->Matches(device);
    if (first.ok() != second.ok() || (first.ok() && *first != *second)) {
      Fail("Matches is not deterministic", std::string(expression));
    }
    if (!first.ok() && first.status().code() != absl::StatusCode::kInvalidArgument) {
      Fail("Matches failed with a code other than INVALID_ARGUMENT", first.status().ToString());
    }
  }
  return 0;
}
