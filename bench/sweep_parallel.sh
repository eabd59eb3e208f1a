#!/usr/bin/env bash
# What running a sweep's runs in parallel worker processes buys: the same 16 short runs (mlp,
# fp32 and mixed-fp16, 8 seeds, 60 steps each) with `sweep --jobs 2` (one thread per run) and
# with `--jobs 1` (one run after another, each with every core), each into a fresh database.
# Prints both wall times and their ratio. Usage: bench/sweep_parallel.sh [build/bin/mantissa-cli]
set -euo pipefail
cli=${1:-build/bin/mantissa-cli}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
args=(sweep --preset mlp --precisions fp32,mixed-fp16 --seeds 8 --max-steps 60 --limit-test 2000)

seconds() {
  local start end
  start=$(date +%s.%N)
  "$cli" "${args[@]}" "$@" > /dev/null 2> "$work/log"
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}

one_by_one=$(seconds --jobs 1 --db "$work/one.sqlite")
single_thread=$(seconds --jobs 1 --threads 1 --db "$work/single.sqlite")
parallel=$(seconds --jobs 2 --db "$work/two.sqlite")
threads=$(($(nproc) / 2 > 0 ? $(nproc) / 2 : 1))
printf 'cores: %s\n' "$(nproc)"
printf '16 runs one after another, %s threads each (--jobs 1):  %6.1f s\n' "$(nproc)" "$one_by_one"
printf '16 runs one after another, 1 thread each (--threads 1): %6.1f s\n' "$single_thread"
printf '16 runs two at a time, %s thread(s) each (--jobs 2):     %6.1f s\n' "$threads" "$parallel"
printf 'speed-up of --jobs 2: %.2fx over --jobs 1, %.2fx over --jobs 1 --threads 1\n' \
  "$(echo "$one_by_one / $parallel" | bc -l)" "$(echo "$single_thread / $parallel" | bc -l)"
