#include "common/logging.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>

namespace kdp::log {
namespace {

Level InitialLevel() {
  Level level = Level::kInfo;
  if (const char* env = std::getenv("KDP_LOG_LEVEL")) ParseLevel(env, &level);
  return level;
}

std::atomic<int>& MinLevelStorage() {
  static std::atomic<int> level{static_cast<int>(InitialLevel())};
  return level;
}

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

void Write(Level level, const char* file, int line, std::string_view message,
           std::string_view fields) {
  static constexpr char kLetters[] = {'D', 'I', 'W', 'E'};
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  tm parts{};
  gmtime_r(&ts.tv_sec, &parts);
  std::string_view base(file);
  if (auto slash = base.rfind('/'); slash != std::string_view::npos) base = base.substr(slash + 1);
  // One fprintf per line: stdio locks the stream, so concurrent lines never interleave.
  std::fprintf(stderr, "%c%02d%02d %02d:%02d:%02d.%06ld %7ld %.*s:%d] \"%.*s\"%.*s\n",
               kLetters[static_cast<int>(level)], parts.tm_mon + 1, parts.tm_mday, parts.tm_hour,
               parts.tm_min, parts.tm_sec, ts.tv_nsec / 1000,
               static_cast<long>(syscall(SYS_gettid)), static_cast<int>(base.size()), base.data(),
               line, static_cast<int>(message.size()), message.data(),
               static_cast<int>(fields.size()), fields.data());
}

}  // namespace kdp::log
