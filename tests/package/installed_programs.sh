#!/usr/bin/env bash
# package.installed_programs: every program of the packages runs from the scratch root: each
# answers --help, needs no library the machine lacks, and the examples' data is where they look.
# Usage: installed_programs.sh ROOT
set -euo pipefail
root=$1
fail() { echo "installed_programs: $*" >&2; exit 1; }
for program in kdp-manager kdpctl kdp-conformance kdp-gpu-plugin kdp-dra-driver kdp-topology \
    kdp-cdi-validate; do
  path="$root/usr/bin/$program"
  if ldd "$path" | grep -q 'not found'; then
    ldd "$path" >&2
    fail "$program needs a library that is not installed"
  fi
  help=$("$path" --help) || fail "$program --help exited $?"
  [[ "$help" == *"--"* ]] || fail "$program --help printed no flags"
  echo "$program --help: $(wc -l <<<"$help") lines"
done
help=$("$root/usr/bin/kdpctl" --help)
for command in status apply get delete topology; do
  [[ "$help" == *"$command"* ]] || fail "kdpctl --help does not list '$command'"
done
for kind in device-plugin dra-driver; do
  list=$("$root/usr/bin/kdp-conformance" "$kind" --list) || fail "kdp-conformance $kind --list exited $?"
  [[ "$list" == *"upstream: "* ]] || fail "kdp-conformance $kind --list names no scenario: $list"
done
topology="$root/usr/share/kdp/topologies/dual-socket-8gpu.xml"
[ -f "$topology" ] || fail "the fake topology is not installed at $topology"
"$root/usr/bin/kdp-topology" --help | grep -q -- --xml || fail "kdp-topology has no --xml flag"
tree=$("$root/usr/bin/kdp-topology" --xml "$topology") || fail "kdp-topology on $topology exited $?"
grep -qi numa <<<"$tree" || fail "kdp-topology printed no NUMA node: $tree"
echo "kdp-topology --xml $topology: $(wc -l <<<"$tree") lines"
