#!/usr/bin/env bash
# On a GPU server: builds the engine with the CUDA backend (the engine-only preset: no Qt),
# runs the GPU test suite (ctest -L gpu), checks and times the NCCL all-reduce of data-parallel
# runs, benchmarks training throughput on the GPU and prints one table, then runs the PyTorch
# peer where PyTorch is importable.
#
#   bench/gpu/run_on_device.sh [--stage build|tests|nccl|bench|peer]...
#
# One remote GPU job may run 10 minutes: run the stages one per job where the whole does not
# fit; a later stage reuses the build the build stage left on the same machine. Every stage
# prints as it goes and writes its log under REPORT_DIR, so a job cut off still returns them.
#
# Needs a C++20 compiler, CMake >= 3.25, ninja and the CUDA toolkit. Build dependencies the
# system lacks (oneDNN, GoogleTest, nlohmann-json, zlib, cuDNN) may come from Debian
# packages unpacked without installing them:  for p in *.deb; do dpkg -x "$p" "$MANTISSA_DEPS"; done
#
# Environment (all optional):
#   MANTISSA_DEPS        folder of unpacked .debs; its usr/ is searched like /usr (default:
#                        .deps/root, where scripts/gpu-deps puts them)
#   CUDNN_ROOT           cuDNN prefix (include/, lib/); looked for in MANTISSA_DEPS when unset
#   CUDA_ARCHITECTURES   CMAKE_CUDA_ARCHITECTURES (default: native, the GPUs of this machine)
#   DEVICE               device to benchmark (default: cuda)
#   JOBS                 build jobs (default: all cores); TEST_JOBS: ctest jobs (default: 4)
#   BENCH_STEPS          timed steps per row (default: 60); BENCH_WARMUP (default: 10)
#   NCCL_ROUNDS          all-reduces timed per type by the nccl stage (default: 20)
#   PYTHON               interpreter for the PyTorch peer (default: python3)
#   REPORT_DIR           where logs and tables go (default: build-engine/gpu-report)
#   SKIP_TESTS=1, SKIP_NCCL=1, SKIP_BENCH=1, SKIP_PEER=1   leave out a stage
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
build="$root/build-engine" # the engine-only preset's binaryDir
report=${REPORT_DIR:-$build/gpu-report}
workloads=mlp,cnn,wide-mlp,resnet-small
modes=fp32,mixed-fp16,mixed-bf16

say() { printf '\n== [%4ds] %s\n' "$SECONDS" "$*"; }
die() { printf 'run_on_device: %s\n' "$*" >&2; exit 1; }
need() { command -v "$1" >/dev/null 2>&1 || die "$1 not found on PATH; $2"; }

