#!/usr/bin/env bash
# package.unpack: checks each .deb's control fields and that apt can satisfy its Depends on this
# Debian release, then unpacks every package into the scratch root ROOT (dpkg -x: the files of a
# real installation, without touching the machine's own dpkg database).
# Usage: unpack_debs.sh DEB_DIR ROOT
set -euo pipefail
debs=$1 root=$2
fail() { echo "unpack_debs: $*" >&2; exit 1; }
versions=()

rm -rf "$root"
mkdir -p "$root"
mapfile -t files < <(find "$debs" -maxdepth 1 -name '*.deb' | sort)
[ "${#files[@]}" = 3 ] || fail "expected 3 .deb files in $debs, found ${#files[@]}"
for deb in "${files[@]}"; do
  name=$(dpkg-deb --field "$deb" Package)
  arch=$(dpkg-deb --field "$deb" Architecture)
  [ "$arch" = "$(dpkg --print-architecture)" ] || fail "$name: Architecture '$arch'"
  depends=$(dpkg-deb --field "$deb" Depends)
  case "$name" in
    libkdp-sdk-dev)
      for dev in libgrpc++-dev libabsl-dev libhwloc-dev libnuma-dev; do
        [[ "$depends" == *"$dev"* ]] || fail "$name: Depends lacks $dev: $depends"
      done ;;
    kdp-manager | kdp-examples)
      # dpkg-shlibdeps found the shared libraries the programs link: glibc always; gRPC only in
      # a shared build (KDP_LEAN_BINARIES links its archive, and the apt simulation below checks
      # that whatever is listed can be installed).
      [[ "$depends" == *libc6* ]] ||
        fail "$name: Depends lacks the shared libraries (dpkg-shlibdeps): $depends" ;;
    *) fail "unexpected package $name" ;;
  esac
  # Nothing outside /usr, and every program where a package's programs go.
  if dpkg-deb --contents "$deb" | awk '{print $6}' | grep -Ev '^\./(usr/?|usr/.*)?$' | grep .; then
    fail "$name installs outside /usr"
  fi
  # Debian policy 12.5: the license as /usr/share/doc/<package>/copyright, in every package.
  dpkg-deb --contents "$deb" | awk '{print $6}' |
    grep -x "./usr/share/doc/$name/copyright" >/dev/null ||
    fail "$name has no usr/share/doc/$name/copyright"
  dpkg -x "$deb" "$root"
  echo "unpacked $name ($depends)"
  versions+=("$(dpkg-deb --field "$deb" Version)")
done
# apt resolves every Depends from this machine's package lists (a simulation: nothing changes).
if command -v apt-get >/dev/null; then
  if ! apt-get install --simulate --no-install-recommends "${files[@]}" >"$root/../apt-simulate.log" 2>&1; then
    cat "$root/../apt-simulate.log" >&2
    fail "apt-get cannot install the packages' dependencies"
  fi
  echo "apt-get --simulate: the dependencies resolve"
fi
# One version: every package carries it, and every program prints it (--version).
version=${versions[0]}
for v in "${versions[@]}"; do [ "$v" = "$version" ] || fail "package versions differ: ${versions[*]}"; done
for program in kdp-manager kdpctl kdp-gpu-plugin kdp-dra-driver kdp-topology kdp-cdi-validate; do
  [ -x "$root/usr/bin/$program" ] || fail "no executable usr/bin/$program in the packages"
  printed=$("$root/usr/bin/$program" --version) || fail "$program --version failed"
  [ "$printed" = "$program $version" ] || fail "$program --version: '$printed', the packages: $version"
done
find "$root" -name kdp-sdk.pc | grep -q . || fail "no kdp-sdk.pc in the packages"
find "$root" -name kdpConfig.cmake | grep -q . || fail "no kdpConfig.cmake in the packages"
