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

# kdp_test_code_options(<target>): how the tests' own code (tests/unit, integration, fault,
# testing) compiles in the sanitizer builds: -O0, no debug information, no UBSan checks and no
# libFuzzer coverage, but with ASan or TSan. The code under test (every library and program) keeps
# the build's -O2 -g1 and all its instrumentation; a test's own code is setup and assertions.
# Compiling it at -O2 with coverage took twice as long (15 s against 6.6 s for allocator_test.cc);
# of what is left, line tables and UBSan's checks were 24% and 38% of a test file's compile time
# (logging_test.cc: 8.6 s, 5.3 s without UBSan, 4.6 s without both) for nothing a test finds: a
# failed assertion names its file and line itself, a sanitizer report still names every function,
# and ASan (a test's use-after-scope is a real finding) and TSan still check the test's code.
function(kdp_test_code_options target)
  if(KDP_CCACHE AND KDP_TEST_PCH AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    # ccache caches a compilation that uses a clang PCH only when the PCH carries no timestamp.
    target_compile_options(${target} PRIVATE "SHELL:-Xclang -fno-pch-timestamp")
  endif()
  if(NOT KDP_SANITIZE STREQUAL "")
    target_compile_options(${target} PRIVATE -O0 -g0)
  endif()
  if(KDP_SANITIZE MATCHES "undefined")
    target_compile_options(${target} PRIVATE -fno-sanitize=undefined)
  endif()
  if(KDP_FUZZ)
    target_compile_options(${target} PRIVATE -fno-sanitize=fuzzer-no-link)
  endif()
endfunction()

# kdp_test_precompiled_header(<target>): with KDP_TEST_PCH, the test compiles against the
# precompiled header of kdp_testing (tests/testing/precompiled.h: the standard library, GoogleTest,
# gRPC, protobuf, Abseil and JSON headers nearly every test includes), so a test file parses only
# its own code and the project headers it names. The CI presets turn it on: the tests are half of
# the sanitizer builds' compile time, and parsing those headers was half of a test file's front
# end (logging_test.cc under ASan: 10.7 s without, 8.6 s with the precompiled header).
# The default (gcc) build keeps it off, so a test that forgets an include still fails there.
function(kdp_test_precompiled_header target)
  if(KDP_TEST_PCH)
    target_precompile_headers(${target} REUSE_FROM kdp_testing)
  endif()
endfunction()

# kdp_test_program(<target> SOURCES <files...> LIBS <libs...> [LABELS <labels...>]
#                  [TIMEOUT <seconds>] [RUN_SERIAL]): one GoogleTest program for the test files of
# one folder (tests/CMakeLists.txt groups them), compiled as one translation unit per 16 files
# under KDP_UNITY_BUILD. One program per file made the tests' own front end (gtest, gRPC, JSON and
# the headers under test, parsed again by every file) a third of each sanitizer build. In a
# program every file's names share a translation unit, so a file-local helper needs a name of its
# own within its folder: a clash is a compile error in the unity builds, or, for two functions of
# different parameters, an overload that may pick the other file's.
#   - A unit program (label "unit") keeps one ctest test per file, named after the file's path
#     under tests/ with '/' replaced by '.', e.g. unit.sdk.topology_test (timeout 600 s): the
#     program run with a --gtest_filter of the suites the file declares. A file's suites are its
#     own within the program (configure fails naming both files otherwise), and the build fails
#     when a case of the program is selected by no file's filter or by two, or a file's filter
#     selects none (tests/check_test_suites.cmake), so every case runs exactly once.
#   - The cases of the others (integration, fault) are ctest tests of their own, named Suite.Case
#     (each case's timeout: TIMEOUT, default 120 s).
# When KDP_TEST_LABEL is set, only the programs with that label are built (no target otherwise).
function(kdp_test_program target)
  cmake_parse_arguments(ARG "RUN_SERIAL" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 120)
  endif()
  set(ARG_UNIT_TIMEOUT 600)  # a whole unit test file
  if(KDP_TEST_LABEL AND NOT KDP_TEST_LABEL IN_LIST ARG_LABELS)
    return()  # not this build's tests (the clang-tsan preset builds the "concurrency" ones)
  endif()
  add_executable(${target} ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE ${ARG_LIBS} GTest::gmock_main)
  kdp_warnings(${target})
  kdp_test_code_options(${target})
  kdp_test_precompiled_header(${target})
  kdp_unity(${target})
  if("unit" IN_LIST ARG_LABELS)
    # A unit file is one ctest test: its cases take milliseconds, and starting a sanitized
    # binary takes about 0.3 s, which per case was a third of the ci run's test time (1,300
    # cases under a second, 445 s of 1,384). A failure still names the case (gtest's output).
    set(filters "")
    foreach(source ${ARG_SOURCES})
      file(RELATIVE_PATH rel "${PROJECT_SOURCE_DIR}/tests" "${CMAKE_CURRENT_SOURCE_DIR}/${source}")
      string(REGEX REPLACE "\\.cc$" "" rel "${rel}")
      string(REPLACE "/" "." name "${rel}")
      # The suites are read here, so an edit of the file configures again (ninja runs cmake).
      set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
                   "${CMAKE_CURRENT_SOURCE_DIR}/${source}")
      file(READ "${CMAKE_CURRENT_SOURCE_DIR}/${source}" code)
      string(REGEX MATCHALL "(^|\n)[ \t]*(TEST|TEST_F|TEST_P|TYPED_TEST|TYPED_TEST_P)\\([ \t\r\n]*[A-Za-z0-9_]+"
             declarations "${code}")
      set(filter "")
      set(suites "")
      foreach(declaration ${declarations})
        string(REGEX MATCH "(TEST|TEST_F|TEST_P|TYPED_TEST|TYPED_TEST_P)\\(" macro "${declaration}")
        string(REGEX REPLACE "^.*\\([ \t\r\n]*" "" suite "${declaration}")
        if(suite IN_LIST suites)
          continue()
        endif()
        if(DEFINED owner_of_${suite})
          message(FATAL_ERROR "Test suite ${suite} is declared by both tests/${owner_of_${suite}} "
                              "and tests/${source}, two files of ${target}: a file's suites must "
                              "be its own (its ctest test runs them by name)")
        endif()
        set(owner_of_${suite} "${source}")
        list(APPEND suites ${suite})
        # The full names gtest gives each kind: Suite.Case; Prefix/Suite.Case/N (TEST_P);
        # Suite/N.Case (TYPED_TEST); Prefix/Suite/N.Case (TYPED_TEST_P).
        if(macro STREQUAL "TEST_P(")
          list(APPEND filter "*/${suite}.*")
        elseif(macro STREQUAL "TYPED_TEST(")
          list(APPEND filter "${suite}/*")
        elseif(macro STREQUAL "TYPED_TEST_P(")
          list(APPEND filter "*/${suite}/*")
        else()
          list(APPEND filter "${suite}.*")
        endif()
      endforeach()
      if(NOT suites)
        message(FATAL_ERROR "tests/${source}: no TEST, TEST_F, TEST_P or TYPED_TEST found")
      endif()
      list(JOIN filter ":" filter)
      list(APPEND filters "${name}=${filter}")
      add_test(NAME ${name} COMMAND ${target} "--gtest_filter=${filter}")
      set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_UNIT_TIMEOUT})
    endforeach()
    list(JOIN filters "|" filters)
    add_custom_command(TARGET ${target} POST_BUILD
                       COMMAND "${CMAKE_COMMAND}" "-DPROGRAM=$<TARGET_FILE:${target}>"
                               "-DFILTERS=${filters}"
                               -P "${PROJECT_SOURCE_DIR}/tests/check_test_suites.cmake"
                       VERBATIM)
    return()
  endif()
  # NO_PRETTY_VALUES: a parameterized case is named by its name generator (or index), not by a
  # dump of its parameter's bytes.
  gtest_discover_tests(${target} DISCOVERY_TIMEOUT 30 NO_PRETTY_VALUES
                       PROPERTIES TIMEOUT ${ARG_TIMEOUT})
  # gtest_discover_tests splits a list-valued property (LABELS "unit;concurrency" would arrive
  # as LABELS unit, concurrency), so ctest sets the labels from this script, which it runs
  # after the one that adds the discovered tests (and sets ${target}_TESTS to their names).
  set(labels_script "${CMAKE_CURRENT_BINARY_DIR}/${target}_labels.cmake")
  file(WRITE "${labels_script}"
       "if(DEFINED ${target}_TESTS)\n"
       "  set_tests_properties(\${${target}_TESTS} PROPERTIES LABELS [==[${ARG_LABELS}]==])\n"
       "endif()\n")
  if(ARG_RUN_SERIAL)
    # Tests that bound a peer's threads or latency: alone on the machine, never beside another.
    file(APPEND "${labels_script}"
         "if(DEFINED ${target}_TESTS)\n"
         "  set_tests_properties(\${${target}_TESTS} PROPERTIES RUN_SERIAL TRUE)\n"
         "endif()\n")
  endif()
  # The integration and fault tests (seconds to a minute each) start before the unit binaries, so
  # the run does not end with one long test on one core (ctest starts the costliest first; a
  # fresh checkout has no measured costs).
  file(APPEND "${labels_script}"
       "if(DEFINED ${target}_TESTS)\n"
       "  set_tests_properties(\${${target}_TESTS} PROPERTIES COST 100)\n"
       "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${labels_script}")
