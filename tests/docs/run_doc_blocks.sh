#!/usr/bin/env bash
# run_doc_blocks.sh: every shell command block of README.md and docs/*.md runs as a reader would
# paste it, against the binaries of the build under test, so the documentation cannot rot.
#
#   tests/docs/run_doc_blocks.sh SOURCE_DIR BUILD_DIR [DOC...]
#
# SOURCE_DIR: the repository. BUILD_DIR: the build whose programs are tested (its
# manager/kdp-manager, manager/kdpctl, examples/gpu-plugin/kdp-gpu-plugin,
# examples/dra-driver/kdp-dra-driver, sdk/kdp-topology and sdk/kdp-cdi-validate). DOC: documents
# relative to SOURCE_DIR (default: README.md, docs/*.md and examples/*/README.md). Exit 0 when
# every document passes, 1 when one fails (its blocks' output and the failing command are
# printed), 2 on bad usage, 77
# (skipped) when no kubectl can be found.
#
# The rules (tests/docs/extract_doc_blocks.awk extracts the blocks):
# - A block is run when its fence's language is sh, bash, shell or console (in a console block,
#   the lines after a "$ " prompt). Other blocks (cpp, yaml, json, plain output) are not commands.
# - A block that cannot run here (a cluster, root, a package install, a GPU, a program the reader
#   writes, a full build) is marked on the line right before its fence, where a reader of the raw
#   file sees it too:
#       <!-- doc-test: skip (needs a cluster) -->
#   An unmarked block that runs sudo, apt-get, dpkg, docker, podman, buildah, kustomize, cpack,
#   ctest or scripts/{test,demo,deps,fuzz}, or a kdp program without --kubelet-root (its default is
#   the host's /var/lib/kubelet), or that names a fixed /tmp/... path (a second run would find the
#   first one's state: use mktemp -d), fails the document before anything runs; so does a
#   malformed marker.
# - The blocks of one document run in order in ONE bash (as in one terminal: a later block uses
#   the variables and processes of an earlier one) with `set -e`: a command that fails fails the
#   document. The one exception to "as written": commands whose first word is cmake are not run
#   (the build under test is already built), and print that they were left out.
# - Paths: the blocks run in a scratch copy of the repository's layout: a directory whose entries
#   are symlinks to SOURCE_DIR's (examples/, docs/, ...), except build/, which holds only
#   build/default -> BUILD_DIR. So `build/default/manager/kdp-manager` is the tested build's
#   binary whatever BUILD_DIR is, and nothing is built. A directory of symlinks to the seven
#   programs comes first on PATH, standing in for an installed kdp (docs that say `kdpctl`).
# - Every document gets fresh directories: HOME and TMPDIR point into the scratch directory (so
#   `mktemp -d` and `$HOME/kdp` are the test's own) and KUBECONFIG is unset; nothing touches the
#   host's /var/lib/kubelet or ~/.kube. The document's bash leads a process group of its own:
#   when the document ends (or fails, or times out), the group gets SIGTERM, then SIGKILL after
#   KDP_DOC_TEST_STOP_SECONDS, so the kdp-manager and plugins a block started with `&` stop.
#
# Environment: KDP_DOC_TEST_SECONDS (default 300): how long one document may run.
# KDP_DOC_TEST_STOP_SECONDS (default 10): how long its processes get to exit after SIGTERM.
# KDP_KEEP_TMP=1 keeps the scratch directory (its path is printed).
set -euo pipefail

