// The names that kdp's example GPU device plugin and DRA driver use (examples/gpu-plugin,
// examples/dra-driver), for the tests that drive them or fakes of them. One place, because the
// tests of one folder compile as one translation unit (kdp_test_program) and a constant each file
// defined for itself would clash.
#ifndef KDP_TESTS_TESTING_EXAMPLE_NAMES_H_
#define KDP_TESTS_TESTING_EXAMPLE_NAMES_H_

namespace kdp::testing {

// The extended resource of the example device plugin.
inline constexpr char kGpuResource[] = "example.com/gpu";
// The example DRA driver's name (also its ResourceSlices' driver and its CDI vendor).
inline constexpr char kGpuDriver[] = "gpu.example.com";

}  // namespace kdp::testing

#endif  // KDP_TESTS_TESTING_EXAMPLE_NAMES_H_