endfunction()

# kdp_sanitizers(): applies KDP_SANITIZE to every target created after the call (compile and
# link flags), so call it before the first target.
#   "address,undefined": AddressSanitizer (with LeakSanitizer) and UndefinedBehaviorSanitizer;
#     a UBSan finding aborts the program (-fno-sanitize-recover), so it fails the test.
#   "thread": ThreadSanitizer. Debian's Abseil is not instrumented, so every executable also
#     links kdp_tsan_absl (tests/sanitizers/absl_tsan_annotations.cc), which makes absl::Mutex,
#     absl::CondVar and absl::Notification visible to TSan; without it every ABSL_GUARDED_BY
#     field reads as a race. Run with TSAN_OPTIONS=ignore_noninstrumented_modules=1 (the
#     clang-tsan test preset does), or gRPC's internal hand-offs read as races.
# The build type's optimisation stays (-O2); the CI presets take line tables only (-g1: a report's
# stack still has every function, file and line, and the two sanitizer builds compile about a fifth
# faster); frame pointers are kept so the reports' stacks are complete.
function(kdp_sanitizers)
  kdp_linker()
  if(KDP_FUZZ)
    if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
      message(FATAL_ERROR "KDP_FUZZ needs clang (libFuzzer): configure with -DCMAKE_CXX_COMPILER=clang++")
    endif()
    # Coverage for libFuzzer in every library the fuzzers link; only tests/fuzz links the
    # fuzzer's own main (-fsanitize=fuzzer). Without that main the hooks are the sanitizer
    # runtime's no-ops, so the other programs and tests run as usual.
    add_compile_options(-fsanitize=fuzzer-no-link)
  endif()
  if(KDP_SANITIZE STREQUAL "")
    return()
  endif()
  if(NOT KDP_SANITIZE MATCHES "^(address,undefined|thread)$")
    message(FATAL_ERROR "KDP_SANITIZE must be \"\", \"address,undefined\" or \"thread\", "
                        "not \"${KDP_SANITIZE}\"")
  endif()
  add_compile_options(-fsanitize=${KDP_SANITIZE} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${KDP_SANITIZE})
  if(KDP_SANITIZE MATCHES "undefined")
    add_compile_options(-fno-sanitize-recover=undefined)
    add_link_options(-fno-sanitize-recover=undefined)
  endif()
  if(KDP_SANITIZE MATCHES "address")
    # Debian's hwloc dlopens its "pci" plugin, which loads libpciaccess, and unloads both when
    # the last topology is destroyed without freeing libpciaccess's device list (~1 KiB, also
    # with a plain C hwloc_topology_init/load/destroy). LeakSanitizer then reports it as a leak
    # from "<unknown module>", which no suppression can name. Keeping libpciaccess loaded for
    # the whole process, as in any program linked with it, keeps that memory reachable.
    find_library(KDP_PCIACCESS NAMES libpciaccess.so.0 pciaccess)
    if(KDP_PCIACCESS)
      add_link_options("LINKER:--push-state,--no-as-needed" "${KDP_PCIACCESS}"
                       "LINKER:--pop-state")
    endif()
  endif()
  if(KDP_SANITIZE STREQUAL "thread")
    add_library(kdp_tsan_absl SHARED
                "${PROJECT_SOURCE_DIR}/tests/sanitizers/absl_tsan_annotations.cc")
    target_link_libraries(kdp_tsan_absl PRIVATE absl::synchronization absl::time ${CMAKE_DL_LIBS})
    kdp_warnings(kdp_tsan_absl)
    # First on every later target's link line, so its definitions precede Abseil's at run time.
    link_libraries(kdp_tsan_absl)
  endif()
