# cmake -DPROGRAM=<unit test program> -DSUITES=<suite,suite,...> -P check_test_suites.cmake
#
# Run after a unit test program links (kdp_test_program, cmake/kdp.cmake). Its ctest tests run it
# once per file with a --gtest_filter of the suites that file declares (TEST, TEST_F, TEST_P,
# TYPED_TEST), so a case of any other suite (one a macro of the file's own makes, say) would never
# run. This fails the build naming such a case's suite.
cmake_minimum_required(VERSION 3.25)  # IN_LIST
execute_process(COMMAND "${PROGRAM}" --gtest_list_tests
                RESULT_VARIABLE result OUTPUT_VARIABLE listing ERROR_VARIABLE errors)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} --gtest_list_tests failed (${result}):\n${errors}")
endif()
string(REPLACE "," ";" declared "${SUITES}")
string(REPLACE "\n" ";" lines "${listing}")
foreach(line ${lines})
  # Suite lines start in column 0 and end with '.', before an optional "  # TypeParam = ...":
  # "Suite.", "Prefix/Suite." (TEST_P), "Suite/0." (TYPED_TEST), "Prefix/Suite/0.".
  if(line MATCHES "^ " OR line STREQUAL "" OR line MATCHES "^Running main")
    continue()
  endif()
  string(REGEX REPLACE "\\.( .*)?$" "" full "${line}")
  string(REPLACE "/" ";" parts "${full}")
  list(LENGTH parts count)
  if(count EQUAL 1)
    set(suite "${full}")
  elseif(count EQUAL 2)
    list(GET parts 1 second)
    if(second MATCHES "^[0-9]+$")
      list(GET parts 0 suite)
    else()
      set(suite "${second}")
    endif()
  else()
    list(GET parts 1 suite)
  endif()
  if(NOT suite IN_LIST declared)
    message(FATAL_ERROR "${PROGRAM}: test suite '${full}' is not declared by a TEST, TEST_F, "
                        "TEST_P or TYPED_TEST line of any of its files, so no ctest test runs it "
                        "(declared: ${SUITES})")
  endif()
endforeach()
