#!/usr/bin/env bash
# The layering check fails a build: builds tests/layering/fixture as it is (must succeed), then
# with one include in high/high.cc that its declared dependencies do not allow (must fail with
# the check's message): a header of a component high reaches only transitively, and a header
# private to another component. Usage: run.sh SOURCE_DIR CMAKE_COMMAND
set -euo pipefail
source_dir=$1 cmake=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
build() {  # build VARIANT INCLUDE: prints the build's output, returns its status
  local dir="$work/$1"
  cp -r "$source_dir/tests/layering/fixture" "$dir"
  if [ -n "$2" ]; then printf '#include "%s"\n' "$2" >>"$dir/high/high.cc"; fi
  "$cmake" -S "$dir" -B "$dir/build" -G Ninja -DKDP_CMAKE_DIR="$source_dir/cmake" >/dev/null &&
    "$cmake" --build "$dir/build" 2>&1
}
fail() { echo "run.sh: $*" >&2; exit 1; }

build ok "" >"$work/ok.log" || { cat "$work/ok.log"; fail "the fixture as it is did not build"; }

expect_refused() {  # expect_refused VARIANT INCLUDE MESSAGE
  if build "$1" "$2" >"$work/$1.log"; then
    cat "$work/$1.log"
    fail "including $2 from high built; the layering check should have failed it"
  fi
  grep -F -- "$3" "$work/$1.log" >/dev/null || {
    cat "$work/$1.log"
    fail "the failed build does not say: $3"
  }
  echo "refused as expected: $(grep -F -- "$3" "$work/$1.log")"
}
expect_refused transitive low/low.h \
  'high/high.cc:3: #include "low/low.h": high does not link low, which owns low/low.h'
expect_refused private mid/internal/detail.h \
  'high/high.cc:3: #include "mid/internal/detail.h": mid/internal/detail.h is private to mid'
