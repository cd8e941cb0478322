# tests/consumer/lib.sh: bash functions shared by the consumer tests (tutorial_check.sh,
# consumer_check.sh): a temporary kubelet root, kdp-manager and plugin processes started there and
# waited for through `kdpctl status`, manifests applied until their pods are admitted, and an EXIT
# trap that stops every process started here (SIGTERM, then SIGKILL) and removes the temporary
# files. Source it, then call kdp_lib_init.
#
# Environment: KDP_MANAGER and KDPCTL (required): the kdp-manager and kdpctl binaries to run,
# installed or from a build tree. KDP_WAIT_SECONDS (default 60): how long each wait lasts before it
# fails. KDP_KEEP_TMP=1 keeps the temporary directory (its path is printed).
#
# Functions that act (kdp_start*, kdp_stop, kdp_wait_for, kdp_apply*) fail the test on error
# (kdp_fail: the message and the processes' logs on stderr, exit 1), so callers need no error
# handling of their own; predicates (kdp_running, kdp_resource_ready, kdp_driver_ready,
# kdp_pod_admitted) return a status. Functions that start or stop a process set KDP_LAST_PID or
# KDP_STOP_STATUS: do not call them in a $(...) subshell. A caller that needs an EXIT action of
# its own registers it with kdp_on_exit instead of replacing the trap.
#
#   kdp_lib_init                                   temp dir $KDP_TMP, EXIT trap
#   root=$(kdp_make_root)                          an empty kubelet root
#   kdp_start_manager ROOT [ARGS...]               kdp-manager, waited for
#   kdp_start_plugin ROOT RESOURCE MIN NAME -- CMD...   a device plugin, waited for
#   kdp_start_dra_driver ROOT DRIVER NAME -- CMD...     a DRA driver, waited for
#   kdp_apply ROOT FILE; kdp_apply_pods ROOT FILE NS/POD...   manifests; $KDP_APPLY_OUTPUT
#   kdp_ctl ROOT ARGS...; kdp_pod_devices ROOT NS POD; kdp_stop PID; kdp_fail MESSAGE
# shellcheck shell=bash
# shellcheck disable=SC2034  # KDP_* globals are read by the scripts that source this file

# Prints a progress line.
kdp_log() {
  printf '== %s\n' "$*"
}

