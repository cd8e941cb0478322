// Helpers of footprint_benchmark (header-only, used by that one program): child processes started
// with fork/exec whose memory is read from /proc, a plain HTTP GET for kdp-manager's local
// resource API, the kubeconfig's server and token, and hwloc XML topologies with any number of
// GPUs (the example binaries discover their devices from such a file).
//
// Thread-safety: Child is externally synchronized; the free functions are thread-safe.
#ifndef KDP_BENCH_FOOTPRINT_SUPPORT_H_
#define KDP_BENCH_FOOTPRINT_SUPPORT_H_

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/bench_temp_dir.h"
#include "tests/testing/loopback_http.h"

extern char** environ;

namespace kdp::bench {

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

inline bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  return static_cast<bool>(out);
}

// Polls `condition` every `interval` until it holds (true) or `timeout` passes (false).
template <typename Condition>
bool WaitFor(Condition condition, absl::Duration timeout,
             absl::Duration interval = absl::Milliseconds(2)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!condition()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(interval);
  }
  return true;
}

// A child process started with fork/exec, stdin /dev/null, stdout and stderr to a log file. It gets
// SIGTERM if this process dies first (PR_SET_PDEATHSIG); the destructor stops it as Stop() does.
class Child {
 public:
  // Starts argv (argv[0] a path). INTERNAL when fork fails; a failed exec shows as exit 127.
  static absl::StatusOr<std::unique_ptr<Child>> Start(const std::vector<std::string>& argv,
                                                      const std::string& log_path) {
    // Everything the child touches is built before fork: only async-signal-safe calls after it.
    std::vector<char*> args;
    for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != parent) _exit(127);
      const int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      const int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (log < 0 || null < 0) _exit(127);
      dup2(null, 0);
      dup2(log, 1);
      dup2(log, 2);
      execve(args[0], args.data(), environ);
      _exit(127);
    }
    return std::unique_ptr<Child>(new Child(pid, argv[0], log_path));
  }

  ~Child() { (void)Stop(); }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }

  // True until the child has exited (reaps it then).
  bool Running() {
    if (!exited_ && waitpid(pid_, &status_, WNOHANG) == pid_) exited_ = true;
    return !exited_;
  }

  // Blocks until the child exits; its wait status.
  int Wait() {
    if (!exited_ && waitpid(pid_, &status_, 0) == pid_) exited_ = true;
    return status_;
  }

  // SIGTERM, up to 10 s for it to exit, then SIGKILL. True when it exited 0 on SIGTERM.
  bool Stop() {
    if (Running()) {
      kill(pid_, SIGTERM);
      WaitFor([this] { return !Running(); }, absl::Seconds(10), absl::Milliseconds(1));
      if (Running()) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status_, 0);
        exited_ = true;
        return false;
      }
    }
    return WIFEXITED(status_) && WEXITSTATUS(status_) == 0;
  }

  // "<program> exited (status N)" with the log, or "<program> is running".
  std::string Describe() {
    if (Running()) return absl::StrCat(program_, " is running");
    return absl::StrCat(program_, " exited (wait status ", status_, "); its log:\n",
                        ReadFile(log_path_));
  }

 private:
  Child(pid_t pid, std::string program, std::string log_path)
      : pid_(pid), program_(std::move(program)), log_path_(std::move(log_path)) {}

  const pid_t pid_;
  const std::string program_;
  const std::string log_path_;
  bool exited_ = false;
  int status_ = 0;
};

// What /proc says about one process's memory.
struct Memory {
  std::map<std::string, long> status = {};  // /proc/<pid>/status, "Key: <number>" lines (KiB).
  std::map<std::string, long> rollup = {};  // /proc/<pid>/smaps_rollup (KiB).
  // Rss by mapping, largest first (KiB): a file's name and permissions ("libc.so.6 r-xp": its
  // code; "kdp-gpu-plugin rw-p": a static binary's data, relocated on start), [heap], [anon],
  // [stack], ...
  std::vector<std::pair<std::string, long>> by_mapping = {};
  // The process's threads by name (/proc/<pid>/task/*/comm), with how many have each name.
  std::map<std::string, int> thread_names = {};

