// The body of RunPluginsUntilSignal and RunDraDriverUntilSignal (private): ignore SIGPIPE, block
// SIGTERM and SIGINT before any thread exists (so every thread inherits the mask and only sigwait()
// sees them), create and start a runner, wait for a signal, stop. Returns the process exit status:
// 0 after a clean stop, 1 when the runner could not be created or started (reason logged).
//
// Thread-safety: call from main() only (it changes the calling thread's signal mask).
#ifndef KDP_SDK_SRC_RUNTIME_RUN_UNTIL_SIGNAL_H_
#define KDP_SDK_SRC_RUNTIME_RUN_UNTIL_SIGNAL_H_

#include <signal.h>

#include <cstring>
#include <memory>

#include "absl/status/statusor.h"
#include "common/logging.h"
#include "sdk/src/runtime/program_flags.h"

namespace kdp::internal {

// `create` returns absl::StatusOr<std::unique_ptr<Runner>>; Runner has Start() and Stop().
// `what` names the runner in the log ("plugin runner", "DRA driver").
template <typename Create>
int RunUntilSignal(Create create, const char* what) {
  // The process is the runner's: a write to a connection the peer closed (the API server's TLS
  // connection, OpenSSL writing with write(2)) fails with EPIPE instead of killing it.
  const sigset_t signals = BlockTerminationSignals();

  auto runner = create();
  if (!runner.ok()) {
    KDP_LOG_ERROR("Invalid configuration", "runner", what, "err", runner.status().ToString());
    return 1;
  }
  if (absl::Status status = (*runner)->Start(); !status.ok()) {
    KDP_LOG_ERROR("Failed to start", "runner", what, "err", status.ToString());
    (*runner)->Stop();
    return 1;
  }
  int received = 0;
  sigwait(&signals, &received);
  KDP_LOG_INFO("Signal received; shutting down", "signal", strsignal(received));
  (*runner)->Stop();
  return 0;
}

}  // namespace kdp::internal

#endif  // KDP_SDK_SRC_RUNTIME_RUN_UNTIL_SIGNAL_H_
