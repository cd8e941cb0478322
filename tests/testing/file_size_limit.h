// ScopedFileSizeLimit: a full disk for tests, even as root. It lowers this process's file size
// limit (RLIMIT_FSIZE) with SIGXFSZ ignored, so writes past `bytes` come back short and then fail
// with EFBIG (kdp maps it to RESOURCE_EXHAUSTED, as ENOSPC), and restores both on destruction.
//
// Thread-safety: process-wide; one at a time, not while other tests' threads write files.
#ifndef KDP_TESTS_TESTING_FILE_SIZE_LIMIT_H_
#define KDP_TESTS_TESTING_FILE_SIZE_LIMIT_H_

#include <signal.h>
#include <sys/resource.h>

#include "gtest/gtest.h"

namespace kdp::testing {

class ScopedFileSizeLimit {
 public:
  explicit ScopedFileSizeLimit(rlim_t bytes) {
    old_handler_ = ::signal(SIGXFSZ, SIG_IGN);
    EXPECT_EQ(::getrlimit(RLIMIT_FSIZE, &old_), 0);
    rlimit limit = old_;
    limit.rlim_cur = bytes;
    EXPECT_EQ(::setrlimit(RLIMIT_FSIZE, &limit), 0);
  }
  ~ScopedFileSizeLimit() {
    EXPECT_EQ(::setrlimit(RLIMIT_FSIZE, &old_), 0);
    ::signal(SIGXFSZ, old_handler_);
  }
  ScopedFileSizeLimit(const ScopedFileSizeLimit&) = delete;
  ScopedFileSizeLimit& operator=(const ScopedFileSizeLimit&) = delete;

 private:
  rlimit old_{};
  sighandler_t old_handler_ = SIG_DFL;
};

}  // namespace kdp::testing

#endif  // KDP_TESTS_TESTING_FILE_SIZE_LIMIT_H_
