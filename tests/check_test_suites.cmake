# cmake -DPROGRAM=<unit test program> -DFILTERS=<file>=<filter>|<file>=<filter>|...
#       -P check_test_suites.cmake
#
# Run after a unit test program links (kdp_test_program, cmake/kdp.cmake). Its ctest tests run it
# once per file, each with the --gtest_filter of the suites that file declares. This lists the
# program's cases and applies every file's filter as gtest does, and fails the build, naming the
# case and the files, when a case would run under no file's test (a suite a macro of the file's own
# makes, say), under two files' tests (one file's suite named like another's TEST_P prefix), or
# when a file's filter selects no case at all (its test would pass having run nothing).
cmake_minimum_required(VERSION 3.25)
execute_process(COMMAND "${PROGRAM}" --gtest_list_tests TIMEOUT 120
                RESULT_VARIABLE result OUTPUT_VARIABLE listing ERROR_VARIABLE errors)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} --gtest_list_tests failed (${result}):\n${errors}")
endif()
# A parameter printed after a case ("  # GetParam() = ...") may hold any character, and CMake's
# lists split on ';' and nest on '[' ']': neither can be in a suite or case name, so they go.
string(REGEX REPLACE "[][;]" "_" listing "${listing}")
string(REPLACE "\n" ";" lines "${listing}")

# Every case's full name as --gtest_filter matches it: "Suite.Case", "Prefix/Suite.Case/0",
# "Suite/0.Case", each without the "  # ..." comment gtest prints after parameterised ones.
set(cases "")
set(suite "")
foreach(line ${lines})
  if(line MATCHES "^  ([^ ]+)")
    if(suite STREQUAL "")
      message(FATAL_ERROR "${PROGRAM}: a case before any suite in its --gtest_list_tests output")
    endif()
    list(APPEND cases "${suite}.${CMAKE_MATCH_1}")
  elseif(line MATCHES "^([^ ]+)\\.( .*)?$")
    set(suite "${CMAKE_MATCH_1}")
  endif()
endforeach()

# gtest's filter patterns: '*' any string, '?' any character, the rest literal.
function(glob_to_regex glob out)
  string(REGEX REPLACE "([][.+^$(){}|\\\\])" "\\\\\\1" regex "${glob}")
  string(REPLACE "*" ".*" regex "${regex}")
  string(REPLACE "?" "." regex "${regex}")
  set(${out} "^${regex}$" PARENT_SCOPE)
endfunction()

string(REPLACE "|" ";" entries "${FILTERS}")
set(files "")
foreach(entry ${entries})
  string(FIND "${entry}" "=" equals)
  string(SUBSTRING "${entry}" 0 ${equals} file)
  math(EXPR start "${equals} + 1")
  string(SUBSTRING "${entry}" ${start} -1 filter)
  list(APPEND files "${file}")
  string(REPLACE ":" ";" patterns "${filter}")
  set(regexes_${file} "")
  foreach(pattern ${patterns})
    glob_to_regex("${pattern}" regex)
    list(APPEND regexes_${file} "${regex}")
  endforeach()
  set(selected_${file} 0)
endforeach()

foreach(case ${cases})
  set(owners "")
  foreach(file ${files})
    foreach(regex ${regexes_${file}})
      if(case MATCHES "${regex}")
        list(APPEND owners "${file}")
        math(EXPR selected_${file} "${selected_${file}} + 1")
        break()
      endif()
    endforeach()
  endforeach()
  list(LENGTH owners count)
  if(count EQUAL 0)
    message(FATAL_ERROR "${PROGRAM}: case ${case} is in no file's --gtest_filter, so no ctest "
                        "test runs it: declare its suite with a TEST, TEST_F, TEST_P or "
                        "TYPED_TEST line at the start of a line")
  elseif(count GREATER 1)
    list(JOIN owners " and " owners)
    message(FATAL_ERROR "${PROGRAM}: case ${case} is selected by the --gtest_filter of "
                        "${owners}, so it runs twice: rename a suite or a prefix")
  endif()
endforeach()
foreach(file ${files})
  if(selected_${file} EQUAL 0)
    message(FATAL_ERROR "${PROGRAM}: the --gtest_filter of ${file} selects no case, so its "
                        "ctest test would pass having run nothing")
  endif()
endforeach()
