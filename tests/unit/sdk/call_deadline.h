// The bound on the SDK unit tests' gRPC calls and waits: kTimeout, and Deadline(), a gRPC deadline
// that far from now. Generous on purpose: it bounds a hang, it is not a synchronisation delay.
//
// Thread-safety: the functions are thread-safe.
#ifndef KDP_TESTS_UNIT_SDK_CALL_DEADLINE_H_
#define KDP_TESTS_UNIT_SDK_CALL_DEADLINE_H_

#include <chrono>

#include "absl/time/time.h"

namespace kdp::testing {

inline constexpr absl::Duration kTimeout = absl::Seconds(20);

// `timeout` from now, for grpc::ClientContext::set_deadline() and grpc::Server::Shutdown().
inline std::chrono::system_clock::time_point Deadline(absl::Duration timeout = kTimeout) {
  return std::chrono::system_clock::now() + absl::ToChronoNanoseconds(timeout);
}

}  // namespace kdp::testing

#endif  // KDP_TESTS_UNIT_SDK_CALL_DEADLINE_H_