endfunction()

# kdp_linker(): links with lld when KDP_LLD is on and ld.lld is installed (scripts/deps installs
# it). A sanitizer build links some 250 test programs against the static libraries; lld takes a
# third of GNU ld's time for each (0.7 s against 2.0 s for one ASan test program).
function(kdp_linker)
  if(NOT KDP_LLD)
    return()
  endif()
  find_program(KDP_LD_LLD NAMES ld.lld ld.lld-14)
  if(KDP_LD_LLD)
    add_link_options(-fuse-ld=lld)
  else()
    message(STATUS "kdp: ld.lld not found, linking with the default linker (install lld)")
  endif()
endfunction()

# kdp_unity(<target>): with KDP_UNITY_BUILD, compiles the library's sources in batches of 16 (one
# translation unit per batch), so the gRPC, protobuf, Abseil and JSON headers each source
# includes are parsed and their templates instantiated once per batch instead of once per file.
# The CI presets turn it on: it roughly halves the libraries' compile time, which three builds
# on two cores pay. A source whose file-local names clash with another's in the same batch is
# kept out with the SKIP_UNITY_BUILD_INCLUSION source property.
function(kdp_unity target)
  if(KDP_UNITY_BUILD)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 16)
  endif()
endfunction()

# kdp_ccache(): with KDP_CCACHE, every compilation goes through ccache, configured here rather than
# in the user's ~/.config/ccache so that any way of building (scripts/test, cmake --build, an IDE)
# shares one cache: paths relative to the source tree (base_dir), so a second clone or a second
# build directory at the same depth hits the same entries; the working directory left out of the
# hash (the build directories differ; only the debug info's DW_AT_comp_dir then names the first
# one); sloppiness for the test's precompiled header and for the headers the build itself
# generates (protobuf's, the PCH), which are newer than the compilations that include them. A
# repeated `.ci/run` on one machine then compiles almost nothing.
function(kdp_ccache)
  if(NOT KDP_CCACHE)
    return()
  endif()
  find_program(KDP_CCACHE_PROGRAM ccache)
  if(NOT KDP_CCACHE_PROGRAM)
    message(WARNING "KDP_CCACHE is on but ccache is not installed (scripts/deps installs it); "
                    "compiling without it")
    return()
  endif()
  set(CMAKE_CXX_COMPILER_LAUNCHER
      "${CMAKE_COMMAND}" -E env "CCACHE_BASEDIR=${PROJECT_SOURCE_DIR}" CCACHE_NOHASHDIR=true
      "CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime"
      "${KDP_CCACHE_PROGRAM}"
      PARENT_SCOPE)
endfunction()
