#include "manager/src/pluginmanager/plugin_watcher.h"

#include <dirent.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/unix_socket.h"

namespace kdp::manager::pluginmanager {
namespace {

// fsnotify's Create (IN_CREATE, IN_MOVED_TO) and Remove (IN_DELETE) plus renames away, which the
// kubelet ignores (a socket moved out of the tree would otherwise stay registered).
constexpr uint32_t kWatchMask = IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM |
                                IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;

bool Ignored(const char* name) { return name[0] == '.'; }

SocketId IdOf(const struct stat& st) {
  return {.dev = st.st_dev,
          .ino = st.st_ino,
          .ctime_ns = static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec};
}

}  // namespace

PluginWatcher::PluginWatcher(std::string dir, Callbacks callbacks)
    : dir_(std::move(dir)), callbacks_(std::move(callbacks)) {}

PluginWatcher::~PluginWatcher() { Stop(); }

absl::Status PluginWatcher::Start() {
  absl::MutexLock lock(&mu_);
  if (started_) return absl::FailedPreconditionError("plugin watcher already started");
  if (absl::Status made = MakeDirectories(dir_, 0750); !made.ok()) {
    return absl::InternalError(
        absl::StrCat("failed to create plugins registry directory ", dir_, ": ", made.message()));
  }
  inotify_fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (inotify_fd_ < 0) {
    return absl::InternalError(absl::StrCat("inotify_init1: ", std::strerror(errno)));
  }
  stop_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (stop_fd_ < 0) {
    const int saved = errno;
    ::close(inotify_fd_);
    inotify_fd_ = -1;
    return absl::InternalError(absl::StrCat("eventfd: ", std::strerror(saved)));
  }
  // Watch first, walk second (as traversePluginDir does): a socket created in between is reported
  // twice, which the receiver recognises by its SocketId, instead of not at all.
  if (::inotify_add_watch(inotify_fd_, dir_.c_str(), kWatchMask) < 0) {
    const int saved = errno;
    ::close(inotify_fd_);
    ::close(stop_fd_);
    inotify_fd_ = stop_fd_ = -1;
    return absl::InternalError(absl::StrCat("failed to watch ", dir_, ": ", std::strerror(saved)));
  }
  WatchTree(dir_, nullptr);
  started_ = true;
  thread_ = std::thread([this] { Loop(); });
  KDP_LOG_INFO("Plugin watcher started", "path", dir_);
  return absl::OkStatus();
}

void PluginWatcher::Stop() {
  std::thread thread;
  {
    absl::MutexLock lock(&mu_);
    if (!started_) return;
    started_ = false;
    thread = std::move(thread_);
  }
  const uint64_t one = 1;
  if (::write(stop_fd_, &one, sizeof(one)) < 0) {
    KDP_LOG_ERROR("Cannot wake the plugin watcher up", "err", std::strerror(errno));
  }
  if (thread.joinable()) thread.join();
  ::close(inotify_fd_);
  ::close(stop_fd_);
  inotify_fd_ = stop_fd_ = -1;
  watches_.clear();
}

void PluginWatcher::WatchTree(const std::string& dir, std::map<std::string, SocketId>* found) {
  const int wd = ::inotify_add_watch(inotify_fd_, dir.c_str(), kWatchMask);
  if (wd < 0) {
    // Gone already (its removal event follows) or not accessible: nothing to report below it.
    KDP_LOG_WARNING("Failed to watch plugin directory", "path", dir, "err", std::strerror(errno));
    return;
  }
  watches_[wd] = dir;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    KDP_LOG_WARNING("Failed to read plugin directory", "path", dir, "err", std::strerror(errno));
    return;
  }
  std::vector<std::string> subdirs;
  while (const dirent* entry = ::readdir(d)) {
    if (Ignored(entry->d_name)) continue;  // ".", ".." and dotfiles
    std::string path = absl::StrCat(dir, "/", entry->d_name);
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      subdirs.push_back(std::move(path));
    } else if (S_ISSOCK(st.st_mode)) {
      if (found != nullptr) {
        (*found)[path] = IdOf(st);
      } else {
        callbacks_.socket_created(path, IdOf(st));
      }
    } else {
      KDP_LOG_DEBUG("Ignoring file in plugins registry", "path", path);
    }
  }
  ::closedir(d);
  for (const std::string& subdir : subdirs) WatchTree(subdir, found);
}

void PluginWatcher::Unwatch(const std::string& dir) {
  const std::string prefix = dir + "/";
  for (auto it = watches_.begin(); it != watches_.end();) {
    if (it->second == dir || absl::StartsWith(it->second, prefix)) {
      ::inotify_rm_watch(inotify_fd_, it->first);  // EINVAL when already gone: fine
      it = watches_.erase(it);
    } else {
      ++it;
    }
  }
}

void PluginWatcher::Resync() {
  KDP_LOG_WARNING("Plugin watcher lost events (inotify queue overflow); rescanning", "path", dir_);
  std::map<std::string, SocketId> found;
  WatchTree(dir_, &found);
  callbacks_.resynced(found);
}

void PluginWatcher::HandleEvents(const char* buffer, size_t length) {
  size_t offset = 0;
  while (offset + sizeof(inotify_event) <= length) {
    inotify_event event;
    std::memcpy(&event, buffer + offset, sizeof(event));
    const char* name = buffer + offset + sizeof(inotify_event);
    offset += sizeof(inotify_event) + event.len;
    if (event.mask & IN_Q_OVERFLOW) {
      Resync();
      continue;
    }
    if (event.mask & IN_IGNORED) {
      watches_.erase(event.wd);
      continue;
    }
    auto watch = watches_.find(event.wd);
    if (watch == watches_.end()) continue;  // a directory unwatched in the meantime
    if (event.mask & (IN_DELETE_SELF | IN_MOVE_SELF)) {
      if (watch->second == dir_) {
        KDP_LOG_ERROR(
            "The plugins registry directory was removed or moved; plugins are no longer "
            "discovered until kdp-manager restarts",
            "path", dir_);
      }
      continue;
    }
    if (event.len == 0 || Ignored(name)) continue;
    const std::string path = absl::StrCat(watch->second, "/", name);
    if (event.mask & (IN_CREATE | IN_MOVED_TO)) {
      if (event.mask & IN_ISDIR) {
        WatchTree(path, nullptr);
        continue;
      }
      struct stat st {};
      if (::lstat(path.c_str(), &st) != 0) continue;  // removed again; its event follows
      if (!S_ISSOCK(st.st_mode)) {
        KDP_LOG_DEBUG("Ignoring non socket file", "path", path);
        continue;
      }
      callbacks_.socket_created(path, IdOf(st));
    } else if (event.mask & (IN_DELETE | IN_MOVED_FROM)) {
      if (event.mask & IN_ISDIR) Unwatch(path);
      callbacks_.path_removed(path);
    }
  }
}

void PluginWatcher::Loop() {
  alignas(inotify_event) char buffer[16 * 1024];
  while (true) {
    pollfd fds[2] = {{.fd = inotify_fd_, .events = POLLIN, .revents = 0},
                     {.fd = stop_fd_, .events = POLLIN, .revents = 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      KDP_LOG_ERROR("Plugin watcher poll failed; plugins are no longer discovered", "err",
                    std::strerror(errno));
      return;
    }
    if (fds[1].revents != 0) return;
    while (true) {
      const ssize_t n = ::read(inotify_fd_, buffer, sizeof(buffer));
      if (n > 0) {
        HandleEvents(buffer, static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      break;  // EAGAIN: drained
    }
  }
}

}  // namespace kdp::manager::pluginmanager
