# Shared build settings and helpers for every kdp target.

# kdp_warnings(<target>): the project's warning set; -Werror when KDP_WERROR is on.
function(kdp_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-unused-parameter)
  if(KDP_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    target_compile_options(${target} PRIVATE -Wthread-safety)
  endif()
endfunction()

# kdp_test(<source> LIBS <libs...>): one GoogleTest binary per test file, registered with ctest.
# The test name is the file's path under tests/ with '/' replaced by '.', e.g. unit.sdk.topology_test.
function(kdp_test source)
  cmake_parse_arguments(ARG "" "" "LIBS;LABELS" ${ARGN})
  file(RELATIVE_PATH rel "${PROJECT_SOURCE_DIR}/tests" "${CMAKE_CURRENT_SOURCE_DIR}/${source}")
  string(REGEX REPLACE "\\.cc$" "" rel "${rel}")
  string(REPLACE "/" "." name "${rel}")
  add_executable(${name} ${source})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gmock_main)
  kdp_warnings(${name})
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 30 PROPERTIES LABELS "${ARG_LABELS}"
                       TIMEOUT 120)
endfunction()
