// Logging implementation: level and format state, the text (klog-like) and JSON line renderers.
#include "common/logging.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>

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

// Length of the valid UTF-8 sequence at s[i], or 0 when it is not one (overlong forms,
// surrogates and code points above U+10FFFF are invalid).
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  size_t n = 0;
  uint32_t cp = 0;
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) {
    n = 2;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

void AppendJsonString(std::string_view s, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const size_t n = Utf8SequenceLength(s, i);
      if (n == 0) {
        out->append("\\ufffd");
        ++i;
      } else {
        out->append(s.substr(i, n));
        i += n;
      }
      continue;
    }
    ++i;
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\f':
        out->append("\\f");
        break;
      default:
        if (c < 0x20 || c == 0x7F) {
          out->append("\\u00");
          out->push_back(kHex[c >> 4]);
          out->push_back(kHex[c & 0xF]);
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
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
    AppendJsonString(std::string(base) + ":" + std::to_string(line), &out);
    out.append(",\"msg\":");
    AppendJsonString(message, &out);
    for (const Field& field : fields) {
      out.push_back(',');
      AppendJsonString(field.key, &out);
      out.push_back(':');
      if (field.json_literal) {
        out.append(field.value);
      } else {
        AppendJsonString(field.value, &out);
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
