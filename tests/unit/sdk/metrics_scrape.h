// Scrapes a kdp metrics endpoint in tests: one HTTP/1.1 GET over a plain loopback socket, and a
// lookup of one sample in the Prometheus text it returns. A raw socket instead of
// httplib::Client: cpp-httplib's header must be compiled with the definitions of its pkg-config
// file, which test targets do not get (see tests/integration/dra_fixture.h).
//
// Thread-safety: the functions are thread-safe.
#ifndef KDP_TESTS_UNIT_SDK_METRICS_SCRAPE_H_
#define KDP_TESTS_UNIT_SDK_METRICS_SCRAPE_H_

#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "tests/testing/loopback_http.h"

namespace kdp::testing {

struct Scrape {
  int status = 0;  // 0 when nothing answered
  std::string body = {};
};

// GET http://127.0.0.1:<port><path> with "Connection: close"; bounded by 10 s of inactivity.
inline Scrape HttpGet(int port, const std::string& path) {
  HttpAnswer answer = SendHttpRequest({.port = port, .path = path, .timeout = absl::Seconds(10)});
  return {.status = answer.status, .body = std::move(answer.body)};
}

// A sample's name and its labels sorted by name ("name{a=\"1\",b=\"2\"}" or "name"); the text
// after the series, if any, in `rest`. Empty name when `text` is not a sample.
inline std::pair<std::string, std::map<std::string, std::string>> ParseSeries(
    absl::string_view text, absl::string_view* rest) {
  std::pair<std::string, std::map<std::string, std::string>> out;
  size_t end = text.find_first_of("{ ");
  out.first = std::string(text.substr(0, end));
  if (end == absl::string_view::npos || text[end] == ' ') {
    if (rest != nullptr) *rest = end == absl::string_view::npos ? "" : text.substr(end);
    return out;
  }
  size_t pos = end + 1;
  while (pos < text.size() && text[pos] != '}') {
    const size_t equals = text.find("=\"", pos);
    if (equals == absl::string_view::npos) return {};
    std::string key(text.substr(pos, equals - pos));
    std::string value;
    pos = equals + 2;
    while (pos < text.size() && text[pos] != '"') {
      if (text[pos] == '\\' && pos + 1 < text.size()) ++pos;
      value.push_back(text[pos++]);
    }
    out.second[key] = value;
    pos += 1;  // the closing quote
    if (pos < text.size() && text[pos] == ',') ++pos;
  }
  if (rest != nullptr) *rest = pos < text.size() ? text.substr(pos + 1) : "";
  return out;
}

// The value of the sample whose name and labels are `series`, in any label order (e.g.
// `kdp_device_plugin_devices{resource_name="example.com/gpu",health="Healthy"}`), or nullopt.
inline std::optional<double> Sample(const std::string& text, const std::string& series) {
  const auto wanted = ParseSeries(series, nullptr);
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.empty() || line[0] == '#') continue;
    absl::string_view rest;
    if (ParseSeries(line, &rest) != wanted) continue;
    const std::string value(absl::StripAsciiWhitespace(rest));
    if (value == "+Inf") return HUGE_VAL;
    return std::strtod(value.c_str(), nullptr);
  }
  return std::nullopt;
}

// Sample() of a fresh scrape of /metrics on `port`; nullopt when it did not answer 200.
inline std::optional<double> ScrapeSample(int port, const std::string& series) {
  Scrape scrape = HttpGet(port, "/metrics");
  if (scrape.status != 200) return std::nullopt;
  return Sample(scrape.body, series);
}

}  // namespace kdp::testing

#endif  // KDP_TESTS_UNIT_SDK_METRICS_SCRAPE_H_
