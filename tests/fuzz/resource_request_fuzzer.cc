// Fuzzes what a client of the local resource API puts in a request's URL
// (manager/src/resourceapi/request_options.h, selectors.h): the list/watch query parameters, the
// continue token of a paged list, and field and label selectors. The input is a query string
// ("labelSelector=a%3Db&limit=5", split at '&' and the first '=', unescaped as url.ParseQuery
// does); the whole input is also tried as a continue token and as each kind of selector.
//
// Properties checked beyond "no crash": errors are INVALID_ARGUMENT (BadRequest or Invalid, never
// a 500 from an exception); a continue token this server writes decodes to what it encoded.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

#include "manager/src/controlplane/resourceapi/kinds.h"
#include "manager/src/controlplane/resourceapi/request_options.h"
#include "manager/src/controlplane/resourceapi/selectors.h"

namespace {

namespace ra = kdp::manager::resourceapi;

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "resource_request_fuzzer: %s\n%s\n", what, detail.c_str());
  std::abort();
}

void CheckCode(const absl::Status& status, const char* what) {
  if (!status.ok() && status.code() != absl::StatusCode::kInvalidArgument) {
    Fail(what, status.ToString());
  }
}

int Hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// url.QueryUnescape, leaving a malformed escape as it is.
std::string Unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out.push_back(' ');
    } else if (s[i] == '%' && i + 2 < s.size() && Hex(s[i + 1]) >= 0 && Hex(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(Hex(s[i + 1]) * 16 + Hex(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 16 * 1024) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  std::map<std::string, std::string> params;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('&', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view term = text.substr(start, end - start);
    const size_t eq = term.find('=');
    params.emplace(Unescape(term.substr(0, eq)),
                   eq == std::string_view::npos ? "" : Unescape(term.substr(eq + 1)));
    start = end + 1;
  }
  for (const ra::KindInfo& kind : ra::AllKinds()) {
    for (const char* version : {"v1", "v1beta1"}) {
      absl::StatusOr<ra::ListWatchOptions> options =
          ra::ParseListWatchOptions(params, kind, version);
      CheckCode(options.status(), "ParseListWatchOptions: undocumented code");
      if (options.ok() && !options->continue_token.empty()) {
        CheckCode(ra::DecodeContinueToken(options->continue_token).status(),
                  "DecodeContinueToken: undocumented code");
      }
      CheckCode(ra::FieldSelector::Parse(text, kind, version).status(),
                "FieldSelector::Parse: undocumented code");
    }
  }
  CheckCode(ra::LabelSelector::Parse(text).status(), "LabelSelector::Parse: undocumented code");

  absl::StatusOr<ra::ContinuePoint> point = ra::DecodeContinueToken(text);
  CheckCode(point.status(), "DecodeContinueToken: undocumented code");
  if (point.ok()) {
    const std::string token = ra::EncodeContinueToken(point->resource_version, point->last_key);
    absl::StatusOr<ra::ContinuePoint> again = ra::DecodeContinueToken(token);
    if (!again.ok() || again->resource_version != point->resource_version ||
        again->last_key != point->last_key) {
      Fail("a continue token this server wrote does not decode to what it encoded", token);
    }
  }
  return 0;
}
