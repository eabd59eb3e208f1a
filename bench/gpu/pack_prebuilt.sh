#!/usr/bin/env bash
# Packs a CUDA build made here for a GPU server whose job time is short: the GPU test binaries
# (every test labelled gpu), the CPU kernels' tests, the benchmarks, the CUDA backend plugin,
# and the shared libraries such a server may lack (oneDNN, Open MPI's), so that
# bench/gpu/run_prebuilt.sh spends none of the server's minutes configuring and compiling (a
# 16-core H100 server did not finish configure, build and tests in one 10-minute job).
#
#   bench/gpu/pack_prebuilt.sh [BUILD_DIR] [TARBALL]
#
# BUILD_DIR: a build with the CUDA backend (default: build); its CMAKE_CUDA_ARCHITECTURES must
# cover the server's GPU (the default list holds sm_90 for Hopper). TARBALL defaults to
# .device/mantissa-gpu.tar.gz (ignored by git). cuBLAS, cuDNN and NCCL are not packed: they
# are large, and the server has them (its CUDA toolkit or PyTorch's nvidia-* packages).
# PACK_LEVEL: gzip's level (default 6; 1 packs fastest, for tests). gzip, not xz: every Debian
# system has it.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
die() { printf 'pack_prebuilt: %s\n' "$*" >&2; exit 1; }
[[ -d ${1:-$root/build} ]] || die "${1:-$root/build} is not a build directory (build with: cmake --preset default && cmake --build --preset default)"
build=$(cd "${1:-$root/build}" && pwd)
tarball=${2:-$root/.device/mantissa-gpu.tar.gz}

plugin=$build/lib/mantissa/plugins/libmantissa-cuda.so
[[ -f $plugin ]] || die "$build has no CUDA backend plugin ($plugin): configure with MANTISSA_WITH_CUDA=ON"
grep -q '^CMAKE_CUDA_ARCHITECTURES:.*90' "$build/CMakeCache.txt" ||
    echo "warning: $build's CMAKE_CUDA_ARCHITECTURES has no sm_90; Hopper would JIT from PTX or fail" >&2

# The GPU tests are what ctest -L gpu runs; mpiexec and other programs outside the build are not ours.
mapfile -t tests < <(ctest --test-dir "$build" -N -V -L gpu 2>/dev/null |
    sed -n 's/^.*Test command: \([^ ]*\).*$/\1/p' | grep "^$build/" | sort -u)
((${#tests[@]})) || die "ctest -L gpu lists no test programs in $build"
programs=("${tests[@]}" "$build/bin/engine_throughput" "$build/bin/nccl_all_reduce_bench")
# The CPU kernels' own tests (run_prebuilt.sh's cpu stage): the run-time dispatch (native bf16
# on avx512_bf16 or AMX, the AVX-512 conversions, emulation elsewhere) on the server's CPU,
# which may be of another kind than this one. None of them reads a dataset.
cpu_tests=()
for name in cpu_kernels_test cpu_ops_test cpu_thread_count_test numerics_test widened_operands_test \
    linear_rounding_test minifloat_test fast_quantizer_test fast_operand_quantizer_test block_scaled_gemm_test \
    gemm_recipe_test transformer_ops_test step_ops_test; do
    if [[ -x $build/bin/$name ]]; then
        cpu_tests+=("$build/bin/$name")
    else
        echo "warning: $build/bin/$name is not built; the cpu stage runs without it" >&2
    fi
done

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
pack=$stage/mantissa-gpu
mkdir -p "$pack/bin" "$pack/cpu-bin" "$pack/lib/mantissa/plugins" "$pack/deps" "$pack/compat"
cp "${programs[@]}" "$pack/bin/"
((${#cpu_tests[@]} == 0)) || cp "${cpu_tests[@]}" "$pack/cpu-bin/"
cp "$plugin" "$pack/lib/mantissa/plugins/"

# oneDNN is opened at run time (engine/backend/cpu/onednn_library.h), so ldd does not list it:
# the library the build compiled against goes along (its package config lies in
# <libdir>/cmake/dnnl), and what it links is gathered with the rest below.
dnnl_dir=$(sed -n 's/^dnnl_DIR:PATH=//p' "$build/CMakeCache.txt")
dnnl=$(ls "$dnnl_dir"/../../libdnnl.so.[0-9] 2>/dev/null | head -n 1)
[[ -n $dnnl ]] || { echo "pack_prebuilt: no libdnnl.so.N beside $dnnl_dir (dnnl_DIR of $build)" >&2; exit 1; }
cp -L "$dnnl" "$pack/deps/"

# Libraries outside the C runtime and the CUDA libraries: the server may lack them. The C++
# runtime goes to compat/, used there only where the server's is older than ours.
while IFS= read -r lib; do
    case $(basename "$lib") in
    libc.so* | libm.so* | libpthread.so* | libdl.so* | librt.so* | ld-linux*) ;;
    libstdc++.so* | libgcc_s.so*) cp -L "$lib" "$pack/compat/" ;;
    libcud* | libcublas* | libnccl*) ;; # cudart is linked statically; these come from the server
    *) cp -L "$lib" "$pack/deps/" ;;
    esac
done < <(ldd "${programs[@]}" "${cpu_tests[@]}" "$plugin" "$dnnl" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u)

{
    echo "built on $(uname -n) from $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')"
    grep -E '^CMAKE_CUDA_ARCHITECTURES:|^MANTISSA_CUDNN_LIBRARY:' "$build/CMakeCache.txt"
    [[ -f /usr/local/cuda/include/cudnn_version.h ]] &&
        awk '/define CUDNN_(MAJOR|MINOR|PATCHLEVEL) /{ v = v (v ? "." : "") $3 } END { print "cuDNN headers " v }' \
            /usr/local/cuda/include/cudnn_version.h
} >"$pack/MANIFEST"
mkdir -p "$(dirname "$tarball")"
tar -C "$stage" -cf - mantissa-gpu | gzip "-${PACK_LEVEL:-6}" >"$tarball"
shopt -s nullglob
libraries=("$pack"/deps/*.so* "$pack"/compat/*.so*)
printf 'pack_prebuilt: %s (%s): %d programs, %d CPU tests, %d libraries\n' "$tarball" \
    "$(du -h "$tarball" | cut -f1)" "${#programs[@]}" "${#cpu_tests[@]}" "${#libraries[@]}"