stages=()
while (($#)); do
    case $1 in
    --stage)
        [[ $# -ge 2 ]] || die "--stage needs one of build, tests, nccl, bench, peer"
        IFS=',' read -r -a more <<<"$2"
        stages+=("${more[@]}")
        shift 2
        ;;
    *) die "unknown argument $1 (usage: run_on_device.sh [--stage build|tests|nccl|bench|peer]...)" ;;
    esac
done
((${#stages[@]})) || stages=(build tests nccl bench peer)
for stage in "${stages[@]}"; do
    [[ $stage =~ ^(build|tests|nccl|bench|peer)$ ]] || die "unknown stage $stage: build, tests, nccl, bench or peer"
done
wants() { [[ " ${stages[*]} " == *" $1 "* ]]; }

# --- tools ----------------------------------------------------------------------------------
need cmake "install CMake >= 3.25"
need ninja "install ninja (the presets use the Ninja generator)"
if [[ -z ${CUDACXX:-} ]] && ! command -v nvcc >/dev/null 2>&1; then
    [[ -x /usr/local/cuda/bin/nvcc ]] || die "no nvcc on PATH or in /usr/local/cuda/bin; install the CUDA toolkit or set CUDACXX"
    export PATH="/usr/local/cuda/bin:$PATH"
fi
cmake_version=$(cmake --version | sed -n 's/^cmake version \([0-9]*\.[0-9]*\).*/\1/p')
[[ $(printf '%s\n' 3.25 "$cmake_version" | sort -V | head -n1) == 3.25 ]] ||
    die "CMake $cmake_version is too old; CMakePresets.json needs 3.25"
arch=$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)

# --- dependencies ---------------------------------------------------------------------------
prefixes=()
library_dirs=()
cmake_args=(-DMANTISSA_WITH_CUDA=ON "-DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHITECTURES:-native}")

# scripts/gpu-deps leaves its unpacked packages in .deps/root: the default when carried here.
if [[ -z ${MANTISSA_DEPS:-} && -d $root/.deps/root/usr ]]; then
    MANTISSA_DEPS=$root/.deps/root
fi
if [[ -n ${MANTISSA_DEPS:-} ]]; then
    [[ -d $MANTISSA_DEPS/usr ]] || die "MANTISSA_DEPS=$MANTISSA_DEPS holds no usr/ (unpack the .debs with dpkg -x into it)"
    deps=$(cd "$MANTISSA_DEPS" && pwd)
    prefixes+=("$deps/usr")
    library_dirs+=("$deps/usr/lib/$arch" "$deps/usr/lib")
fi

# cuDNN from .debs: its headers and libraries carry versioned names (cudnn_v9.h, libcudnn.so.9)
# that the alternatives system would link to cudnn.h and libcudnn.so; make those links in a
# shim prefix instead.
if [[ -z ${CUDNN_ROOT:-} && -n ${MANTISSA_DEPS:-} ]]; then
    header=$(find "$deps" -name 'cudnn.h' -o -name 'cudnn_v[0-9]*.h' 2>/dev/null | head -n1)
    if [[ -n $header ]]; then
        shim="$build/cudnn-shim"
        rm -rf "$shim" && mkdir -p "$shim/include" "$shim/lib"
        for h in "$(dirname "$header")"/cudnn*.h; do
            ln -sf "$h" "$shim/include/$(basename "$h" | sed 's/_v[0-9]*\.h$/.h/')"
        done
        while IFS= read -r l; do
            ln -sf "$l" "$shim/lib/$(basename "$l")"
            ln -sf "$l" "$shim/lib/$(basename "$l" | sed 's/\.so\..*$/.so/')"
            library_dirs+=("$(dirname "$l")")
        done < <(find "$deps" -name 'libcudnn*.so*' 2>/dev/null)
        CUDNN_ROOT=$shim
    fi
fi
if [[ -n ${CUDNN_ROOT:-} ]]; then
    [[ -d $CUDNN_ROOT ]] || die "CUDNN_ROOT=$CUDNN_ROOT is not a directory"
    export CUDNN_ROOT
    prefixes+=("$CUDNN_ROOT")
    library_dirs+=("$CUDNN_ROOT/lib" "$CUDNN_ROOT/lib64")
    cmake_args+=("-DCUDNN_ROOT=$CUDNN_ROOT")
fi

if ((${#prefixes[@]})); then
    cmake_args+=("-DCMAKE_PREFIX_PATH=$(IFS=';'; echo "${prefixes[*]}")")
fi
if ((${#library_dirs[@]})); then
    # cuDNN opens its engine libraries at run time, and tests run from the build tree.
    LD_LIBRARY_PATH="$(IFS=':'; echo "${library_dirs[*]}")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export LD_LIBRARY_PATH
fi

# --- configure and build --------------------------------------------------------------------
mkdir -p "$report"
if ! wants build; then
    [[ -x $build/bin/engine_throughput ]] || die "no build in $build: run --stage build first (on the same machine)"
else
    say "configuring (engine-only preset, MANTISSA_WITH_CUDA=ON)"
    printf '   %s\n' "${cmake_args[@]}"
    cmake --preset engine-only "${cmake_args[@]}" 2>&1 | tee "$report/configure.log" ||
        die "configuring failed (see $report/configure.log); MANTISSA_DEPS and CUDNN_ROOT say where dependencies are"
    say "building"
    cmake --build "$build" -j "${JOBS:-$(nproc)}" 2>&1 | tee "$report/build.log" ||
        die "the build failed (see $report/build.log)"
    if grep -q 'warning:' "$report/build.log"; then
        echo "note: the build printed warnings (see $report/build.log)"
    fi
    # Where the build's time went: the slowest steps from ninja's log (start and end in ms).
    if [[ -f $build/.ninja_log ]]; then
        awk -F'\t' 'NR > 1 { printf "%7.1f s  %s\n", ($2 - $1) / 1000, $4 }' "$build/.ninja_log" |
            sort -rn | head -n 12 | tee "$report/build-slowest.txt"
    fi
fi

status=0

# --- GPU tests ------------------------------------------------------------------------------
if wants tests && [[ ${SKIP_TESTS:-0} != 1 ]]; then
    say "GPU tests (ctest -L gpu)"
    set +e
    # Each training-parity test trains on the CPU too: with -j 4 and every process taking all
    # cores for OpenMP, they crawled (390 s for one mlp case on a 16-core H100 server).
    test_jobs=${TEST_JOBS:-4}
    OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(( ($(nproc) + test_jobs - 1) / test_jobs ))} \
        ctest --test-dir "$build" -L gpu --output-on-failure -j "$test_jobs" --timeout 240 2>&1 | tee "$report/ctest-gpu.log"
    tests_status=${PIPESTATUS[0]}
    set -e
    skipped=$(grep -c '(Skipped)' "$report/ctest-gpu.log" || true)
    if ((skipped > 0)); then
        # The reason is the same for every test: show it once.
        reason=$("$build/bin/cuda_parity_test" --gtest_filter='*uploadDownload_fp32' 2>&1 | grep -A1 'Skipped$' | tail -n1 || true)
        echo "warning: $skipped GPU tests were skipped: ${reason:-see $report/ctest-gpu.log}"
    fi
    # The slowest tests, from ctest's own timings.
    grep -E 'Test +#[0-9]+:' "$report/ctest-gpu.log" | sed -E 's/.*Test +#[0-9]+: ([^ ]+) .* ([0-9.]+) sec$/\2 s  \1/' |
        sort -rn | head -n 10 >"$report/tests-slowest.txt" || true
    if ((tests_status != 0)); then
        echo "GPU tests FAILED (ctest exit status $tests_status); the benchmarks still run"
        status=1
    fi
fi

# --- NCCL all-reduce ------------------------------------------------------------------------
# The data-parallel all-reduce on the device (docs/distributed.md, NCCL): its bits against the
# host path's (one rank, and two under mpirun where the machine has two GPUs; each skips with
# the reason otherwise), then one rank's all-reduce of the mlp preset's gradients timed.
if wants nccl && [[ ${SKIP_NCCL:-0} != 1 ]]; then
    say "NCCL all-reduce: its tests (one rank; two under mpirun where built) and one rank timed"
    {
        grep -E '^-- (NCCL|MPI):' "$report/configure.log" 2>/dev/null || true
        command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L || echo "nvidia-smi not found"
    } 2>&1 | tee "$report/nccl-setup.txt"
    set +e
    ctest --test-dir "$build" -R 'NcclAllReduce|NcclDataParallel|nccl_all_reduce' --output-on-failure --timeout 240 2>&1 | tee "$report/nccl-tests.log"
    nccl_status=${PIPESTATUS[0]}
    if grep -q '(Skipped)' "$report/nccl-tests.log"; then
        reason=$("$build/bin/nccl_all_reduce_test" --gtest_filter='NcclDataParallel*' 2>&1 | grep -A1 'Skipped$' | tail -n1 || true)
        echo "warning: NCCL tests were skipped: ${reason:-see $report/nccl-tests.log}" | tee -a "$report/nccl-tests.log"
    fi
    "$build/bin/nccl_all_reduce_bench" "${NCCL_ROUNDS:-20}" 2>&1 | tee "$report/nccl-bench.md"
    nccl_bench_status=${PIPESTATUS[0]}
    set -e
    if ((nccl_status != 0 || nccl_bench_status != 0)); then
        echo "NCCL all-reduce FAILED (ctest $nccl_status, bench $nccl_bench_status; see $report/nccl-tests.log)"
        status=1
    fi
fi

# --- throughput -----------------------------------------------------------------------------
# engine_throughput prints | model | batch | precision | samples/s | time vs fp32 | peak memory (MiB) | TFLOP/s | step |;
# the table here keeps the columns the PyTorch peer prints too, found by their headers.
summarise() {
    awk -F'|' '
        function trim(s) { gsub(/^[ \t]+|[ \t]+$/, "", s); return s }
        /^\| model \|/ {
            for (i = 2; i < NF; ++i) col[trim($i)] = i
            print "| workload | precision | samples/s | achieved TFLOP/s | peak memory (MiB) |"
            print "| --- | --- | --- | --- | --- |"
            next
        }
        /^\| ---/ { next }
        /^\|/ && ("model" in col) {
            printf "| %s | %s | %s | %s | %s |\n", trim($col["model"]), trim($col["precision"]),
                trim($col["samples/s"]), trim($col["TFLOP/s"]), trim($col["peak memory (MiB)"])
        }' "$1"
}

if wants bench && [[ ${SKIP_BENCH:-0} != 1 ]]; then
    say "Mantissa training throughput on ${DEVICE:-cuda}"
    set +e
    "$build/bin/engine_throughput" --device "${DEVICE:-cuda}" --models "$workloads" --modes "$modes" \
        --steps "${BENCH_STEPS:-60}" --warmup "${BENCH_WARMUP:-10}" 2>&1 | tee "$report/engine_throughput.txt"
    bench_status=${PIPESTATUS[0]}
    set -e
    if ((bench_status != 0)); then
        echo "engine_throughput FAILED (exit status $bench_status)"
        status=1
    else
        echo
        sed -n 's/^backend: /Mantissa, /p' "$report/engine_throughput.txt"
        summarise "$report/engine_throughput.txt" | tee "$report/mantissa-table.md"
    fi
    # The same steps op by op: what the CUDA graph saves in launch overhead.
    say "Mantissa with training.graphs off (every kernel launched from the host)"
    "$build/bin/engine_throughput" --device "${DEVICE:-cuda}" --models "$workloads" --modes "$modes" --graphs off \
        --steps "${BENCH_STEPS:-60}" --warmup "${BENCH_WARMUP:-10}" >"$report/engine_throughput-op-by-op.txt" 2>&1 &&
        summarise "$report/engine_throughput-op-by-op.txt" | tee "$report/mantissa-op-by-op-table.md" ||
        echo "engine_throughput --graphs off failed (see $report/engine_throughput-op-by-op.txt)"
fi

# --- PyTorch peer ---------------------------------------------------------------------------
python=${PYTHON:-python3}
if wants peer && [[ ${SKIP_PEER:-0} != 1 ]]; then
    if command -v "$python" >/dev/null 2>&1 && "$python" -c "import torch" >/dev/null 2>&1; then
        say "PyTorch peer ($python)"
        "$python" bench/peers/torch_gpu_throughput.py --models "$workloads" --modes "$modes" \
            --steps "${BENCH_STEPS:-60}" --warmup "${BENCH_WARMUP:-10}" 2>&1 | tee "$report/torch-table.md" ||
            echo "the PyTorch peer failed (see above); Mantissa's figures stand on their own"
    else
        say "PyTorch peer skipped: \"$python -c 'import torch'\" fails"
    fi
fi

say "logs and tables in $report"
exit "$status"
