#!/usr/bin/env bash
# bench/gpu/pack_prebuilt.sh and run_prebuilt.sh, on this machine (no GPU needed): the tarball
# holds every GPU test program, the CPU kernels' tests, the benchmarks, the plugin and oneDNN;
# run_prebuilt's test stage runs the GPU programs (here they skip, with the reason) and reports
# each shard, its cpu stage runs the CPU tests (they pass); a program that dies mid-test is
# reported as not finished and fails the run; a misspelt stage, a corrupt tarball and a
# missing build directory are refused, naming them.
#
#   prebuilt_scripts_test.sh SOURCE_DIR BUILD_DIR WORK_DIR
set -uo pipefail
source_dir=$1 build=$2 work=$3
fail() { echo "FAIL: $*"; exit 1; }
if [[ ! -f $build/lib/mantissa/plugins/libmantissa-cuda.so ]]; then
    echo "SKIPPED: this build has no CUDA backend plugin"
    exit 0
fi
rm -rf "$work" && mkdir -p "$work"

# --- pack ---
PACK_LEVEL=1 "$source_dir/bench/gpu/pack_prebuilt.sh" "$build" "$work/gpu.tar.gz" >"$work/pack.log" 2>&1 ||
    fail "pack_prebuilt.sh failed: $(cat "$work/pack.log")"
listing=$(tar -tzf "$work/gpu.tar.gz") || fail "the tarball does not list"
expected=$(ctest --test-dir "$build" -N -V -L gpu 2>/dev/null | sed -n "s|^.*Test command: $build/bin/\([^ ]*\).*$|\1|p" | sort -u)
[[ -n $expected ]] || fail "ctest -L gpu lists no test programs"
for program in $expected engine_throughput nccl_all_reduce_bench; do
    grep -qx "mantissa-gpu/bin/$program" <<<"$listing" || fail "the tarball lacks bin/$program"
done
for file in lib/mantissa/plugins/libmantissa-cuda.so deps/libdnnl.so.2 MANIFEST cpu-bin/cpu_kernels_test; do
    grep -qx "mantissa-gpu/$file" <<<"$listing" || fail "the tarball lacks $file"
done
if grep -q '^mantissa-gpu/deps/lib\(cudnn\|cublas\|nccl\)' <<<"$listing"; then
    fail "the tarball carries CUDA libraries the server has"
fi

# --- run: every GPU program skips here, each shard finishes; the CPU tests pass ---
REPORT_DIR=$work/report UNPACK_DIR=$work/unpacked STAGE_TIMEOUT=120 \
    "$source_dir/bench/gpu/run_prebuilt.sh" "$work/gpu.tar.gz" --stage tests,cpu >"$work/run.log" 2>&1
status=$?
summary=$work/report/tests-summary.txt
[[ -f $summary ]] || fail "no tests-summary.txt: $(tail -n 20 "$work/run.log")"
for program in $expected; do
    grep -q "^$program\.0 " "$summary" || fail "the summary has no line for $program"
done
if grep -q 'DID NOT FINISH\|failed *[1-9]' "$summary"; then
    fail "a shard failed or did not finish: $(cat "$summary")"
fi
grep -q 'skip reasons:' "$summary" || fail "the summary gives no skip reason: $(cat "$summary")"
((status == 0)) || fail "run_prebuilt.sh exited $status with every shard finished"
grep -q "cuda_training_parity_test\.5 " "$summary" || fail "the training parity is not in 6 shards"
cpu_summary=$work/report/cpu-summary.txt
grep -q '^cpu_kernels_test\.0 *passed *[1-9]' "$cpu_summary" || fail "the CPU tests did not run: $(cat "$cpu_summary")"
if grep -q 'DID NOT FINISH\|failed *[1-9]' "$cpu_summary"; then
    fail "a CPU test failed or did not finish: $(cat "$cpu_summary")"
fi

# --- bad input: a misspelt stage, a tarball that is not one, a build directory that is not one ---
if "$source_dir/bench/gpu/run_prebuilt.sh" "$work/gpu.tar.gz" --stage test >"$work/bad-stage.log" 2>&1; then
    fail "a misspelt stage ran"
fi
grep -q "unknown stage 'test'" "$work/bad-stage.log" || fail "a misspelt stage is not named: $(cat "$work/bad-stage.log")"
echo "not a tarball" >"$work/bad.tar.gz"
if UNPACK_DIR=$work/unpacked-bad "$source_dir/bench/gpu/run_prebuilt.sh" "$work/bad.tar.gz" >"$work/bad-tar.log" 2>&1; then
    fail "a corrupt tarball ran"
fi
grep -q "cannot unpack $work/bad.tar.gz" "$work/bad-tar.log" || fail "a corrupt tarball is not named: $(cat "$work/bad-tar.log")"
if "$source_dir/bench/gpu/pack_prebuilt.sh" "$work/no-such-build" >"$work/bad-build.log" 2>&1; then
    fail "packing a missing build succeeded"
fi
grep -q "$work/no-such-build is not a build directory" "$work/bad-build.log" ||
    fail "a missing build is not named: $(cat "$work/bad-build.log")"

# --- run: a program that dies mid-test ---
mkdir -p "$work/broken" && tar -C "$work/broken" -xzf "$work/gpu.tar.gz"
rm "$work/broken/mantissa-gpu/bin/"*_test
printf '#!/bin/sh\necho "[ RUN      ] Dies.MidTest"\nkill -SEGV $$\n' >"$work/broken/mantissa-gpu/bin/dies_test"
chmod +x "$work/broken/mantissa-gpu/bin/dies_test"
tar -C "$work/broken" -czf "$work/broken.tar.gz" mantissa-gpu
REPORT_DIR=$work/report-broken UNPACK_DIR=$work/unpacked-broken STAGE_TIMEOUT=60 \
    "$source_dir/bench/gpu/run_prebuilt.sh" "$work/broken.tar.gz" --stage tests >"$work/run-broken.log" 2>&1
status=$?
((status != 0)) || fail "run_prebuilt.sh exited 0 although a program died"
grep -q '^dies_test\.0 .*DID NOT FINISH' "$work/report-broken/tests-summary.txt" ||
    fail "the dead program is not reported: $(cat "$work/report-broken/tests-summary.txt")"
echo "pack_prebuilt and run_prebuilt: $(wc -w <<<"$expected") test programs packed, run and reported"
