// The node that the SDK's unit tests run their DRA drivers on (also the pool's name). The names
// of the example plugin and driver are in tests/testing/example_names.h. One place, because the
// tests of this folder compile as one translation unit per program and a constant each file
// defined for itself would clash.
#ifndef KDP_TESTS_UNIT_SDK_TEST_NAMES_H_
#define KDP_TESTS_UNIT_SDK_TEST_NAMES_H_

namespace kdp::testing {

inline constexpr char kNode[] = "node-1";

}  // namespace kdp::testing

#endif  // KDP_TESTS_UNIT_SDK_TEST_NAMES_H_
