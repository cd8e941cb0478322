// Small helpers the benchmark programs share: single-sample statistics (mean, p50, p99) and
// whether a directory is in memory (tmpfs or ramfs, where an fsync costs nothing).
#ifndef KDP_BENCH_BENCH_STATS_H_
#define KDP_BENCH_BENCH_STATS_H_

#include <linux/magic.h>
#include <sys/vfs.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <string>
#include <vector>

namespace kdp::bench {

// CPU time of the calling thread, µs.
inline double ThreadCpuMicros() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e6 + static_cast<double>(now.tv_nsec) / 1e3;
}

inline double Micros(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

struct Stats {
  double mean = 0, p50 = 0, p99 = 0;
};

inline Stats Summarize(std::vector<double> values) {
  Stats stats;
  if (values.empty()) return stats;
  stats.mean =
      std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  std::sort(values.begin(), values.end());
  stats.p50 = values[values.size() / 2];
  stats.p99 = values[std::min(values.size() - 1, values.size() * 99 / 100)];
  return stats;
}

// Whether `path` is on tmpfs or ramfs, whose fsyncs cost nothing.
inline bool InMemory(const std::string& path) {
  struct statfs fs {};
  return ::statfs(path.c_str(), &fs) == 0 && (fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC);
}

}  // namespace kdp::bench

#endif  // KDP_BENCH_BENCH_STATS_H_
