#!/usr/bin/env bash
# package.consumer_cmake / package.consumer_pkgconfig: builds tests/consumer, an out-of-tree device
# plugin, against the SDK installed under PREFIX (/usr of a scratch root the .deb files were
# unpacked into, /usr for a real installation, or a `cmake --install --prefix` directory) — with its CMake package (find_package(kdp CONFIG) → kdp::sdk)
# or with pkg-config (kdp-sdk.pc) — then runs it against kdp-manager ($KDP_MANAGER, $KDPCTL) and
# admits tests/consumer/pod.yaml, which asks for two of its widgets.
# Usage: consumer_check.sh cmake|pkg-config PREFIX WORKDIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mode=$1 prefix=$(cd "$2" && pwd) work=$3
# shellcheck source=tests/consumer/lib.sh
source "$here/lib.sh"
kdp_lib_init

rm -rf "$work"
mkdir -p "$work"
case "$mode" in
  cmake)
    kdp_log "cmake: find_package(kdp CONFIG) from $prefix"
    cmake -S "$here" -B "$work" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >"$work/configure.log" 2>&1 ||
      { cat "$work/configure.log" >&2; kdp_fail "configuring tests/consumer against $prefix"; }
    cmake --build "$work" >"$work/build.log" 2>&1 ||
      { cat "$work/build.log" >&2; kdp_fail "building tests/consumer with kdp::sdk"; }
    ;;
  pkg-config)
    pcdir=$(dirname "$(find "$prefix" -name kdp-sdk.pc -print -quit)")
    [ "$pcdir" != . ] || kdp_fail "no kdp-sdk.pc under $prefix"
    kdp_log "pkg-config: kdp-sdk $(PKG_CONFIG_PATH=$pcdir pkg-config --modversion kdp-sdk) from $pcdir"
    PKG_CONFIG_PATH="$pcdir" make -C "$here" BUILD="$work" >"$work/build.log" 2>&1 ||
      { cat "$work/build.log" >&2; kdp_fail "building tests/consumer with pkg-config kdp-sdk"; }
    ;;
  *) kdp_fail "mode must be cmake or pkg-config, not '$mode'" ;;
esac
plugin="$work/kdp-consumer-plugin"
[ -x "$plugin" ] || kdp_fail "the build made no $plugin"
# Nothing of the build tree leaks into the program: it links the installed archives only.
if ldd "$plugin" | grep -q 'not found'; then
  ldd "$plugin" >&2
  kdp_fail "kdp-consumer-plugin needs a library that is not installed"
fi

kubelet_root=$(kdp_make_root)
kdp_start_manager "$kubelet_root"
kdp_start_plugin "$kubelet_root" consumer.kdp.dev/widget 4 consumer -- \
  "$plugin" --kubelet-root "$kubelet_root"
kdp_apply_pods "$kubelet_root" "$here/pod.yaml" default/widget-consumer
devices=$(kdp_pod_devices "$kubelet_root" default widget-consumer)
kdp_expect_contains "$devices" "app:consumer.kdp.dev/widget=" "the pod's devices"
count=$(grep -o 'widget[0-9]' <<<"$devices" | sort -u | wc -l)
[ "$count" = 2 ] || kdp_fail "the pod holds $count widgets, want 2: $devices"
kdp_log "consumer ($mode): pod default/widget-consumer admitted with $devices"
