#!/usr/bin/env bash
# A one-node Slurm cluster (slurmctld + slurmd, with munge) in a private directory, for
# cli_slurm_test: `slurm_cluster.sh start DIR` brings it up (CTest fixture setup),
# `slurm_cluster.sh stop DIR` cancels its jobs and stops the daemons by their recorded PIDs.
# Nothing under /etc is touched; clients find the cluster through SLURM_CONF=DIR/slurm.conf.
# Where the cluster cannot start (no slurm-wlm or munge, not root, a daemon that fails), start
# writes the reason to DIR/skip-reason and exits 0, and the test skips with that reason.
# The facts behind the settings: /work/shared/notes/slurm-and-mpi-on-one-machine.md.
set -u
action=$1
dir=$2

skip() {
  echo "$*" > "$dir/skip-reason"
  echo "slurm_cluster: $*" >&2
  stop_daemons
  exit 0
}

stop_daemons() {
  # Only with a live controller: scancel and squeue would wait for a dead one.
  if [[ -f "$dir/slurmctld.pid" ]] && kill -0 "$(cat "$dir/slurmctld.pid")" 2> /dev/null &&
    command -v scancel > /dev/null; then
    SLURM_CONF="$dir/slurm.conf" timeout 10 scancel --partition=test > /dev/null 2>&1
    for _ in $(seq 1 50); do
      [[ -z "$(SLURM_CONF="$dir/slurm.conf" timeout 5 squeue -h 2> /dev/null)" ]] && break
      sleep 0.2
    done
  fi
  for daemon in slurmd slurmctld munged; do
    if [[ -f "$dir/$daemon.pid" ]]; then
      pid=$(cat "$dir/$daemon.pid")
      kill "$pid" 2> /dev/null
      # Gone (or a zombie nobody reaps), so that the next start finds its ports free.
      for _ in $(seq 1 50); do
        state=$(ps -o stat= -p "$pid" 2> /dev/null)
        [[ -z $state || $state == Z* ]] && break
        sleep 0.1
      done
      rm -f "$dir/$daemon.pid"
    fi
  done
}

if [[ $action == stop ]]; then
  [[ -d $dir ]] && stop_daemons
  exit 0
fi

stop_daemons 2> /dev/null # a cluster left over by an interrupted run
rm -rf "$dir"
mkdir -p "$dir/state" "$dir/spool"
# munged refuses a directory that others cannot enter.
chmod 755 "$dir"
for tool in slurmctld slurmd munged mungekey sbatch squeue sinfo scancel; do
  command -v "$tool" > /dev/null || skip "$tool is not installed (apt-get install --no-install-recommends slurm-wlm munge)"
done
[[ $(id -u) -eq 0 ]] || skip "a private Slurm cluster needs root here (SlurmUser=root)"

host=$(hostname -s)
cpus=$(nproc)
# Ports from the directory's name, so that two build trees can run the test at once.
base=$((20000 + $(echo -n "$dir" | cksum | cut -d' ' -f1) % 20000))

mungekey --create --keyfile="$dir/munge.key" > /dev/null 2>&1 || skip "mungekey failed"
chmod 600 "$dir/munge.key"
munged -F --key-file="$dir/munge.key" --socket="$dir/munge.sock" --pid-file="$dir/munged.pid.own" \
  --log-file="$dir/munged.log" --seed-file="$dir/munged.seed" < /dev/null > /dev/null 2>&1 &
echo $! > "$dir/munged.pid"

cat > "$dir/slurm.conf" << CONF
ClusterName=mantissa-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$base
SlurmdPort=$((base + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge.sock
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid.own
SlurmdPidFile=$dir/slurmd.pid.own
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/jobcomp.txt
SchedulerParameters=batch_sched_delay=0
MinJobAge=600
MailProg=/bin/true
ReturnToService=2
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF

for _ in $(seq 1 50); do [[ -S $dir/munge.sock ]] && break; sleep 0.1; done
[[ -S $dir/munge.sock ]] || skip "munged did not start: $(tail -n 3 "$dir/munged.log" 2> /dev/null)"

slurmctld -D -f "$dir/slurm.conf" < /dev/null > "$dir/slurmctld.out" 2>&1 &
echo $! > "$dir/slurmctld.pid"
slurmd -D -f "$dir/slurm.conf" -N "$host" < /dev/null > "$dir/slurmd.out" 2>&1 &
echo $! > "$dir/slurmd.pid"

export SLURM_CONF="$dir/slurm.conf"
for _ in $(seq 1 100); do
  state=$(timeout 5 sinfo -h -N -o %t 2> /dev/null | head -n 1)
  [[ $state == idle* ]] && { echo "slurm_cluster: up in $dir (ports $base, $((base + 1)))"; exit 0; }
  sleep 0.2
done
skip "the Slurm node did not become idle in 20 s (sinfo: ${state:-no answer}; $(tail -n 2 "$dir/slurmctld.log" 2> /dev/null))"
