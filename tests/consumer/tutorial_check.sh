#!/usr/bin/env bash
# tutorial_check.sh: proves that a tutorial still works, so the docs cannot rot. It extracts the
# project files the tutorial marks (scripts/extract-tutorial), builds them with CMake and Ninja
# against an installed kdp SDK (find_package(kdp) through CMAKE_PREFIX_PATH, -Wall -Wextra
# -Werror), runs the built plugin or driver against kdp-manager as the tutorial does, applies the
# tutorial's own manifests and checks what the tutorial says happens: the pods admitted with the
# tutorial's devices, and for DRA the claim prepared and its CDI spec written (and removed again).
#
#   tests/consumer/tutorial_check.sh DOC PREFIX WORKDIR
#
# DOC: docs/tutorial-device-plugin.md or docs/tutorial-dra-driver.md. PREFIX: the SDK's install
# prefix. WORKDIR: scratch directory (its src/ and build/ are replaced). KDP_MANAGER and KDPCTL
# name the manager binaries (default: PREFIX/bin/kdp-manager and PREFIX/bin/kdpctl);
# tests/consumer/lib.sh lists the other settings. Exit 0 only when every check holds; otherwise
# the first failed check and the processes' logs are printed.
set -euo pipefail

here=$(cd "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/consumer/lib.sh
source "$here/lib.sh"

if [[ $# -ne 3 ]]; then
  echo "usage: $0 DOC PREFIX WORKDIR" >&2
  exit 2
fi
doc=$1
prefix=$(cd "$2" && pwd) || kdp_fail "prefix $2 does not exist"
workdir=$3
: "${KDP_MANAGER:=$prefix/bin/kdp-manager}"
: "${KDPCTL:=$prefix/bin/kdpctl}"
export KDP_MANAGER KDPCTL
kdp_lib_init

# What each tutorial promises; keep in step with the docs.
fake_boards=(fpga0 fpga1 fpga2 fpga3)  # the reader's `touch $DEV/fpga{0..3}`

# Extracts DOC into WORKDIR/src and builds it into WORKDIR/build.
build_tutorial() {
  rm -rf -- "$workdir/src" "$workdir/build"
  mkdir -p -- "$workdir"
  kdp_log "extracting $doc"
  "$here/../../scripts/extract-tutorial" "$doc" "$workdir/src" ||
    kdp_fail "scripts/extract-tutorial $doc failed"
  [[ -f $workdir/src/CMakeLists.txt ]] || kdp_fail "$doc has no CMakeLists.txt block"
  kdp_log "building against $prefix"
  local start=$SECONDS
  cmake -S "$workdir/src" -B "$workdir/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_FLAGS="-Wall -Wextra -Werror" \
    >"$KDP_TMP/configure.log" 2>&1 || kdp_fail "cmake configure of $doc failed"
  cmake --build "$workdir/build" >"$KDP_TMP/build.log" 2>&1 || kdp_fail "build of $doc failed"
  echo "FIGURE: tutorial_build_seconds=$((SECONDS - start))"
}

# A fake device directory with the tutorial's boards; prints its path.
make_dev_dir() {
  local dev=$KDP_TMP/dev board
  mkdir -p -- "$dev"
  for board in "${fake_boards[@]}"; do
    : >"$dev/$board"
  done
  printf '%s\n' "$dev"
}

check_device_plugin() {
  local src=$workdir/src plugin=$workdir/build/fpga-plugin root dev
  [[ -x $plugin ]] || kdp_fail "the build made no fpga-plugin binary"
  [[ -f $src/pod.yaml ]] || kdp_fail "$doc has no pod.yaml block"
  root=$(kdp_make_root)
  dev=$(make_dev_dir)

  kdp_log "kdp-manager and fpga-plugin"
  kdp_start_manager "$root"
  kdp_start_plugin "$root" example.com/fpga "${#fake_boards[@]}" fpga-plugin -- \
    "$plugin" --kubelet-root "$root" --dev-dir "$dev"
  local plugin_pid=$KDP_LAST_PID

  kdp_log "kdpctl apply -f pod.yaml"
  kdp_apply_pods "$root" "$src/pod.yaml" default/fpga-small default/fpga-pair
  local out=$KDP_APPLY_OUTPUT
  # The preferred allocator keeps cards whole: the pair gets fpga2+fpga3, not fpga1+fpga2.
  [[ $(kdp_pod_devices "$root" default fpga-small) == main:example.com/fpga=fpga0 ]] ||
    kdp_fail "fpga-small should hold fpga0: $(kdp_ctl "$root" get pods)"
  [[ $(kdp_pod_devices "$root" default fpga-pair) == main:example.com/fpga=fpga2,fpga3 ]] ||
    kdp_fail "fpga-pair should hold fpga2,fpga3 (one whole card): $(kdp_ctl "$root" get pods)"
  kdp_expect_contains "$out" "env FPGA_VISIBLE_DEVICES=fpga2,fpga3" "Allocate's env"
  kdp_expect_contains "$out" "device-node $dev/fpga2 -> /dev/fpga2 (rw)" "the device nodes"
  kdp_expect_contains "$out" "mount /opt/example-fpga/lib -> /usr/local/lib/fpga (ro)" "the mount"
  kdp_expect_contains "$out" "cdi example.com/fpga=fpga3" "the CDI names"

  kdp_log "health: rm $dev/fpga3"
  rm -f -- "$dev/fpga3"
  kdp_wait_for "fpga3 to turn Unhealthy in kdpctl status" fpga3_unhealthy "$root"

  kdp_log "kdpctl delete pod fpga-pair"
  kdp_ctl "$root" delete pod fpga-pair >/dev/null || kdp_fail "kdpctl delete pod fpga-pair failed"
  kdp_pod_admitted "$root" default fpga-pair && kdp_fail "fpga-pair is still listed after delete"

  kdp_log "stopping fpga-plugin"
  kdp_stop "$plugin_pid"
  [[ $KDP_STOP_STATUS == 0 ]] || kdp_fail "fpga-plugin exited $KDP_STOP_STATUS after SIGTERM"
  [[ ! -e $root/device-plugins/example.com_fpga.sock ]] ||
    kdp_fail "fpga-plugin left its socket behind"
}

fpga3_unhealthy() {
  kdp_ctl "$1" status | awk '$1 == "example.com/fpga" && $2 == "fpga3" && $3 == "Unhealthy" {
    found = 1 } END { exit !found }'
}

check_dra_driver() {
  local src=$workdir/src driver=$workdir/build/fpga-driver root dev file
  [[ -x $driver ]] || kdp_fail "the build made no fpga-driver binary"
  for file in deviceclass.yaml claim-template.yaml pod.yaml; do
    [[ -f $src/$file ]] || kdp_fail "$doc has no $file block"
  done
  root=$(kdp_make_root)
  dev=$(make_dev_dir)

  kdp_log "kdp-manager and fpga-driver"
  kdp_start_manager "$root" --node-name node-a
  kdp_start_dra_driver "$root" fpga.example.com fpga-driver -- \
    "$driver" --kubelet-root "$root" --node-name node-a --kubeconfig "$root/kdp/kubeconfig" \
    --dev-dir "$dev" --cdi-root "$root/cdi"
  local driver_pid=$KDP_LAST_PID

  kdp_log "kdpctl apply -f deviceclass.yaml, claim-template.yaml, pod.yaml"
  kdp_apply "$root" "$src/deviceclass.yaml"
  kdp_expect_contains "$KDP_APPLY_OUTPUT" "deviceclass.resource.k8s.io/fpga.example.com" \
    "the DeviceClass"
  kdp_apply "$root" "$src/claim-template.yaml"
  kdp_expect_contains "$KDP_APPLY_OUTPUT" "resourceclaimtemplate.resource.k8s.io/two-fpgas" \
    "the ResourceClaimTemplate"
  kdp_apply_pods "$root" "$src/pod.yaml" default/fpga-job
  local out=$KDP_APPLY_OUTPUT uid
  uid=$(awk '/^  claim fpgas -> resourceclaim / { sub(/\)$/, "", $NF); print $NF }' <<<"$out")
  [[ -n $uid ]] || kdp_fail "no claim fpgas in the apply output: $out"
  local board
  for board in fpga0 fpga1; do
    kdp_expect_contains "$out" "device fpga.example.com/node-a/$board for fpgas" "the allocation"
    kdp_expect_contains "$out" "cdi fpga.example.com/fpga=$uid-$board" "the CDI device IDs"
  done

  local status
  status=$(kdp_ctl "$root" status)
  awk -v uid="$uid" '$3 == uid && $4 == "default/fpga-job" && $5 == "yes" { found = 1 }
    END { exit !found }' <<<"$status" || kdp_fail "claim $uid is not shown prepared: $status"

  local spec=$root/cdi/fpga.example.com-fpga_$uid.json
  [[ -f $spec ]] || kdp_fail "no CDI spec $spec: $(ls -l "$root/cdi" 2>&1)"
  local content
  content=$(<"$spec")
  kdp_expect_contains "$content" '"kind": "fpga.example.com/fpga"' "the CDI spec's kind"
  kdp_expect_contains "$content" "\"name\": \"$uid-fpga1\"" "the CDI spec's devices"
  kdp_expect_contains "$content" '"FPGA_VISIBLE_DEVICES=fpga0,fpga1"' "the CDI spec's env"
  kdp_expect_contains "$content" "\"hostPath\": \"$dev/fpga0\"" "the CDI spec's device nodes"

  kdp_log "kdpctl delete pod fpga-job"
  kdp_ctl "$root" delete pod fpga-job >/dev/null || kdp_fail "kdpctl delete pod fpga-job failed"
  [[ ! -e $spec ]] || kdp_fail "Unprepare left $spec behind"

  kdp_log "stopping fpga-driver"
  kdp_stop "$driver_pid"
  [[ $KDP_STOP_STATUS == 0 ]] || kdp_fail "fpga-driver exited $KDP_STOP_STATUS after SIGTERM"
  [[ ! -e $root/plugins_registry/fpga.example.com-reg.sock ]] ||
    kdp_fail "fpga-driver left its registration socket behind"
}

start=$SECONDS
case $(basename -- "$doc") in
  tutorial-device-plugin.md)
    build_tutorial
    check_device_plugin
    ;;
  tutorial-dra-driver.md)
    build_tutorial
    check_dra_driver
    ;;
  *) kdp_fail "no checks known for $doc (tutorial-device-plugin.md, tutorial-dra-driver.md)" ;;
esac
echo "FIGURE: tutorial_check_seconds=$((SECONDS - start))"
echo "PASS: $doc"