# Fails the test: prints "FAIL: MESSAGE" and the tail of every process log, then exits 1 (the
# EXIT trap stops the processes).
kdp_fail() {
  printf 'FAIL: %s\n' "$*" >&2
  local log
  for log in "${KDP_TMP:-/nonexistent}"/*.log; do
    [[ -f $log ]] || continue
    printf -- '--- last lines of %s\n' "$log" >&2
    tail -n 25 -- "$log" >&2
  done
  exit 1
}

# Sets up the temporary directory ($KDP_TMP) and the EXIT trap. Call once, first.
kdp_lib_init() {
  if [[ -z ${KDP_MANAGER:-} || -z ${KDPCTL:-} ]]; then
    printf 'FAIL: set KDP_MANAGER and KDPCTL to the kdp-manager and kdpctl binaries\n' >&2
    exit 1
  fi
  local binary
  for binary in "$KDP_MANAGER" "$KDPCTL"; do
    if [[ ! -x $binary ]]; then
      printf 'FAIL: %s is not an executable file\n' "$binary" >&2
      exit 1
    fi
  done
  KDP_WAIT_SECONDS=${KDP_WAIT_SECONDS:-60}
  KDP_PIDS=()
  declare -gA KDP_NAMES=()  # pid -> the name given to kdp_start
  KDP_EXIT_HOOKS=()
  KDP_LAST_PID=
  KDP_STOP_STATUS=
  KDP_APPLY_OUTPUT=
  # Short: unix socket paths under it must stay below 108 bytes.
  KDP_TMP=$(mktemp -d "${TMPDIR:-/tmp}/kdp-consumer.XXXXXX") || {
    printf 'FAIL: cannot create a temporary directory\n' >&2
    exit 1
  }
  trap kdp_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}

# Runs COMMAND (a string for eval) from the EXIT trap, before the processes are stopped.
kdp_on_exit() {
  KDP_EXIT_HOOKS+=("$1")
}

# The EXIT trap: the hooks, then SIGTERM to every process still running (the last started first),
# SIGKILL to those still there after 10 s, and the temporary directory removed.
kdp_cleanup() {
  local status=$?
  trap - EXIT INT TERM
  local hook i
  for hook in "${KDP_EXIT_HOOKS[@]}"; do
    eval "$hook" || true
  done
  local pids=("${KDP_PIDS[@]}")
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kdp_stop "${pids[i]}"
  done
  if [[ -n ${KDP_TMP:-} && -d $KDP_TMP ]]; then
    if [[ ${KDP_KEEP_TMP:-0} == 1 ]]; then
      printf 'kept %s\n' "$KDP_TMP" >&2
    else
      rm -rf -- "$KDP_TMP"
    fi
  fi
  exit "$status"
}

# True while process PID (started by kdp_start) runs.
kdp_running() {
  kill -0 "$1" 2>/dev/null
}

# Starts NAME's COMMAND... in the background, its output in $KDP_TMP/NAME.log; sets KDP_LAST_PID.
kdp_start() {
  local name=$1
  shift
  "$@" >"$KDP_TMP/$name.log" 2>&1 &
  KDP_LAST_PID=$!
  KDP_PIDS+=("$KDP_LAST_PID")
  KDP_NAMES[$KDP_LAST_PID]=$name
}

# Stops process PID (started by kdp_start): SIGTERM, up to 10 s to exit, then SIGKILL. Sets
# KDP_STOP_STATUS to its exit status (143 after SIGTERM unless it handles the signal).
kdp_stop() {
  local pid=$1 i
  if kdp_running "$pid"; then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
      kdp_running "$pid" || break
      sleep 0.1
    done
    if kdp_running "$pid"; then
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  KDP_STOP_STATUS=0
  wait "$pid" 2>/dev/null || KDP_STOP_STATUS=$?
  local kept=()
  for i in "${KDP_PIDS[@]}"; do
    [[ $i == "$pid" ]] || kept+=("$i")
  done
  KDP_PIDS=("${kept[@]}")
}

# Waits until COMMAND... succeeds (output discarded), polling every 100 ms for KDP_WAIT_SECONDS;
# fails naming DESCRIPTION on timeout, or at once when a process started here has died.
kdp_wait_for() {
  local description=$1
  shift
  local deadline=$((SECONDS + KDP_WAIT_SECONDS)) pid
  while :; do
    if "$@" >/dev/null 2>&1; then
      return 0
    fi
    for pid in "${KDP_PIDS[@]}"; do
      if ! kdp_running "$pid"; then
        local rc=0
        wait "$pid" 2>/dev/null || rc=$?
        kdp_fail "${KDP_NAMES[$pid]:-process} (pid $pid) exited with status $rc while waiting" \
          "for $description"
      fi
    done
    if ((SECONDS >= deadline)); then
      kdp_fail "timed out after ${KDP_WAIT_SECONDS}s waiting for $description"
    fi
    sleep 0.1
  done
}

# Creates an empty kubelet root directory under $KDP_TMP and prints its path.
kdp_make_root() {
  mktemp -d "$KDP_TMP/root.XXXXXX" || kdp_fail "cannot create a kubelet root under $KDP_TMP"
}

# kdpctl against the manager of kubelet root ROOT: kdp_ctl ROOT ARGS...
kdp_ctl() {
  local root=$1
  shift
  "$KDPCTL" --kubelet-root "$root" "$@"
}

# Starts $KDP_MANAGER on ROOT with the extra ARGS... and waits until its admin socket answers
# `kdpctl status`. Sets KDP_LAST_PID.
kdp_start_manager() {
  local root=$1
  shift
  kdp_start manager "$KDP_MANAGER" --kubelet-root "$root" "$@"
  local pid=$KDP_LAST_PID
  kdp_wait_for "kdp-manager to answer kdpctl status" kdp_ctl "$root" status
  KDP_LAST_PID=$pid
}

# True when `kdpctl status` on ROOT lists device-plugin RESOURCE connected with at least MIN
# devices (the resource table: RESOURCE CAPACITY ALLOCATABLE ALLOCATED CONNECTED ENDPOINT).
kdp_resource_ready() {
  local root=$1 resource=$2 min=$3 status
  status=$(kdp_ctl "$root" status) || return 1
  awk -v r="$resource" -v min="$min" '
    NR == 1 && $1 != "RESOURCE" { exit 1 }
    NF == 0 { exit }
    $1 == r && $5 == "yes" && $2 + 0 >= min + 0 { found = 1 }
    END { exit !found }' <<<"$status"
}

# Starts a device plugin COMMAND... (after "--") as NAME and waits until the manager on ROOT
# shows RESOURCE connected with at least MIN devices:
#   kdp_start_plugin ROOT RESOURCE MIN NAME -- COMMAND...
kdp_start_plugin() {
  local root=$1 resource=$2 min=$3 name=$4
  [[ $5 == -- ]] || kdp_fail "kdp_start_plugin: want ROOT RESOURCE MIN NAME -- COMMAND..."
  shift 5
  kdp_start "$name" "$@"
  local pid=$KDP_LAST_PID
  kdp_wait_for "$name to register $resource with at least $min devices" \
    kdp_resource_ready "$root" "$resource" "$min"
  KDP_LAST_PID=$pid
}

# True when `kdpctl status` on ROOT lists DRA driver DRIVER with a connected endpoint (the driver
# table: DRIVER ENDPOINT SERVICE CONNECTED).
kdp_driver_ready() {
  local root=$1 driver=$2 status
  status=$(kdp_ctl "$root" status) || return 1
  awk -v d="$driver" '$1 == d && NF == 4 && $4 == "yes" { found = 1 } END { exit !found }' \
    <<<"$status"
}

# Starts a DRA driver COMMAND... as NAME and waits until the manager on ROOT shows DRIVER
# connected: kdp_start_dra_driver ROOT DRIVER NAME -- COMMAND...
kdp_start_dra_driver() {
  local root=$1 driver=$2 name=$3
  [[ $4 == -- ]] || kdp_fail "kdp_start_dra_driver: want ROOT DRIVER NAME -- COMMAND..."
  shift 4
  kdp_start "$name" "$@"
  local pid=$KDP_LAST_PID
  kdp_wait_for "$name to register DRA driver $driver" kdp_driver_ready "$root" "$driver"
  KDP_LAST_PID=$pid
}

# True when `kdpctl get pods` on ROOT lists pod NAMESPACE/NAME.
kdp_pod_admitted() {
  local root=$1 namespace=$2 name=$3 pods
  pods=$(kdp_ctl "$root" get pods) || return 1
  awk -v ns="$namespace" -v n="$name" '$1 == ns && $2 == n { found = 1 } END { exit !found }' \
    <<<"$pods"
}

# The DEVICES column of pod NAMESPACE/NAME in `kdpctl get pods` on ROOT
# ("CONTAINER:RESOURCE=ID,ID;...", "-" when none); empty when the pod is not listed.
kdp_pod_devices() {
  local root=$1 namespace=$2 name=$3
  kdp_ctl "$root" get pods | awk -v ns="$namespace" -v n="$name" '$1 == ns && $2 == n { print $4 }'
}

# Applies manifest FILE with kdpctl on ROOT and fails unless kdpctl succeeds (for DeviceClasses,
# claims and templates). The output is left in KDP_APPLY_OUTPUT.
kdp_apply() {
  local root=$1 file=$2 rc=0
  KDP_APPLY_OUTPUT=$(kdp_ctl "$root" apply -f "$file" 2>&1) || rc=$?
  if ((rc != 0)); then
    kdp_fail "kdpctl apply -f $file exited $rc: $KDP_APPLY_OUTPUT"
  fi
}

# Applies manifest FILE on ROOT until every pod NAMESPACE/NAME given is admitted, then checks that
# `kdpctl get pods` lists each: kdp_apply_pods ROOT FILE NAMESPACE/NAME...
# While every pod of the manifest is rejected (the plugin's devices or the driver's
# ResourceSlices may not have reached the manager yet; a rejected pod leaves nothing behind), the
# manifest is applied again, for up to KDP_WAIT_SECONDS. A manifest that admits some pods and
# rejects others fails at once. The last output is left in KDP_APPLY_OUTPUT.
kdp_apply_pods() {
  local root=$1 file=$2
  shift 2
  local deadline=$((SECONDS + KDP_WAIT_SECONDS)) rc pod
  while :; do
    rc=0
    KDP_APPLY_OUTPUT=$(kdp_ctl "$root" apply -f "$file" 2>&1) || rc=$?
    if ((rc == 0)); then
      break
    fi
    if ((rc != 1)) || grep -q ' admitted (uid ' <<<"$KDP_APPLY_OUTPUT"; then
      kdp_fail "kdpctl apply -f $file exited $rc: $KDP_APPLY_OUTPUT"
    fi
    if ((SECONDS >= deadline)); then
      kdp_fail "pods of $file still rejected after ${KDP_WAIT_SECONDS}s: $KDP_APPLY_OUTPUT"
    fi
    sleep 0.2
  done
  for pod in "$@"; do
    grep -qF "pod $pod admitted (uid " <<<"$KDP_APPLY_OUTPUT" ||
      kdp_fail "kdpctl apply -f $file did not admit pod $pod: $KDP_APPLY_OUTPUT"
    kdp_pod_admitted "$root" "${pod%%/*}" "${pod#*/}" ||
      kdp_fail "kdpctl get pods does not list pod $pod after it was admitted"
  done
}

# Fails with MESSAGE unless TEXT contains the fixed string NEEDLE: kdp_expect_contains TEXT
# NEEDLE MESSAGE.
kdp_expect_contains() {
  grep -qF -- "$2" <<<"$1" || kdp_fail "$3: no \"$2\" in:
$1"
}