here=$(cd "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)

if [[ $# -lt 2 ]]; then
  echo "usage: $0 SOURCE_DIR BUILD_DIR [DOC...]" >&2
  exit 2
fi
src=$(cd "$1" && pwd) || { echo "run_doc_blocks: no source directory $1" >&2; exit 2; }
build=$(cd "$2" && pwd) || { echo "run_doc_blocks: no build directory $2" >&2; exit 2; }
shift 2
if [[ $# -gt 0 ]]; then
  docs=("$@")
else
  docs=(README.md)
  for doc in "$src"/docs/*.md "$src"/examples/*/README.md; do
    docs+=("${doc#"$src"/}")
  done
fi
doc_seconds=${KDP_DOC_TEST_SECONDS:-300}
stop_seconds=${KDP_DOC_TEST_STOP_SECONDS:-10}

programs=(manager/kdp-manager manager/kdpctl manager/kdp-conformance
          examples/gpu-plugin/kdp-gpu-plugin examples/dra-driver/kdp-dra-driver sdk/kdp-topology
          sdk/kdp-cdi-validate)
for program in "${programs[@]}"; do
  if [[ ! -x $build/$program ]]; then
    echo "run_doc_blocks: $build/$program is not built" >&2
    exit 1
  fi
done
# The docs use kubectl against the manager's local API. Without one on PATH, the newest of the
# versioned binaries the kubectl tests use stands in; with none at all the test is skipped (77).
kubectl_bin=""
if ! command -v kubectl >/dev/null; then
  for minor in 33 32 31 30 29 28 27; do
    if [[ -x /usr/lib/google-cloud-sdk/bin/kubectl.1.$minor ]]; then
      kubectl_bin=/usr/lib/google-cloud-sdk/bin/kubectl.1.$minor
      break
    fi
  done
  if [[ -z $kubectl_bin ]]; then
    echo "SKIP: no kubectl on PATH or under /usr/lib/google-cloud-sdk/bin"
    exit 77
  fi
fi

scratch=$(mktemp -d "${TMPDIR:-/tmp}/kdp-doc.XXXXXX")
group=""  # the process group of the document running now
stop_group() {
  [[ -n $group ]] || return 0
  kill -TERM -- "-$group" 2>/dev/null || true
  local deadline=$((SECONDS + stop_seconds))
  while kill -0 -- "-$group" 2>/dev/null && ((SECONDS < deadline)); do
    sleep 0.1
  done
  kill -KILL -- "-$group" 2>/dev/null || true
  group=""
}
# shellcheck disable=SC2317  # called through the EXIT trap
cleanup() {
  stop_group
  if [[ ${KDP_KEEP_TMP:-0} == 1 ]]; then
    echo "run_doc_blocks: kept $scratch"
  else
    rm -rf -- "$scratch"
  fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# The layout a reader's checkout has, with build/default the build under test. Prints its path.
make_work_dir() {
  local dir=$1/work entry
  mkdir -p -- "$dir/build"
  for entry in "$src"/* "$src"/.[!.]*; do
    [[ -e $entry && $(basename -- "$entry") != build ]] || continue
    ln -s -- "$entry" "$dir/$(basename -- "$entry")"
  done
  ln -s -- "$build" "$dir/build/default"
  printf '%s\n' "$dir"
}

# Runs one document; returns 0 when it passes. Prints a summary line (and the output on failure).
run_doc() {
  local doc=$1 dir report script work runs skips cmakes pid rc status
  dir=$(mktemp -d "$scratch/doc.XXXXXX")
  report=$dir/report
  script=$dir/blocks.sh
  : >"$report"
  if [[ ! -f $src/$doc ]]; then
    echo "FAIL $doc: no such document"
    return 1
  fi
  # The awk program names blocks by FILENAME: run it from SOURCE_DIR with the relative path.
  (cd "$src" && awk -v script="$dir/blocks.body" -v report="$report" \
    -f "$here/extract_doc_blocks.awk" "$doc")
  while read -r _ line reason; do
    echo "SKIP $doc:$line ($reason)"
  done < <(grep '^SKIP ' "$report" || true)
  if grep -q '^ERROR ' "$report"; then
    grep '^ERROR ' "$report" | while read -r _ line message; do
      echo "FAIL $doc:$line: $message"
    done
    return 1
  fi
  runs=$(grep -c '^RUN ' "$report" || true)
  skips=$(grep -c '^SKIP ' "$report" || true)
  cmakes=$(grep -c '^CMAKE ' "$report" || true)
  if [[ $runs == 0 ]]; then
    echo "PASS $doc: no block to run ($skips skipped)"
    return 0
  fi

  work=$(make_work_dir "$dir")
  mkdir -p -- "$dir/home" "$dir/tmp" "$dir/bin"
  for program in "${programs[@]}"; do
    ln -s -- "$build/$program" "$dir/bin/$(basename -- "$program")"
  done
  [[ -z $kubectl_bin ]] || ln -s -- "$kubectl_bin" "$dir/bin/kubectl"
  {
    echo "# generated by tests/docs/run_doc_blocks.sh from $doc"
    printf 'echo "$$" >%q\n' "$dir/pgid"
    printf 'cd %q\n' "$work"
    cat <<'PREAMBLE'
doc_block=""
trap 'rc=$?; printf "doc-test: %s: exit %d: %s\n" "$doc_block" "$rc" "$BASH_COMMAND" >&2' ERR
set -e
PREAMBLE
    cat "$dir/blocks.body"
  } >"$script"

  # setsid: the document's bash leads a new process group, which is what stop_group signals.
  setsid -w env -u KUBECONFIG HOME="$dir/home" TMPDIR="$dir/tmp" PATH="$dir/bin:$PATH" \
    bash "$script" </dev/null >"$dir/log" 2>&1 &
  pid=$!
  local deadline=$((SECONDS + doc_seconds)) timed_out=0
  while kill -0 "$pid" 2>/dev/null; do
    if [[ -z $group && -s $dir/pgid ]]; then
      group=$(<"$dir/pgid")
    fi
    if ((SECONDS >= deadline)); then
      timed_out=1
      break
    fi
    sleep 0.2
  done
  [[ -n $group || ! -s $dir/pgid ]] || group=$(<"$dir/pgid")
  if ((timed_out)); then
    stop_group
    rc=124
    wait "$pid" 2>/dev/null || true
  else
    rc=0
    wait "$pid" || rc=$?
    stop_group
  fi

  status="$runs run, $skips skipped, $cmakes cmake commands left out"
  if [[ $rc == 0 ]]; then
    echo "PASS $doc: $status"
    return 0
  fi
  echo "---- output of $doc"
  cat -- "$dir/log"
  echo "----"
  if ((timed_out)); then
    echo "FAIL $doc: still running after ${doc_seconds}s ($status)"
  else
    echo "FAIL $doc: exit $rc ($status)"
  fi
  return 1
}

failed=0
for doc in "${docs[@]}"; do
  run_doc "$doc" || failed=1
done
exit "$failed"
