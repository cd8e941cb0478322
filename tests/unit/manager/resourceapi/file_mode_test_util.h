// Test helper of the local API's unit tests (kubeconfig_test.cc, serving_certs_test.cc): ModeOf,
// the permission bits of a file the code under test wrote, checked with gtest.
//
// Thread-safety: a free function without shared state; thread-safe.
#ifndef KDP_TESTS_UNIT_MANAGER_RESOURCEAPI_FILE_MODE_TEST_UTIL_H_
#define KDP_TESTS_UNIT_MANAGER_RESOURCEAPI_FILE_MODE_TEST_UTIL_H_

#include <sys/stat.h>

#include <string>

#include "gtest/gtest.h"

namespace kdp::testing {

// The permission bits (07777) of `path`; a failed stat fails the test and answers 0.
inline mode_t ModeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

}  // namespace kdp::testing

#endif  // KDP_TESTS_UNIT_MANAGER_RESOURCEAPI_FILE_MODE_TEST_UTIL_H_
