// NumaDistanceSource over libnuma. libnuma reads /sys/devices/system/node directly and cannot be
// pointed at another root, so tests use hwloc XML distances or a fake source instead.
#include <numa.h>

#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "kdp/topology.h"

namespace kdp {
namespace {

// numa_distance() fills a process-wide table on its first call without locking, so every source
// in the process shares one lock.
ABSL_CONST_INIT absl::Mutex libnuma_mu(absl::kConstInit);

class LibnumaDistanceSource final : public NumaDistanceSource {
 public:
  LibnumaDistanceSource() : available_(numa_available() >= 0) {}

  int Distance(int from, int to) const override ABSL_LOCKS_EXCLUDED(libnuma_mu) {
    if (!available_ || from < 0 || to < 0) return 0;
    absl::MutexLock lock(&libnuma_mu);
    const int distance = numa_distance(from, to);
    return distance > 0 ? distance : 0;
  }

 private:
  const bool available_;
};

}  // namespace

std::unique_ptr<NumaDistanceSource> NewLibnumaDistanceSource() {
  return std::make_unique<LibnumaDistanceSource>();
}

}  // namespace kdp
