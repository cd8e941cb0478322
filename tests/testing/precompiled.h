// The headers nearly every test includes, compiled once per build into kdp_testing's precompiled
// header when KDP_TEST_PCH is on (the CI presets; cmake/kdp.cmake, kdp_test_precompiled_header).
// Only third-party and standard headers belong here: a project header in it would make every
// test recompile whenever that header changes.
#ifndef KDP_TESTS_TESTING_PRECOMPILED_H_
#define KDP_TESTS_TESTING_PRECOMPILED_H_

#include <google/protobuf/message.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

#endif  // KDP_TESTS_TESTING_PRECOMPILED_H_
