// What the hung-peer and hostile-peer fault suites (hung_peers_test.cc, hostile_peers_test.cc)
// share: a prober that asks kdp-manager for its status over and over while a peer misbehaves and
// records how long every answer took, the manager's resident memory from /proc, a unix socket
// that accepts connections and never speaks, and the latency bound the suites assert.
//
// Thread-safety: StatusProber and SilentSocket are thread-safe (their own threads run inside);
// the free functions keep no state.
#ifndef KDP_TESTS_FAULT_PEERS_FIXTURE_H_
#define KDP_TESTS_FAULT_PEERS_FIXTURE_H_

#include <grpcpp/grpcpp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/grpc_server.h"
#include "gtest/gtest.h"
#include "kdp/admin/v1/admin.grpc.pb.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define KDP_PEERS_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define KDP_PEERS_SANITIZED 1
#endif

namespace kdp::testing {

// The bound on every status answer while a peer misbehaves: the 100 ms. Under ASan or
// TSan (CI runs both on 2 cores) everything the manager does costs 3-10x more, and the manager
// and the hostile peer share those 2 cores with CI's ThreadSanitizer and release builds running
// beside the tests, so the bound gets an allowance of 10x there: a fresh .ci/run (2026-11-30)
// measured a 760 ms maximum under ASan during the registration flood, its median far below. A
// manager that answered status behind a plugin's dial (1 s and more) still exceeds it; the
// figures printed are the measured ones either way.
inline absl::Duration ResponsivenessBound() {
#ifdef KDP_PEERS_SANITIZED
  return absl::Seconds(1);
#else
  return absl::Milliseconds(100);
#endif
}

// The slowest refusal a registration flood may see. Under ThreadSanitizer (5-15x slower than
// ASan, and the flooding client, collecting 1,000 answers a second, is instrumented too) the
// measured refusals reached 736 ms in CI while the manager's threads stayed bounded, and under
// ASan 561 ms (a fresh .ci/run whose ThreadSanitizer and release builds ran beside the test); the
// allowance under either is 2 s, which a manager that queued refusals behind the 1 s dials would
// exceed. The figure itself is printed either way.
inline absl::Duration FloodRefusalBound() {
#ifdef KDP_PEERS_SANITIZED
  return absl::Seconds(2);
#else
  return ResponsivenessBound();
#endif
}

inline bool Sanitized() {
#ifdef KDP_PEERS_SANITIZED
  return true;
#else
  return false;
#endif
}

// An integer from the environment, or `fallback` when unset or not a number.
inline int EnvInt(const char* name, int fallback) {
  const char* text = std::getenv(name);
  int value = 0;
  return text != nullptr && absl::SimpleAtoi(text, &value) ? value : fallback;
}

inline void Figure(const std::string& name, const std::string& value) {
  std::printf("FIGURE: %s: %s\n", name.c_str(), value.c_str());
  std::fflush(stdout);
}

inline std::string Ms(absl::Duration d) {
  return absl::StrCat(absl::ToDoubleMilliseconds(d), " ms");
}

// VmRSS (resident memory) of `pid` in KiB from /proc/<pid>/status; -1 when it cannot be read.
inline int64_t VmRssKib(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    absl::string_view rest = line;
    if (!absl::ConsumePrefix(&rest, "VmRSS:")) continue;
    rest = absl::StripAsciiWhitespace(rest);
    absl::ConsumeSuffix(&rest, "kB");
    int64_t kib = -1;
    return absl::SimpleAtoi(absl::StripAsciiWhitespace(rest), &kib) ? kib : -1;
  }
  return -1;
}

// Threads of `pid` (Threads: in /proc/<pid>/status); -1 when it cannot be read.
inline int ThreadCount(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    absl::string_view rest = line;
    if (!absl::ConsumePrefix(&rest, "Threads:")) continue;
    int threads = -1;
    return absl::SimpleAtoi(absl::StripAsciiWhitespace(rest), &threads) ? threads : -1;
  }
  return -1;
}

// Asks the manager's admin API for its status (the call `kdpctl status` makes, on a channel made
// as kdpctl makes it) continuously on its own thread, from Start() until Stop(), and keeps the
// latency of every answer.
class StatusProber {
 public:
  struct Summary {
    int answers = 0;
    int failures = 0;
    std::string first_failure = {};
    absl::Duration max = absl::ZeroDuration();
    absl::Duration p99 = absl::ZeroDuration();
    absl::Duration median = absl::ZeroDuration();
  };

  explicit StatusProber(std::string admin_socket)
      : stub_(kdp::admin::v1::Admin::NewStub(DialUnixSocket(admin_socket))) {}
  ~StatusProber() { (void)Stop(); }

  StatusProber(const StatusProber&) = delete;
  StatusProber& operator=(const StatusProber&) = delete;