  static long Get(const std::map<std::string, long>& map, const char* key) {
    auto it = map.find(key);
    return it == map.end() ? 0 : it->second;
  }
  double StatusMiB(const char* key) const { return static_cast<double>(Get(status, key)) / 1024; }
  double RollupMiB(const char* key) const { return static_cast<double>(Get(rollup, key)) / 1024; }
  // "name 5.08, name 1.82, ..." for the `count` largest mappings (MiB).
  std::string Largest(size_t count) const {
    std::string text;
    for (size_t i = 0; i < std::min(count, by_mapping.size()); ++i) {
      absl::StrAppendFormat(&text, "%s%s %.2f", i == 0 ? "" : ", ", by_mapping[i].first,
                            static_cast<double>(by_mapping[i].second) / 1024);
    }
    return text;
  }
  // "main 1, grpc_global_tim 1, ..." (names as the kernel keeps them, 15 characters).
  std::string Threads() const {
    std::string text;
    for (const auto& [name, count] : thread_names) {
      absl::StrAppend(&text, text.empty() ? "" : ", ", name, " ", count);
    }
    return text;
  }
};

inline std::map<std::string, long> ParseProcNumbers(const std::string& text) {
  std::map<std::string, long> values;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const size_t colon = line.find(':');
    char* end = nullptr;
    if (colon == std::string::npos) continue;
    const long value = std::strtol(line.c_str() + colon + 1, &end, 10);
    if (end != line.c_str() + colon + 1) values[line.substr(0, colon)] = value;
  }
  return values;
}

// Reads /proc/<pid>/{status,smaps_rollup,smaps}. UNAVAILABLE when the process is gone.
inline absl::StatusOr<Memory> ReadMemory(pid_t pid) {
  const std::string proc = absl::StrCat("/proc/", pid);
  Memory memory;
  memory.status = ParseProcNumbers(ReadFile(proc + "/status"));
  memory.rollup = ParseProcNumbers(ReadFile(proc + "/smaps_rollup"));
  if (Memory::Get(memory.status, "VmRSS") == 0) {
    return absl::UnavailableError(absl::StrCat("no VmRSS in ", proc, "/status"));
  }
  std::map<std::string, long> by_mapping;
  std::istringstream smaps(ReadFile(proc + "/smaps"));
  std::string mapping;
  for (std::string line; std::getline(smaps, line);) {
    std::istringstream fields(line);
    std::string first;
    fields >> first;
    if (first.empty()) continue;
    if (first.back() != ':') {  // A mapping: "start-end perms offset dev inode [path]".
      std::string perms, offset, dev, inode, path;
      fields >> perms >> offset >> dev >> inode >> std::ws;
      std::getline(fields, path);
      mapping = path.empty() ? "[anon]"
                : path.front() == '['
                    ? path
                    : std::filesystem::path(path).filename().string() + " " + perms;
    } else if (first == "Rss:") {
      long kib = 0;
      fields >> kib;
      by_mapping[mapping] += kib;
    }
  }
  memory.by_mapping.assign(by_mapping.begin(), by_mapping.end());
  std::error_code error;
  for (const auto& task : std::filesystem::directory_iterator(proc + "/task", error)) {
    std::string name = ReadFile(task.path().string() + "/comm");
    while (!name.empty() && name.back() == '\n') name.pop_back();
    ++memory.thread_names[name];
  }
  std::sort(memory.by_mapping.begin(), memory.by_mapping.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  return memory;
}

// GET `path` from the local API a kubeconfig written by kdp-manager names (https, its CA and
// bearer token) over a fresh connection; returns the body of a 200 answer, UNAVAILABLE otherwise.
inline absl::StatusOr<std::string> KubeconfigGet(const std::string& kubeconfig_path,
                                                 const std::string& path) {
  const kdp::testing::KubeconfigParts api = kdp::testing::ReadKubeconfigParts(kubeconfig_path);
  if (api.port == 0 || api.ca_pem.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(kubeconfig_path, ": no https server with a CA (", api.server, ")"));
  }
  kdp::testing::HttpAnswer answer =
      kdp::testing::SendHttpRequest({.host = api.host,
                                     .port = api.port,
                                     .path = path,
                                     .headers = absl::StrCat("Authorization: Bearer ", api.token,
                                                             "\r\nAccept: application/json\r\n"),
                                     .timeout = absl::Seconds(10),
                                     .ca_pem = api.ca_pem});
  if (answer.status != 200) {
    return absl::UnavailableError(absl::StrCat("GET ", path, ": ", answer.status, " ", answer.error,
                                               answer.body.substr(0, 200)));
  }
  return answer.body;
}

