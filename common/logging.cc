// Logging implementation: level and format state, the text (klog-like) and JSON line renderers.
#include "common/logging.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>

// The JSON lines escape strings as Go's encoding/json does (klog's JSON logger is Go).
#include "common/go_json.h"

namespace kdp::log {
namespace {

Level InitialLevel() {
  Level level = Level::kInfo;
  if (const char* env = std::getenv("KDP_LOG_LEVEL")) ParseLevel(env, &level);
  return level;
}

Format InitialFormat() {
  Format format = Format::kText;
  if (const char* env = std::getenv("KDP_LOG_FORMAT")) ParseFormat(env, &format);
  return format;
}

std::atomic<int>& MinLevelStorage() {
  static std::atomic<int> level{static_cast<int>(InitialLevel())};
  return level;
}

std::atomic<int>& FormatStorage() {
  static std::atomic<int> format{static_cast<int>(InitialFormat())};
  return format;
}

std::string_view BaseName(const char* file) {
  std::string_view base(file);
  if (auto slash = base.rfind('/'); slash != std::string_view::npos) base = base.substr(slash + 1);
  return base;
}

void AppendQuotedText(std::string_view s, std::string* out) {
  out->push_back('"');
  for (char c : s) {
    if (c == '"' || c == '\\') out->push_back('\\');
    if (c == '\n') {
      out->append("\\n");
      continue;
    }
    out->push_back(c);
  }
  out->push_back('"');
}

constexpr const char* kLevelNames[] = {"debug", "info", "warning", "error"};

}  // namespace

void SetMinLevel(Level level) { MinLevelStorage().store(static_cast<int>(level)); }

Level MinLevel() { return static_cast<Level>(MinLevelStorage().load(std::memory_order_relaxed)); }

bool ParseLevel(std::string_view text, Level* level) {
  if (text == "debug")
    *level = Level::kDebug;
  else if (text == "info")
    *level = Level::kInfo;
  else if (text == "warning")
    *level = Level::kWarning;
  else if (text == "error")
    *level = Level::kError;
  else
    return false;
  return true;
}

void SetFormat(Format format) { FormatStorage().store(static_cast<int>(format)); }

Format CurrentFormat() {
  return static_cast<Format>(FormatStorage().load(std::memory_order_relaxed));
}

bool ParseFormat(std::string_view text, Format* format) {
  if (text == "text")
    *format = Format::kText;
  else if (text == "json")
    *format = Format::kJson;
  else
    return false;
  return true;
}

std::string FormatLine(Format format, Level level, const char* file, int line,
                       std::string_view message, const std::vector<Field>& fields,
                       long long time_ns, long thread_id) {
  const std::string_view base = BaseName(file);
  std::string out;
  const time_t seconds = static_cast<time_t>(time_ns / 1000000000);
  const long nanos = static_cast<long>(time_ns % 1000000000);
  if (format == Format::kJson) {
    char ts[64];
    std::snprintf(ts, sizeof(ts), "%lld.%06ld", static_cast<long long>(seconds), nanos / 1000);
    out.append("{\"ts\":").append(ts).append(",\"level\":\"");
    out.append(kLevelNames[static_cast<int>(level)]).append("\",\"caller\":");
    AppendGoJsonString(std::string(base) + ":" + std::to_string(line), &out);
    out.append(",\"msg\":");
    AppendGoJsonString(message, &out);
    for (const Field& field : fields) {
      out.push_back(',');
      AppendGoJsonString(field.key, &out);
      out.push_back(':');
      if (field.json_literal) {
        out.append(field.value);
      } else {
        AppendGoJsonString(field.value, &out);
      }
    }
    out.push_back('}');
    return out;
  }
  static constexpr char kLetters[] = {'D', 'I', 'W', 'E'};
  tm parts{};
  gmtime_r(&seconds, &parts);
  char header[96];
  std::snprintf(header, sizeof(header), "%c%02d%02d %02d:%02d:%02d.%06ld %7ld ",
                kLetters[static_cast<int>(level)], parts.tm_mon + 1, parts.tm_mday, parts.tm_hour,
                parts.tm_min, parts.tm_sec, nanos / 1000, thread_id);
  out.append(header).append(base).push_back(':');
  out.append(std::to_string(line)).append("] \"").append(message).push_back('"');
  for (const Field& field : fields) {
    out.push_back(' ');
    out.append(field.key).push_back('=');
    AppendQuotedText(field.value, &out);
  }
  return out;
}

void Write(Level level, const char* file, int line, std::string_view message,
           const std::vector<Field>& fields) {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  std::string text = FormatLine(CurrentFormat(), level, file, line, message, fields,
                                static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec,
                                static_cast<long>(syscall(SYS_gettid)));
  text.push_back('\n');
  // One fwrite per line: stdio locks the stream, so concurrent lines never interleave.
  std::fwrite(text.data(), 1, text.size(), stderr);
}

}  // namespace kdp::log