  // One call first, outside the figures (it opens the connection).
  void Start() {
    (void)Call();
    thread_ = std::thread([this] {
      while (!stop_.load()) {
        const absl::Time start = absl::Now();
        grpc::Status status = Call();
        const absl::Duration took = absl::Now() - start;
        // KDP_PEERS_DEBUG=1: every answer slower than 30 ms, with its UTC time (as the manager
        // logs it), to find what the manager was doing then.
        if (debug_ && took > absl::Milliseconds(30)) {
          std::printf("SLOW status answer at %s: %s\n",
                      absl::FormatTime("%H:%M:%E6S", start, absl::UTCTimeZone()).c_str(),
                      absl::FormatDuration(took).c_str());
        }
        absl::MutexLock lock(&mu_);
        if (status.ok()) {
          latencies_.push_back(took);
        } else if (failures_++ == 0) {
          first_failure_ = absl::StrCat(status.error_code(), ": ", status.error_message());
        }
        // "Continuously", with a breath between calls so that the prober itself does not take
        // one of the two CI cores away from the manager.
        mu_.AwaitWithTimeout(absl::Condition(&stopping_), absl::Milliseconds(2));
      }
    });
  }

  // Stops the thread (once) and summarizes every answer since Start().
  Summary Stop() {
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
    }
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
    absl::MutexLock lock(&mu_);
    Summary summary;
    summary.answers = static_cast<int>(latencies_.size());
    summary.failures = failures_;
    summary.first_failure = first_failure_;
    std::vector<absl::Duration> sorted = latencies_;
    std::sort(sorted.begin(), sorted.end());
    if (!sorted.empty()) {
      summary.max = sorted.back();
      summary.p99 = sorted[std::min(sorted.size() - 1, sorted.size() * 99 / 100)];
      summary.median = sorted[sorted.size() / 2];
    }
    return summary;
  }

 private:
  grpc::Status Call() {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    kdp::admin::v1::NodeStatus status;
    return stub_->GetStatus(&context, kdp::admin::v1::GetStatusRequest(), &status);
  }

  const std::unique_ptr<kdp::admin::v1::Admin::Stub> stub_;
  const bool debug_ = std::getenv("KDP_PEERS_DEBUG") != nullptr;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<absl::Duration> latencies_ ABSL_GUARDED_BY(mu_);
  int failures_ ABSL_GUARDED_BY(mu_) = 0;
  std::string first_failure_ ABSL_GUARDED_BY(mu_);
};

// Prints the summary as FIGURE lines named after `scenario` and checks the bound: every status
// call answered, none slower than ResponsivenessBound().
inline void ExpectResponsive(const std::string& scenario, const StatusProber::Summary& summary) {
  Figure(absl::StrCat(scenario, " status answers"), absl::StrCat(summary.answers));
  Figure(absl::StrCat(scenario, " status latency max"), Ms(summary.max));
  Figure(absl::StrCat(scenario, " status latency p99"), Ms(summary.p99));
  Figure(absl::StrCat(scenario, " status latency median"), Ms(summary.median));
  if (Sanitized()) {
    Figure(absl::StrCat(scenario, " status latency bound (sanitizer allowance)"),
           Ms(ResponsivenessBound()));
  }
  EXPECT_GT(summary.answers, 0) << scenario;
  EXPECT_EQ(summary.failures, 0) << scenario << ": " << summary.first_failure;
  EXPECT_LE(summary.max, ResponsivenessBound())
      << scenario << ": p99 " << summary.p99 << ", median " << summary.median;
}

// A unix socket that accepts every connection and never reads or writes: a peer that hangs
// before the first byte of HTTP/2. The connections stay open until Stop().
class SilentSocket {
 public:
  SilentSocket() = default;
  ~SilentSocket() { Stop(); }
  SilentSocket(const SilentSocket&) = delete;
  SilentSocket& operator=(const SilentSocket&) = delete;

  // Listens on `path` (replacing a stale file); false with errno's text in `error` on failure.
  bool Listen(const std::string& path, std::string* error) {
    ::unlink(path.c_str());
    listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
    if (listen_fd_ < 0 ||
        ::bind(listen_fd_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0 ||
        ::listen(listen_fd_, 128) != 0) {
      *error = absl::StrCat("cannot listen on ", path, ": ", std::strerror(errno));
      return false;
    }
    thread_ = std::thread([this] {
      while (!stop_.load()) {
        pollfd fd{.fd = listen_fd_, .events = POLLIN, .revents = 0};
        if (::poll(&fd, 1, 20) <= 0) continue;
        const int accepted = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (accepted < 0) continue;
        absl::MutexLock lock(&mu_);
        accepted_.push_back(accepted);
      }
    });
    return true;
  }

  // Connections accepted so far.
  int accepted() const {
    absl::MutexLock lock(&mu_);
    return static_cast<int>(accepted_.size());
  }

  void Stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
    absl::MutexLock lock(&mu_);
    for (int fd : accepted_) ::close(fd);
    accepted_.clear();
    if (listen_fd_ >= 0) ::close(listen_fd_);
    listen_fd_ = -1;
  }

 private:
  int listen_fd_ = -1;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  mutable absl::Mutex mu_;
  std::vector<int> accepted_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kdp::testing

#endif  // KDP_TESTS_FAULT_PEERS_FIXTURE_H_
