// Scrapes a kdp metrics endpoint in tests: one HTTP/1.1 GET over a plain loopback socket, and a
// lookup of one sample in the Prometheus text it returns. A raw socket instead of
// httplib::Client: cpp-httplib's header must be compiled with the definitions of its pkg-config
// file, which test targets do not get (see tests/integration/dra_fixture.h).
//
// Thread-safety: the functions are thread-safe.
#ifndef KDP_TESTS_UNIT_SDK_METRICS_SCRAPE_H_
#define KDP_TESTS_UNIT_SDK_METRICS_SCRAPE_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

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

namespace kdp::testing {

struct Scrape {
  int status = 0;  // 0 when nothing answered
  std::string body = {};
};

// GET http://127.0.0.1:<port><path> with "Connection: close"; bounded by 10 s of inactivity.
inline Scrape HttpGet(int port, const std::string& path) {
  Scrape result;
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return result;
  timeval timeout{.tv_sec = 10, .tv_usec = 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    ::close(fd);
    return result;
  }
  const std::string request = absl::StrCat("GET ", path, " HTTP/1.1\r\nHost: 127.0.0.1:", port,
                                           "\r\nConnection: close\r\n\r\n");
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    ::close(fd);
    return result;
  }
  std::string raw;
  char buffer[8192];
  for (;;) {
    ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) break;
    raw.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  const size_t header_end = raw.find("\r\n\r\n");
  if (!absl::StartsWith(raw, "HTTP/1.") || header_end == std::string::npos || raw.size() < 12 ||
      !absl::SimpleAtoi(raw.substr(9, 3), &result.status)) {
    result.status = 0;
    return result;
  }
  result.body = raw.substr(header_end + 4);
  return result;
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
