// WaitUntil: polls a condition until it holds or a deadline passes. For state a test cannot be
// notified of (a file or socket appearing, a child process logging a line); where the code under
// test offers a callback, wait on an absl::Notification instead.
//
// Thread-safety: thread-safe; `condition` runs on the calling thread only.
#ifndef KDP_TESTS_TESTING_WAIT_H_
#define KDP_TESTS_TESTING_WAIT_H_

#include <functional>

#include "absl/time/time.h"

namespace kdp::testing {

// Calls `condition` at once and then every `poll` until it returns true (returns true) or
// `timeout` has passed (returns false, after one last call at the deadline). The default timeout
// is generous on purpose: it bounds a hang, it is not a synchronisation delay.
// REQUIRES: poll > 0.
bool WaitUntil(const std::function<bool()>& condition, absl::Duration timeout = absl::Seconds(20),
               absl::Duration poll = absl::Milliseconds(20));

}  // namespace kdp::testing

#endif  // KDP_TESTS_TESTING_WAIT_H_
