#!/usr/bin/env bash
# On a GPU server: the GPU check from a tarball bench/gpu/pack_prebuilt.sh made on a build
# machine, so that the server's short job time goes to the GPU and not to compiling.
#
#   bench/gpu/run_prebuilt.sh TARBALL [--stage probe|tests|cpu|bench|peer|recipes|sanitizer|profile]...
#
# Stages (all by default, in this order):
#   probe      the GPU, driver, CPU, and where cuBLAS, cuDNN and NCCL were found
#   tests      every GPU test program (what ctest -L gpu runs), sharded and run side by side
#   cpu        the CPU kernels' own tests, on this server's CPU (another kind than the build's?)
#   bench      engine_throughput on the GPU (mlp, cnn, wide-mlp, resnet-small in fp32,
#              mixed-fp16, mixed-bf16), then op by op (graphs off), then NCCL's all-reduce timed
#   peer       PyTorch eager (autocast + GradScaler) on the same workloads
#   recipes    the sub-16-bit recipes against mixed-bf16 on the GPU
#   sanitizer  compute-sanitizer memcheck and racecheck on parity tests (SANITIZE=races: only
#              racecheck)
#   profile    Nsight Compute's time per kernel for the rows that miss their targets
# Each stage writes one log to REPORT_DIR and prints a summary; every command runs under a
# time limit (STAGE_TIMEOUT seconds, default 180; SANITIZER_TIMEOUT, default 60, for each
# sanitizer run), so a job cut off still has its logs.
#
# Environment: REPORT_DIR (default /tmp/mantissa-gpu-report), UNPACK_DIR (default
# /tmp/mantissa-gpu), BENCH_STEPS (300: 60 steps of mlp were 12 ms on an H100, and one
# hiccup halved a row), BENCH_WARMUP (10), PYTHON (python3), TEST_SHARDS (6:
# shards of the slowest program, the CPU-vs-GPU training parity).
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
die() { printf 'run_prebuilt: %s\n' "$*" >&2; exit 1; }
say() { printf '\n== [%4ds] %s\n' "$SECONDS" "$*"; }
(($#)) || die "usage: run_prebuilt.sh TARBALL [--stage probe|tests|cpu|bench|peer|recipes|sanitizer|profile]..."
tarball=$1
shift
[[ -f $tarball ]] || die "$tarball is not a file (make it with bench/gpu/pack_prebuilt.sh)"
stages=()
while (($#)); do
    [[ $1 == --stage && $# -ge 2 ]] || die "unknown argument $1"
    IFS=',' read -r -a more <<<"$2"
    stages+=("${more[@]}")
    shift 2
done
known=(probe tests cpu bench peer recipes sanitizer profile)
((${#stages[@]})) || stages=("${known[@]}")
for stage in "${stages[@]}"; do
    [[ " ${known[*]} " == *" $stage "* ]] || die "unknown stage '$stage'; the stages are ${known[*]}"
done
wants() { [[ " ${stages[*]} " == *" $1 "* ]]; }

report=${REPORT_DIR:-/tmp/mantissa-gpu-report}
unpack=${UNPACK_DIR:-/tmp/mantissa-gpu}
limit=${STAGE_TIMEOUT:-180}
python=${PYTHON:-python3}
mkdir -p "$report" "$unpack"
tar -C "$unpack" -xzf "$tarball" || die "cannot unpack $tarball"
pack=$unpack/mantissa-gpu
bin=$pack/bin
cat "$pack/MANIFEST"

# cuBLAS, cuDNN and NCCL: PyTorch's nvidia-* packages first (the PyTorch peer runs on them, and
# an H100 server's system cuDNN was older than both its PyTorch's and our headers'), then the
# CUDA toolkit's folders. The peer runs with the caller's LD_LIBRARY_PATH: PyTorch refuses a
# cuDNN other than its own.
original_library_path=${LD_LIBRARY_PATH:-}
dirs=()
while IFS= read -r site; do
    for d in "$site"/nvidia/*/lib; do [[ -d $d ]] && dirs+=("$d"); done
done < <("$python" -c 'import site; print("\n".join(site.getsitepackages()))' 2>/dev/null)
dirs+=(/usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib /usr/lib/x86_64-linux-gnu)
found=()
for lib in libcublas.so.13 libcublasLt.so.13 libcudnn.so.9 libnccl.so.2; do
    where=""
    for d in "${dirs[@]}"; do
        if [[ -e $d/$lib ]]; then where=$d; break; fi
    done
    if [[ -n $where ]]; then
        echo "$lib: $where"
        [[ " ${found[*]} " == *" $where "* ]] || found+=("$where")
    else
        echo "$lib: NOT FOUND (looked in ${dirs[*]})"
    fi
done
LD_LIBRARY_PATH="$pack/deps$(printf ':%s' "${found[@]}")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH
# The build machine's C++ runtime only where this server's is older.
if ldd "$bin/engine_throughput" "$pack/lib/mantissa/plugins/libmantissa-cuda.so" 2>&1 | grep -q 'GLIBCXX.*not found\|CXXABI.*not found'; then
    echo "this server's C++ runtime is older than the build machine's: using the packed one"
    export LD_LIBRARY_PATH="$pack/compat:$LD_LIBRARY_PATH"
fi
missing=$(ldd "$bin"/* "$pack/lib/mantissa/plugins/libmantissa-cuda.so" 2>&1 | grep 'not found' | sort -u)
[[ -z $missing ]] || printf 'missing libraries:\n%s\n' "$missing"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
status=0

# --- probe ------------------------------------------------------------------------------------
if wants probe; then
    say "probe"
    {
        nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv 2>&1
        lscpu | grep -E '^(Model name|CPU\(s\))'
        echo "CPU flags: $(grep -m1 -o -w -E 'avx2|fma|f16c|avx512[a-z0-9_]*|amx[a-z0-9_]*' /proc/cpuinfo | sort -u | tr '\n' ' ')"
        LD_LIBRARY_PATH=$original_library_path "$python" -c 'import torch; print("PyTorch", torch.__version__, "CUDA", torch.version.cuda, "cuDNN", torch.backends.cudnn.version())' 2>&1
        for f in "${found[@]}"; do
            find "$f/" -maxdepth 1 -regextype egrep -regex '.*/lib(cudnn|cublas|nccl)[^_/]*\.so\.[0-9].*' -printf '%f\n'
        done | sort -u
    } 2>&1 | tee "$report/probe.log"
fi

# --- tests ------------------------------------------------------------------------------------
# run_suite NAME PROGRAM...: the gtest programs side by side, sharded where long, each under the
# time limit; their output to REPORT_DIR/NAME.log, a line per shard (and the failures, the
# slowest tests and the skip reasons) to NAME-summary.txt. Sets status on any failure.
run_suite() {
    local name=$1
    shift
    local logs shards=${TEST_SHARDS:-6} pids=() program base n threads i
    logs=$(mktemp -d)
    for program in "$@"; do
        base=$(basename "$program")
        n=1
        [[ $base == cuda_training_parity_test ]] && n=$shards
        [[ $base == cuda_parity_test || $base == cuda_transformer_parity_test ]] && n=2
        # Each shard trains on the CPU too: the training shards share the cores between them
        # (the CPU backend's automatic thread count reads OMP_NUM_THREADS), the short ones take 2.
        threads=2
        [[ $base == cuda_training_parity_test ]] && threads=$(($(nproc) / shards > 2 ? $(nproc) / shards : 2))
        for ((i = 0; i < n; ++i)); do
            GTEST_TOTAL_SHARDS=$n GTEST_SHARD_INDEX=$i OMP_NUM_THREADS=$threads \
                timeout -k 5 "$limit" "$program" >"$logs/$base.$i.log" 2>&1 &
            pids+=($!)
        done
    done
    for p in "${pids[@]}"; do wait "$p" || true; done
    local summary=$report/$name-summary.txt
    : >"$report/$name.log"
    for log in "$logs"/*.log; do
        { echo "##### $(basename "$log")"; cat "$log"; } >>"$report/$name.log"
        passed=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log")
        skipped=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log")
        failed=$(grep -c '^\[  FAILED  \] .*(' "$log")
        done_line=$(grep -c '^\[==========\] .* ran\.' "$log")
        printf '%-40s passed %3s  skipped %3s  failed %3s%s\n' "$(basename "$log" .log)" "${passed:-0}" \
            "${skipped:-0}" "$failed" "$([[ $done_line == 0 ]] && echo '  DID NOT FINISH (time limit or crash)')"
    done | tee "$summary"
    grep -q 'DID NOT FINISH\|failed *[1-9]' "$summary" && status=1
    grep -h '^\[  FAILED  \] .*(' "$logs"/*.log | sort -u | tee -a "$summary"
    echo "slowest tests:" | tee -a "$summary"
    grep -h '^\[       OK \] .*([0-9]* ms)$' "$logs"/*.log | sed -E 's/^\[       OK \] (.*) \(([0-9]+) ms\)$/\2 ms  \1/' |
        sort -rn | head -n 12 | tee -a "$summary"
    skip_reason=$(grep -h -A1 'Skipped$' "$logs"/*.log | grep -v 'Skipped$\|^--' | sort | uniq -c | sort -rn | head -n 5)
    [[ -z $skip_reason ]] || printf 'skip reasons:\n%s\n' "$skip_reason" | tee -a "$summary"
    rm -rf "$logs"
}

if wants tests; then
    say "GPU tests: every gpu-labelled program, sharded, side by side (limit ${limit}s each)"
    run_suite tests "$bin"/*_test
fi

# --- cpu: the CPU kernels' tests on this server's CPU ------------------------------------------
# A GPU server's CPU may be of another kind than the build machine's (an H100 server had an
# Intel Xeon with AMX and avx512_fp16): the CPU backend's run-time dispatch is tested there too.
if wants cpu; then
    say "CPU kernel tests on this server's CPU (limit ${limit}s each)"
    shopt -s nullglob
    cpu_tests=("$pack"/cpu-bin/*_test)
    shopt -u nullglob
    if ((${#cpu_tests[@]})); then
        run_suite cpu "${cpu_tests[@]}"
    else
        echo "the tarball has no CPU tests (cpu-bin/): packed by an older pack_prebuilt.sh"
    fi
fi

# --- bench ------------------------------------------------------------------------------------
steps=${BENCH_STEPS:-300}
warmup=${BENCH_WARMUP:-10}
throughput() { timeout -k 5 "$limit" "$bin/engine_throughput" --device cuda --steps "$steps" --warmup "$warmup" "$@"; }
if wants bench; then
    say "Mantissa training throughput on the GPU"
    throughput --models mlp,cnn,wide-mlp,resnet-small --modes fp32,mixed-fp16,mixed-bf16 2>&1 | tee "$report/bench.log"
    ((PIPESTATUS[0] == 0)) || status=1
    say "the same op by op (graphs off: every kernel launched from the host)"
    throughput --models mlp,cnn,wide-mlp,resnet-small --modes fp32,mixed-fp16,mixed-bf16 --graphs off 2>&1 |
        tee -a "$report/bench.log"
    say "NCCL all-reduce, one rank"
    timeout -k 5 60 "$bin/nccl_all_reduce_bench" 20 2>&1 | tee -a "$report/bench.log"
fi

# --- recipes ----------------------------------------------------------------------------------
if wants recipes; then
    say "sub-16-bit recipes on the GPU, time against mixed-bf16"
    throughput --models mlp,wide-mlp,cnn --ratio-to mixed-bf16 \
        --modes mixed-bf16,fp8-hybrid,fp8-e4m3,fp8-delayed,fp8-block,mxfp8,mxfp6,mxfp4,nvfp4 2>&1 | tee "$report/recipes.log"
    ((PIPESTATUS[0] == 0)) || status=1
fi

# --- PyTorch peer -----------------------------------------------------------------------------
if wants peer; then
    say "PyTorch peer ($python)"
    LD_LIBRARY_PATH=$original_library_path PYTHONUNBUFFERED=1 timeout -k 5 "$limit" "$python" "$root/bench/peers/torch_gpu_throughput.py" \
        --models mlp,cnn,wide-mlp,resnet-small --modes fp32,mixed-fp16,mixed-bf16 --steps "$steps" --warmup "$warmup" 2>&1 |
        tee "$report/peer.log"
fi

# --- compute-sanitizer ------------------------------------------------------------------------
if wants sanitizer; then
    sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
    say "compute-sanitizer ($sanitizer)"
    : >"$report/sanitizer.log"
    # sanitize TOOL PROGRAM GTEST_FILTER [SANITIZER OPTION]...
    sanitize() {
        local tool=$1 program=$2 filter=$3
        shift 3
        echo "### $tool $* $program $filter" | tee -a "$report/sanitizer.log"
        OMP_NUM_THREADS=8 timeout -k 5 "${SANITIZER_TIMEOUT:-60}" "$sanitizer" --tool "$tool" --error-exitcode 3 "$@" \
            "$bin/$program" --gtest_brief=1 "--gtest_filter=$filter" >>"$report/sanitizer.log" 2>&1
        local rc=$?
        tail -n 3 "$report/sanitizer.log"
        echo "exit status $rc" | tee -a "$report/sanitizer.log"
        ((rc == 0)) || status=1
    }
    case ${SANITIZE:-all} in
    all)
        sanitize memcheck cuda_training_parity_test 'Presets/*mlp_mixed_fp16:Presets/*cnn_mixed_bf16:Modes/*:Recipes/*mlp_mxfp4'
        sanitize memcheck cuda_parity_test '*'
        sanitize memcheck cuda_transformer_parity_test '*'
        ;&
    races)
        sanitize racecheck cuda_parity_test '*'
        sanitize racecheck cuda_transformer_parity_test '*'
        ;;
    esac
    # Whose kernels the hazards are in: racecheck reads cuDNN's warp-specialised Hopper kernels,
    # which synchronise through barriers it does not follow, as racing. (Restricting it to our
    # kernels with --kernel-name kns=mantissa broke the sanitizer itself on an H100.)
    echo "kernels with hazards:" | tee -a "$report/sanitizer.log"
    sed -n 's/^=========     and [A-Za-z]* access at \([^ +]*\).*/\1/p; s/^========= Error: Race reported between [A-Za-z]* access at \([^ +]*\).*/\1/p' \
        "$report/sanitizer.log" | sort | uniq -c | tee -a "$report/sanitizer.log"
fi

# --- profile ----------------------------------------------------------------------------------
# Where a step's GPU time goes, kernel by kernel (Nsight Compute), for the rows that miss
# their targets; PROFILE="MODEL:MODE ..." (default: cnn fp32 and mixed-bf16, wide-mlp fp32).
if wants profile; then
    ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
    : >"$report/profile.log"
    for row in ${PROFILE:-cnn:fp32 cnn:mixed-bf16 wide-mlp:fp32}; do
        say "kernel times of ${row%%:*} ${row#*:} ($ncu)"
        timeout -k 5 "${PROFILE_TIMEOUT:-60}" "$ncu" --metrics gpu__time_duration.sum --print-summary per-kernel \
            "$bin/engine_throughput" --device cuda --models "${row%%:*}" --modes "${row#*:}" --steps 3 --warmup 1 \
            >"$report/profile-row.log" 2>&1
        echo "exit status $? for $row" >>"$report/profile-row.log"
        { echo "##### $row"; cat "$report/profile-row.log"; } >>"$report/profile.log"
        rm -f "$report/profile-row.log"
        tail -n 2 "$report/profile.log"
    done
fi

say "logs in $report"
exit "$status"
