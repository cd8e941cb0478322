#!/usr/bin/env bash
# tests/check_test_suites.cmake fails a build when the per-file --gtest_filters of a unit test
# program (kdp_test_program) would not run every case exactly once. A stand-in program prints a
# --gtest_list_tests listing (a plain suite, a TEST_P instantiation whose parameters hold '[' and
# ';', a typed suite, one suite left over); the check must pass the filters that cover it exactly,
# and fail, naming the case or the file, a case no filter selects, a case two select, and a filter
# that selects nothing. Usage: run.sh SOURCE_DIR CMAKE_COMMAND
set -euo pipefail
source_dir=$1 cmake=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/program" <<'LISTING'
#!/bin/sh
cat <<'X'
Running main() from gmock_main.cc
Good.
  One
  Two
Inst/Para.
  Case/0  # GetParam() = "x[0"
  Case/1  # GetParam() = "a;b"
Typed/0.  # TypeParam = int
  Works
Hidden.
  Secret
X
LISTING
chmod +x "$work/program"
check() {  # check FILTERS: prints the check's output, returns its status
  "$cmake" -DPROGRAM="$work/program" "-DFILTERS=$1" -P "$source_dir/tests/check_test_suites.cmake" 2>&1
}
fail() { echo "run.sh: $*" >&2; exit 1; }

exact="a=Good.*|b=*/Para.*|c=Typed/*|d=Hidd?n.*"
check "$exact" >"$work/ok.log" || { cat "$work/ok.log"; fail "filters covering every case once were refused"; }

expect_refused() {  # expect_refused FILTERS MESSAGE
  if check "$1" >"$work/refused.log"; then
    fail "filters '$1' passed; the check should have refused them ($2)"
  fi
  tr '\n' ' ' <"$work/refused.log" | tr -s ' ' | grep -F -- "$2" >/dev/null || {
    cat "$work/refused.log"
    fail "filters '$1' were refused without the message '$2'"
  }
}
expect_refused "a=Good.*|b=*/Para.*|c=Typed/*" "case Hidden.Secret is in no file's --gtest_filter"
expect_refused "$exact|e=Inst/*" "case Inst/Para.Case/0 is selected by the --gtest_filter of b and e"
expect_refused "$exact|e=Nothing.*" "the --gtest_filter of e selects no case"
echo "run.sh: the suite check passes exact filters and refuses the three kinds of wrong ones"
