#!/bin/sh
# A single-node Slurm cluster on loopback for the tests (tests/tools/slurm_test.cc):
#   slurm_cluster.sh start DIR   munged + slurmctld + slurmd, configured under DIR; prints the
#                                SLURM_CONF to use. Exit 77 with the reason on stderr when it
#                                cannot start (not root, packages missing, a daemon fails).
#   slurm_cluster.sh stop DIR    stops what start started (by the pids it recorded).
# Everything lives in DIR: a munge key made for the run, the sockets, slurm.conf, state, logs.
# No cgroups (proctrack/linuxproc, task/none), so it also runs in a container; as root, since
# slurmd must run its jobs as their users (the CI runs as root).
set -u
cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }

skip() { echo "slurm_cluster: cannot start: $*" >&2; exit 77; }

stop() {
  for name in slurmd slurmctld munged; do
    f="$dir/$name.pid"
    [ -s "$f" ] || continue
    pid=$(cat "$f")
    kill "$pid" 2>/dev/null
    i=0
    while kill -0 "$pid" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
    kill -9 "$pid" 2>/dev/null
    rm -f "$f"
  done
}

# Polls `$@` for up to 10 s.
wait_for() {
  i=0
  until "$@" >/dev/null 2>&1; do
    i=$((i + 1))
    [ $i -gt 100 ] && return 1
    sleep 0.1
  done
}

case "$cmd" in
stop)
  stop
  exit 0
  ;;
start) ;;
*) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac

[ "$(id -u)" = 0 ] || skip "not root (slurmd runs jobs as their users; run the suite as root)"
for prog in munged mungekey slurmctld slurmd sbatch scontrol sinfo; do
  command -v "$prog" >/dev/null || skip "$prog not found (Debian packages slurm-wlm and munge)"
done
mkdir -p "$dir/state" "$dir/spool" "$dir/munge" || skip "cannot create $dir"
chmod 700 "$dir/munge"

mungekey --create --keyfile="$dir/munge/munge.key" 2>"$dir/mungekey.log" ||
  skip "mungekey failed: $(cat "$dir/mungekey.log")"
chmod 400 "$dir/munge/munge.key"
# --force: munged's checks want a key and socket directory owned by a dedicated user; a
# temporary one owned by root is fine for a test.
munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
  --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munge/seed" \
  2>>"$dir/munged.log" || skip "munged failed: $(tail -3 "$dir/munged.log")"
wait_for test -S "$dir/munge/munge.socket" || { stop; skip "munged made no socket"; }

node=$(hostname -s)
cpus=$(nproc)
# Ports from the pid, so two runs on one machine rarely collide.
port=$((20000 + ($$ % 20000)))
cat >"$dir/slurm.conf" <<CONF
ClusterName=sluicetest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MinJobAge=300
SlurmdTimeout=30
InactiveLimit=0
KillWait=2
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
export SLURM_CONF="$dir/slurm.conf"
slurmctld -i -f "$SLURM_CONF" 2>>"$dir/slurmctld.log" ||
  { stop; skip "slurmctld failed: $(tail -5 "$dir/slurmctld.log")"; }
slurmd -f "$SLURM_CONF" 2>>"$dir/slurmd.log" ||
  { stop; skip "slurmd failed: $(tail -5 "$dir/slurmd.log")"; }
idle() { sinfo -h -o %t | grep -q idle; }
if ! wait_for idle; then
  state=$(sinfo -h -o '%t %E' 2>&1)
  stop
  skip "node not idle after 10 s ($state); slurmctld: $(tail -3 "$dir/slurmctld.log"); slurmd: $(tail -3 "$dir/slurmd.log")"
fi
echo "$SLURM_CONF"
