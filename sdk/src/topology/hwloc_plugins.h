// Which hwloc plugins the SDK lets hwloc load (private): set once per process, before the first
// topology and, through the runners' main helpers, before any thread exists.
//
// Thread-safety: thread-safe (std::call_once), but setenv() races with getenv() in other threads:
// call it first from main() where possible.
#ifndef KDP_SDK_SRC_TOPOLOGY_HWLOC_PLUGINS_H_
#define KDP_SDK_SRC_TOPOLOGY_HWLOC_PLUGINS_H_

namespace kdp::internal {

// Sets HWLOC_PLUGINS_BLACKLIST to the plugins the SDK never needs unless the user set it.
void ConfigureHwlocPlugins();

}  // namespace kdp::internal

#endif  // KDP_SDK_SRC_TOPOLOGY_HWLOC_PLUGINS_H_
