#!/usr/bin/env bash
# What a user does with the Debian packages, run by deb_package_test.sh inside a throwaway
# root that has no CUDA: install both with apt-get, run the programs, build a program
# against the installed SDK, upgrade over the installed version, remove them. Each step
# fails the test with what it expected.
# usage: deb_install_steps.sh SOURCE_DIR PACKAGE_DIR
set -euo pipefail
source=$1 packages=$2
export HOME=/tmp/mantissa-user DEBIAN_FRONTEND=noninteractive QT_QPA_PLATFORM=offscreen
mkdir -p "$HOME"
fail() {
  echo "FAIL: $*"
  exit 1
}
step() { echo "== $*"; }
# apt-get, its log shown only when it fails.
apt_get() {
  apt-get -y -q --no-install-recommends "$@" >/tmp/apt.log 2>&1 || { cat /tmp/apt.log; fail "apt-get $*"; }
}
app_deb=$(ls "$packages"/mantissa_*.deb)
dev_deb=$(ls "$packages"/mantissa-dev_*.deb)
version=$(dpkg-deb --field "$app_deb" Version)
upstream=${version%-*}

step "no CUDA library on the loader's path"
if ldconfig -p | grep -E "libcudart|libcublas|libcudnn"; then fail "the throwaway root still has CUDA libraries"; fi

step "apt-get install ./$(basename "$app_deb") ./$(basename "$dev_deb")"
# apt reads local packages as its unprivileged _apt user; a world-readable copy avoids its notice.
install -d -m 755 /tmp/debs && install -m 644 "$app_deb" "$dev_deb" /tmp/debs/
apt_get install /tmp/debs/"$(basename "$app_deb")" /tmp/debs/"$(basename "$dev_deb")"
[[ $(dpkg-query -W -f '${Version}' mantissa) == "$version" ]] || fail "mantissa $version is not installed"

step "mantissa-cli --version, mantissa --version"
# The release version, then the commit a build from a git checkout was made from.
build="${upstream//./\\.}(\\+git\\.[0-9a-f]{12}(\\.modified)?)?"
out=$(mantissa-cli --version)
echo "$out"
[[ $out =~ ^mantissa-cli\ $build$ ]] || fail "expected 'mantissa-cli $upstream[+git.COMMIT]'"
out=$(mantissa --version)
echo "$out"
[[ $out =~ ^mantissa\ $build$ ]] || fail "expected 'mantissa $upstream[+git.COMMIT]' from the workbench"

step "mantissa-cli train (a few steps, recorded in the user's run database)"
mantissa-cli train --preset softmax --max-steps 5 --limit-train 2000 --limit-test 500 --threads 2 --name before-upgrade
db=$HOME/.local/share/Mantissa/mantissa/runs.sqlite
[[ -f $db ]] || fail "no run database at $db"
mantissa-cli runs | grep -q before-upgrade || fail "mantissa-cli runs does not list the run"

step "mantissa-cli study --list: the shipped studies, read from /usr/share/mantissa/studies"
out=$(cd /tmp && mantissa-cli study --list)
echo "$out"
[[ $out == *micikevicius-2018-loss-scaling* ]] || fail "the installed program does not list the shipped studies"

step "mantissa-cli train --device cuda on a machine without CUDA: a clear refusal"
if out=$(mantissa-cli train --preset softmax --max-steps 1 --device cuda 2>&1); then
  fail "training on cuda succeeded on a machine without CUDA: $out"
else
  rc=$?
fi
echo "$out (exit $rc)"
((rc < 128)) || fail "mantissa-cli died of a signal ($rc)"
plugin=$(find /usr/lib -name 'libmantissa-cuda.so' | head -1)
if [[ -n $plugin ]]; then
  [[ $out == *"libcublas.so"*"cannot open shared object file"* ]] || fail "the message does not name the missing cuBLAS"
else
  [[ $out == *"no CUDA backend"* ]] || fail "the message does not say this build has no CUDA backend"
fi

step "build examples/consumer against /usr"
cmake -S "$source/examples/consumer" -B /tmp/consumer -G Ninja -Wno-dev >/tmp/consumer.log 2>&1 ||
  { cat /tmp/consumer.log; fail "configuring examples/consumer against /usr"; }
cmake --build /tmp/consumer >>/tmp/consumer.log 2>&1 || { cat /tmp/consumer.log; fail "building examples/consumer"; }
/tmp/consumer/consumer

# examples/host-app (the embeddable workbench) is built and driven here the same way once it
# exists: configure against /usr, build, run its test offscreen.
if [[ -f $source/examples/host-app/CMakeLists.txt ]]; then
  step "build examples/host-app against /usr"
  cmake -S "$source/examples/host-app" -B /tmp/host-app -G Ninja -Wno-dev >/tmp/host-app.log 2>&1 ||
    { cat /tmp/host-app.log; fail "configuring examples/host-app against /usr"; }
  cmake --build /tmp/host-app >>/tmp/host-app.log 2>&1 || { cat /tmp/host-app.log; fail "building examples/host-app"; }
  ctest --test-dir /tmp/host-app --output-on-failure || fail "examples/host-app's test"
fi

step "install a newer version over it: the user's runs stay"
newer=${upstream}-$((${version##*-} + 1))
for deb in "$app_deb" "$dev_deb"; do
  name=$(dpkg-deb --field "$deb" Package)
  rm -rf /tmp/repack && dpkg-deb -R "$deb" /tmp/repack
  sed -i "s/(= $version)/(= $newer)/; s/^Version: .*/Version: $newer/" /tmp/repack/DEBIAN/control
  dpkg-deb -b /tmp/repack "/tmp/debs/${name}_${newer}.deb" >/dev/null
done
apt_get install "/tmp/debs/mantissa_${newer}.deb" "/tmp/debs/mantissa-dev_${newer}.deb"
[[ $(dpkg-query -W -f '${Version}' mantissa) == "$newer" ]] || fail "the upgrade to $newer did not install"
mantissa-cli runs | grep -q before-upgrade || fail "the run trained before the upgrade is gone"

step "apt-get remove mantissa-dev mantissa"
apt_get remove mantissa-dev mantissa
for gone in /usr/bin/mantissa /usr/bin/mantissa-cli /usr/share/applications/io.mantissa.Mantissa.desktop; do
  [[ ! -e $gone ]] || fail "$gone is still there after removal"
done
[[ -f $db ]] || fail "removing the package deleted the user's run database"
echo "deb_install_steps: all passed"
