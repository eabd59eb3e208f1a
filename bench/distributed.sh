#!/usr/bin/env bash
# Data-parallel scaling on this machine: 1 rank x 1 thread against 2 ranks x 1 thread, same
# global batch, on the mlp and cnn presets; prints samples/s, the scaling efficiency
# (2-rank throughput / (2 x 1-rank throughput)) and each rank's all-reduce share of its step
# time (from the run's finished event). Also the fp16 all-reduce's overflow and flush counts
# for sum-then-divide against divide-then-sum. docs/distributed.md quotes its output.
#   bench/distributed.sh [build/bin/mantissa-cli] [steps]
set -euo pipefail
cli=${1:-build/bin/mantissa-cli}
steps=${2:-40}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpi=(mpirun --oversubscribe -np 2)
if [[ $(id -u) -eq 0 ]]; then mpi=(mpirun --allow-run-as-root --oversubscribe -np 2); fi
export OMP_WAIT_POLICY=passive # two processes on two cores must not spin against each other

json_field() { sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p" | tail -1; }

run() { # name, ranks, extra options...
  local name=$1 ranks=$2
  shift 2
  local db="$work/$name.db" out
  if [[ $ranks == 1 ]]; then
    out=$("$cli" train --db "$db" --threads 1 --max-steps "$steps" "$@" 2>/dev/null)
  else
    out=$("${mpi[@]}" "$cli" train --db "$db" --threads 1 --max-steps "$steps" "$@" 2>/dev/null)
  fi
  echo "$out" | json_field samples_per_s
}

finished_message() { # db
  "$cli" show 1 --db "$1" 2>/dev/null | sed -n 's/.*finished *finished; //p'
}

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $steps steps each"
for preset in mlp cnn; do
  one=$(run "$preset-1" 1 --preset "$preset")
  two=$(run "$preset-2" 2 --preset "$preset")
  efficiency=$(awk -v a="$one" -v b="$two" 'BEGIN { printf "%.2f", b / (2 * a) }')
  echo "$preset: 1 rank $one samples/s, 2 ranks $two samples/s, scaling efficiency $efficiency"
  echo "  $(finished_message "$work/$preset-2.db")"
done
for order in sum-then-divide divide-then-sum; do
  run "fp16-$order" 2 --preset mlp --precision mixed-fp16 --allreduce-dtype compute --reduction "$order" >/dev/null
  echo "mlp mixed-fp16, fp16 all-reduce, $order: $(finished_message "$work/fp16-$order.db")"
done
