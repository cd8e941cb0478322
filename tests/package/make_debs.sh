#!/usr/bin/env bash
# package.debs: builds the three .deb files with CPack from a built tree, into OUT.
# Usage: make_debs.sh BUILD_DIR OUT
set -euo pipefail
build=$1 out=$2
rm -rf "$out"
mkdir -p "$out"
cpack --config "$build/CPackConfig.cmake" -B "$out" >"$out/cpack.log" 2>&1 || {
  cat "$out/cpack.log" >&2
  echo "make_debs: cpack failed" >&2
  exit 1
}
status=0
for package in libkdp-sdk-dev kdp-manager kdp-examples; do
  deb=$(find "$out" -maxdepth 1 -name "${package}_*.deb" -print -quit)
  if [ -z "$deb" ]; then
    echo "make_debs: no ${package}_*.deb in $out" >&2
    status=1
    continue
  fi
  echo "== $(basename "$deb") ($(stat -c %s "$deb") bytes)"
  dpkg-deb --field "$deb" Package Version Architecture Depends
done
exit "$status"