// An hwloc 2 XML machine with two NUMA nodes (one core each) and `gpus` NVIDIA 3D controllers
// (PCI class 0x0302) split between them, each with its DRM nodes card<N> and renderD<128+N>, as
// `lstopo --of xml` writes them. At most 512 GPUs (256 functions on each node's bus 00).
inline std::string GpuTopologyXml(int gpus) {
  std::string xml =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
      "<topology version=\"2.0\">\n"
      "  <object type=\"Machine\" os_index=\"0\" cpuset=\"0x00000003\" "
      "complete_cpuset=\"0x00000003\" allowed_cpuset=\"0x00000003\" nodeset=\"0x00000003\" "
      "complete_nodeset=\"0x00000003\" allowed_nodeset=\"0x00000003\">\n";
  int next = 0;
  for (int node = 0; node < 2; ++node) {
    const std::string set = absl::StrFormat(
        "cpuset=\"0x%08x\" complete_cpuset=\"0x%08x\" nodeset=\"0x%08x\" "
        "complete_nodeset=\"0x%08x\"",
        1 << node, 1 << node, 1 << node, 1 << node);
    absl::StrAppendFormat(&xml, "    <object type=\"Package\" os_index=\"%d\" %s>\n", node, set);
    absl::StrAppendFormat(&xml,
                          "      <object type=\"NUMANode\" os_index=\"%d\" %s "
                          "local_memory=\"68719476736\"/>\n",
                          node, set);
    absl::StrAppendFormat(&xml, "      <object type=\"Core\" os_index=\"%d\" %s>\n", node, set);
    absl::StrAppendFormat(
        &xml, "        <object type=\"PU\" os_index=\"%d\" %s/>\n      </object>\n", node, set);
    absl::StrAppendFormat(&xml,
                          "      <object type=\"Bridge\" bridge_type=\"0-1\" depth=\"0\" "
                          "bridge_pci=\"%04x:[00-00]\">\n",
                          node);
    const int here = node == 0 ? (gpus + 1) / 2 : gpus - next;
    for (int i = 0; i < here; ++i, ++next) {
      absl::StrAppendFormat(&xml,
                            "        <object type=\"PCIDev\" pci_busid=\"%04x:00:%02x.%d\" "
                            "pci_type=\"0302 [10de:2330] [10de:16c1] a1\" "
                            "pci_link_speed=\"63.015385\">\n",
                            node, i / 8, i % 8);
      absl::StrAppendFormat(&xml,
                            "          <object type=\"OSDev\" name=\"card%d\" osdev_type=\"1\"/>\n"
                            "          <object type=\"OSDev\" name=\"renderD%d\" "
                            "osdev_type=\"1\"/>\n        </object>\n",
                            next, 128 + next);
    }
    xml += "      </object>\n    </object>\n";
  }
  xml +=
      "  </object>\n"
      "  <distances2 type=\"NUMANode\" nbobjs=\"2\" kind=\"5\" name=\"NUMALatency\" "
      "indexing=\"os\">\n    <indexes length=\"4\">0 1 </indexes>\n"
      "    <u64values length=\"12\">10 21 21 10 </u64values>\n  </distances2>\n</topology>\n";
  return xml;
}

}  // namespace kdp::bench

#endif  // KDP_BENCH_FOOTPRINT_SUPPORT_H_
