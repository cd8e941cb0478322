#!/usr/bin/env bash
# The layering check fails a build: builds tests/layering/fixture as it is (must succeed), then
# with one line added to one of its files that the declared dependencies do not allow (must fail
# with the check's message): in high/high.cc an include of a header of a component high reaches
# only transitively, and of a header private to another component; in util/util.h (a header-only
# component) an include of a component util does not link, and of a header another component
# owns in a folder they share; in CMakeLists.txt a link that closes a
# cycle of components. Usage: run.sh SOURCE_DIR CMAKE_COMMAND
set -euo pipefail
source_dir=$1 cmake=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
build() {  # build VARIANT [FILE LINE]: prints the build's output, returns its status
  local dir="$work/$1"
  cp -r "$source_dir/tests/layering/fixture" "$dir"
  if [ $# -gt 1 ]; then printf '%s\n' "$3" >>"$dir/$2"; fi
  "$cmake" -S "$dir" -B "$dir/build" -G Ninja -DKDP_CMAKE_DIR="$source_dir/cmake" >/dev/null &&
    "$cmake" --build "$dir/build" 2>&1
}
fail() { echo "run.sh: $*" >&2; exit 1; }

build ok >"$work/ok.log" || { cat "$work/ok.log"; fail "the fixture as it is did not build"; }

expect_refused() {  # expect_refused VARIANT FILE LINE MESSAGE
  if build "$1" "$2" "$3" >"$work/$1.log"; then
    cat "$work/$1.log"
    fail "adding '$3' to $2 built; the layering check should have failed it"
  fi
  grep -F -- "$4" "$work/$1.log" >/dev/null || {
    cat "$work/$1.log"
    fail "the failed build does not say: $4"
  }
  echo "refused as expected: $(grep -F -- "$4" "$work/$1.log" | head -1)"
}
expect_refused transitive high/high.cc '#include "low/low.h"' \
  'high/high.cc:4: #include "low/low.h": high does not link low, which owns low/low.h'
expect_refused private high/high.cc '#include "mid/internal/detail.h"' \
  'high/high.cc:4: #include "mid/internal/detail.h": mid/internal/detail.h is private to mid'
expect_refused interface util/util.h '#include "mid/mid.h"' \
  'util/util.h:6: #include "mid/mid.h": util does not link mid, which owns mid/mid.h'
# A header of a shared folder belongs to the component that names it, not to the folder.
expect_refused shared util/util.h '#include "api/mid_api.h"' \
  'util/util.h:6: #include "api/mid_api.h": util does not link mid, which owns api/mid_api.h'
# CMake itself accepts the cycle (static libraries may link each other); the check must not.
expect_refused cycle CMakeLists.txt 'target_link_libraries(low PUBLIC mid)' \
  'layering: cycle: low -> mid -> low'
