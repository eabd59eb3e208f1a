#!/usr/bin/env bash
# The Debian packages end to end (CTest deb_package_install, label package): makes them from
# the build tree with CPack, holds them to lintian (no errors; warnings are listed), then
# installs them with apt-get into a throwaway root and runs deb_install_steps.sh there.
# The throwaway root is an overlay of this machine's / in a private mount namespace: every
# change (dpkg's database, /usr, the user's data) lands in a tmpfs that goes when the test
# ends, so the machine is left as it was. It needs root and overlayfs, as CI has; elsewhere
# the test is skipped (exit 77) with the reason.
# usage: deb_package_test.sh BUILD_DIR SOURCE_DIR WORK_DIR
set -euo pipefail
build=$(realpath "$1") source=$(realpath "$2") work=$3
here=$(dirname "$(realpath "$0")")

skip() {
  echo "SKIPPED: $*"
  exit 77
}
[[ $(id -u) -eq 0 ]] || skip "installing packages into a throwaway root needs root (it mounts an overlay of /)"
command -v lintian >/dev/null || skip "lintian is not installed (scripts/setup installs it)"
# The throwaway root needs a private mount namespace; in a chroot, whose / is not a mount
# point, unshare cannot make / private ("cannot change root filesystem propagation").
if ! why=$(unshare --mount --propagation private true 2>&1); then
  skip "no private mount namespace for the throwaway root here (${why:-unshare failed}); a chroot's / is not a mount point"
fi

rm -rf "$work"
mkdir -p "$work"
work=$(realpath "$work")
echo "== cpack (build tree $build)"
if ! cpack --config "$build/CPackConfig.cmake" -B "$work/packages" >"$work/cpack.log" 2>&1; then
  cat "$work/cpack.log"
  exit 1
fi
debs=("$work"/packages/mantissa_*.deb "$work"/packages/mantissa-dev_*.deb)
for deb in "${debs[@]}"; do
  [[ -f $deb ]] || { echo "FAIL: cpack made no $deb (see $work/cpack.log)"; exit 1; }
  echo "-- $(basename "$deb")"
  dpkg-deb --field "$deb" Package Version Section Depends
done

echo "== lintian"
# --fail-on error: warnings are reported but only errors fail; lintian says so when it
# runs as root.
if ! lintian --fail-on error --tag-display-limit 0 "${debs[@]}" 2>&1 | { grep -v "running with root privileges" || true; }; then
  echo "FAIL: lintian reports errors (E: above)"
  exit 1
fi
echo "lintian: no errors"

echo "== install into a throwaway root"
unshare --mount --propagation private -- "$here/in_throwaway_root.sh" "$work/root" "$source:$work/packages" \
  "$here/deb_install_steps.sh" "$source" "$work/packages"
echo "deb_package_test: passed"
