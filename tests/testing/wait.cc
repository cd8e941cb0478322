#include "tests/testing/wait.h"

#include <algorithm>

#include "absl/time/clock.h"

namespace kdp::testing {

bool WaitUntil(const std::function<bool()>& condition, absl::Duration timeout,
               absl::Duration poll) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    if (condition()) return true;
    const absl::Duration remaining = deadline - absl::Now();
    if (remaining <= absl::ZeroDuration()) return false;
    absl::SleepFor(std::min(poll, remaining));
  }
}

}  // namespace kdp::testing
