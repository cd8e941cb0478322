// PluginWatcher is the kubelet's pluginwatcher.Watcher: it watches <kubelet-root>/plugins_registry
// and every sub-directory with inotify and reports registration sockets appearing and going away.
// At Start() the tree is walked and every socket already there is reported as created. A name
// starting with '.' is ignored (a socket, and kdp also skips such a directory, which the kubelet
// only skips when it appears after start); only unix sockets count, whatever their name
// (lstat: a symlink to a socket is not one). PluginManager feeds its desired state of the world
// from the callbacks.
//
// Thread-safety: Start() and Stop() may be called from any thread; callbacks run on the
// watcher's thread (during Start() also on the caller's, for the initial walk), one at a time,
// and must not call Stop(). Stop() may be called more than once or without Start().
#ifndef KDP_MANAGER_SRC_PLUGINMANAGER_PLUGIN_WATCHER_H_
#define KDP_MANAGER_SRC_PLUGINMANAGER_PLUGIN_WATCHER_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace kdp::manager::pluginmanager {

// Which socket file a path names: a socket removed and bound again at the same path is another
// one (new inode or change time), a second report of the same file (the walk racing an inotify
// event) is not.
struct SocketId {
  dev_t dev = 0;
  ino_t ino = 0;
  int64_t ctime_ns = 0;
  bool operator==(const SocketId&) const = default;
};

class PluginWatcher {
 public:
  struct Callbacks {
    // A socket at `path` (absolute) was created, moved in, or found by a walk.
    std::function<void(const std::string& path, const SocketId& id)> socket_created;
    // `path` was deleted or moved away: a socket, or a directory with everything below it.
    std::function<void(const std::string& path)> path_removed;
    // The inotify queue overflowed and events were lost: `sockets` is everything now present
    // (the receiver drops what it knew that is not listed).
    std::function<void(const std::map<std::string, SocketId>& sockets)> resynced;
  };

  PluginWatcher(std::string dir, Callbacks callbacks);
  ~PluginWatcher();  // Stops.

  PluginWatcher(const PluginWatcher&) = delete;
  PluginWatcher& operator=(const PluginWatcher&) = delete;

  // Creates the directory (0750) if missing, watches it, walks it (reporting its sockets) and
  // starts the event thread. INTERNAL naming the path when inotify or the directory fails.
  [[nodiscard]] absl::Status Start() ABSL_LOCKS_EXCLUDED(mu_);
  // Ends the event thread and closes the inotify descriptor.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  const std::string& dir() const { return dir_; }

 private:
  void Loop();
  // Adds watches for `dir` and every directory below it, reporting the sockets found (into
  // `found` when not null, else through socket_created).
  void WatchTree(const std::string& dir, std::map<std::string, SocketId>* found);
  void HandleEvents(const char* buffer, size_t length);
  void Resync();
  // Drops the watches of `dir` and its sub-directories (a directory moved away keeps its
  // watches at its new place otherwise).
  void Unwatch(const std::string& dir);

  const std::string dir_;
  const Callbacks callbacks_;
  absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_ ABSL_GUARDED_BY(mu_);
  int inotify_fd_ = -1;  // Written by Start()/Stop() only, read by the thread they start/join.
  int stop_fd_ = -1;     // eventfd that wakes the thread up at Stop().
  // Watch descriptor → directory; only the event thread (and Start() before it runs) touch it.
  std::map<int, std::string> watches_;
};

}  // namespace kdp::manager::pluginmanager

#endif  // KDP_MANAGER_SRC_PLUGINMANAGER_PLUGIN_WATCHER_H_
