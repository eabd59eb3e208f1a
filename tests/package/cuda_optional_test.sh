#!/usr/bin/env bash
# CUDA is optional at run time (CTest cuda_optional_at_run_time, label package): the
# programs do not link the CUDA runtime, cuBLAS or cuDNN; the CUDA backend is a plugin
# that exports one symbol; and asking for a GPU where the plugin cannot load is a refusal
# that names the missing piece (the plugin, or the CUDA library it needs), never a crash.
# usage: cuda_optional_test.sh MANTISSA_CLI MANTISSA_GUI PLUGIN   (PLUGIN "" when not built)
set -euo pipefail
cli=$1 gui=$2 plugin=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
cuda_libs="libcudart|libcublas|libcudnn"

echo "== the programs do not link CUDA"
for program in "$cli" "$gui"; do
  if ldd "$program" | grep -E "$cuda_libs"; then fail "$program links a CUDA library"; fi
done

# Runs `mantissa-cli train --device cuda` and checks that it is refused with a message
# matching $1 (a bash pattern), through an exit status, not a signal. Extra arguments go
# before the command (env assignments, an unshare wrapper).
expect_refusal() {
  local pattern=$1 rc=0 out
  shift
  out=$("$@" "$cli" train --preset softmax --max-steps 1 --limit-train 256 --limit-test 64 --threads 1 \
    --device cuda --db "$tmp/runs.sqlite" 2>&1) || rc=$?
  echo "$out" | tail -3
  echo "(exit status $rc)"
  ((rc != 0)) || fail "training on cuda was not refused"
  ((rc < 128)) || fail "mantissa-cli died of a signal"
  [[ $out == $pattern ]] || fail "the refusal does not say: $pattern"
}

if [[ -z $plugin ]]; then
  echo "== no CUDA backend in this build: --device cuda says so"
  expect_refusal "*no CUDA backend*" env
  echo "cuda_optional_test: passed (build without the CUDA backend)"
  exit 0
fi

echo "== the plugin: cuBLAS and cuDNN shared, the CUDA runtime inside, one exported symbol"
needed=$(readelf -d "$plugin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
echo "NEEDED: $(echo $needed)"
[[ $needed == *libcublas.so* ]] || fail "the plugin does not load cuBLAS as a shared library"
[[ $needed == *libcudnn.so* ]] || fail "the plugin does not load cuDNN as a shared library"
[[ $needed != *libcudart* ]] || fail "the plugin needs the shared CUDA runtime (it should be static)"
exported=$(nm -D --defined-only "$plugin" | awk '{print $3}' | grep -v '^$' | sort -u)
[[ $exported == mantissa_cuda_plugin_api ]] || fail "the plugin exports more than its entry point: $exported"

echo "== the plugin is missing: named"
expect_refusal "*MANTISSA_CUDA_PLUGIN names $tmp/none.so, which is not a file*" env MANTISSA_CUDA_PLUGIN="$tmp/none.so"

echo "== a library that is not the plugin, and a plugin from another version: refused"
zlib=$(ldconfig -p | awk '/libz\.so\.1 .*x86-64/ {found = $NF} END {print found}')
expect_refusal "*$zlib is not a Mantissa CUDA backend plugin (no mantissa_cuda_plugin_api)*" \
  env MANTISSA_CUDA_PLUGIN="$zlib"
# The loader reads the ABI number and version before anything else of the entry point's struct.
cat >"$tmp/other.c" <<'OTHER'
struct api { int abi; const char* version; void* make_backend; void* list_devices; };
static const struct api other = {1, "0.0.0-other", 0, 0};
const struct api* mantissa_cuda_plugin_api(void) { return &other; }
OTHER
${CC:-cc} -shared -fPIC -o "$tmp/other.so" "$tmp/other.c"
expect_refusal "*is from Mantissa 0.0.0-other (plugin interface 1), but this program is Mantissa*" \
  env MANTISSA_CUDA_PLUGIN="$tmp/other.so"

echo "== the plugin loads here: the GPU is used, or refused with the reason"
# On this machine the plugin loads; without a GPU or driver the refusal says so.
rc=0
out=$("$cli" train --preset softmax --max-steps 1 --limit-train 256 --limit-test 64 --threads 1 --device cuda \
  --db "$tmp/runs.sqlite" 2>&1) || rc=$?
echo "$out" | tail -2
((rc < 128)) || fail "mantissa-cli died of a signal"
((rc == 0)) || [[ $out == *"cannot train on cuda"* ]] || fail "the refusal does not say why"

echo "== cuBLAS and cuDNN missing: the loader's message names the library"
# Hide the folders the CUDA libraries load from, in a private mount namespace: as root, or
# as a user where unprivileged user namespaces are allowed.
dirs=$(ldd "$plugin" | awk -v re="$cuda_libs" '$0 ~ re && $3 ~ /^\// {print $3}' | xargs -r -n1 dirname | xargs -r -n1 realpath | sort -u)
[[ -n $dirs ]] || fail "ldd finds no CUDA library of the plugin on this machine"
hide=$tmp/hide.sh
cat >"$hide" <<HIDE
set -e
for d in $(echo $dirs); do mount -t tmpfs -o size=1m no-cuda "\$d"; done
exec "\$@"
HIDE
as_root=()
[[ $(id -u) -eq 0 ]] || as_root=(--map-root-user)
if ! unshare --mount "${as_root[@]}" true 2>/dev/null; then
  echo "SKIPPED: cannot hide the CUDA libraries here (needs root or unprivileged user namespaces)"
  exit 77
fi
expect_refusal "*libcu*.so*cannot open shared object file*" unshare --mount --propagation private "${as_root[@]}" \
  bash "$hide"
echo "cuda_optional_test: passed"
