#!/usr/bin/env bash
# oneDNN is opened at run time (engine/backend/cpu/onednn_library.h, CTest
# onednn_missing_named, label package): the programs do not link libdnnl, and where the
# library cannot be loaded, training on the CPU fails with the CLI's error status and a message
# that names the library and the package to install, while commands that need no CPU kernels
# still run.
# usage: onednn_optional_test.sh MANTISSA_CLI MANTISSA_GUI
set -euo pipefail
cli=$1 gui=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}

echo "== the programs do not link oneDNN"
for program in "$cli" "$gui"; do
  if readelf -d "$program" | grep -E 'NEEDED.*libdnnl'; then fail "$program links libdnnl"; fi
done

echo "== with oneDNN here, the CLI trains"
"$cli" train --preset softmax --max-steps 1 --limit-train 256 --limit-test 64 --threads 1 \
  --db "$tmp/runs.sqlite" >/dev/null 2>&1 || fail "training failed with oneDNN installed"

# The library the loader finds, hidden in a private mount namespace (an empty file mounted over
# it): as root, or as a user where unprivileged user namespaces are allowed.
library=$(ldconfig -p | awk '/libdnnl\.so\.[0-9]+ .*x86-64/ {found = $NF} END {print found}')
[[ -n $library ]] || fail "ldconfig knows no libdnnl here"
library=$(realpath "$library")
as_root=()
[[ $(id -u) -eq 0 ]] || as_root=(--map-root-user)
if ! unshare --mount "${as_root[@]}" true 2>/dev/null; then
  echo "SKIPPED: cannot hide libdnnl here (needs root or unprivileged user namespaces)"
  exit 77
fi
: >"$tmp/empty"
hidden() {
  unshare --mount --propagation private "${as_root[@]}" \
    bash -c 'mount --bind "$1" "$2" && shift 2 && exec "$@"' hide "$tmp/empty" "$library" "$@"
}

echo "== oneDNN missing: a command that needs no CPU kernels runs"
hidden "$cli" formats >/dev/null || fail "mantissa-cli formats failed without oneDNN"

echo "== oneDNN missing: training names the library and the package"
rc=0
out=$(hidden "$cli" train --preset softmax --max-steps 1 --limit-train 256 --limit-test 64 --threads 1 \
  --db "$tmp/runs.sqlite" 2>&1) || rc=$?
echo "$out" | tail -3
echo "(exit status $rc)"
((rc == 2)) || fail "expected the CLI's error status 2, got $rc"
[[ $out == *"libdnnl.so."*"cannot be loaded"* ]] || fail "the message does not name the library"
[[ $out == *"install the package libdnnl"[0-9]* ]] || fail "the message does not name the package"
echo "onednn_optional_test: passed"
