#!/bin/sh
# A two-node Slurm cluster on this machine, for trying the Slurm executor
# by hand and for the figures in docs/benchmarks.md (docs/fleet.md):
#   mk/slurm-cluster.sh start DIR   # munged, slurmctld, slurmd n1 and n2 under DIR
#   export SLURM_CONF=DIR/slurm.conf
#   mk/slurm-cluster.sh stop DIR    # stops them by the PIDs it recorded
# The same configuration as the tests' helper (host/tests/all/slurm_cluster.rs).
set -eu
cmd=${1:-}; d=${2:-}
[ -n "$cmd" ] && [ -n "$d" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }
case "$cmd" in
start)
  mkdir -p "$d/munge" "$d/state" "$d/spool" "$d/log" "$d/shared"
  d=$(cd "$d" && pwd)
  chmod 700 "$d/munge"
  [ -f "$d/munge/munge.key" ] || { dd if=/dev/urandom of="$d/munge/munge.key" bs=1024 count=1 2>/dev/null; chmod 400 "$d/munge/munge.key"; }
  munged -F -f --socket="$d/munge/munge.sock" --key-file="$d/munge/munge.key" \
    --pid-file="$d/munge/munged.pid" --log-file="$d/log/munged.log" --seed-file="$d/munge/seed" \
    >/dev/null 2>"$d/log/munged.out" &
  echo $! > "$d/munged.bgpid"
  while [ ! -S "$d/munge/munge.sock" ]; do sleep 0.1; done
  host=$(hostname -s)
  cat > "$d/slurm.conf" <<CONF
ClusterName=blocklab
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=${SLURMCTLD_PORT:-46817}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$d/munge/munge.sock,cred_expire=5
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool/%n
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd-%n.pid
SlurmctldLogFile=$d/log/slurmctld.log
SlurmdLogFile=$d/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
SlurmdTimeout=3
MessageTimeout=3
InactiveLimit=0
KillWait=2
MinJobAge=600
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
SlurmdParameters=config_overrides
NodeName=n1 NodeHostname=$host NodeAddr=127.0.0.1 Port=${SLURMD_PORT1:-46818} CPUs=2 State=UNKNOWN
NodeName=n2 NodeHostname=$host NodeAddr=127.0.0.1 Port=${SLURMD_PORT2:-46819} CPUs=2 State=UNKNOWN
PartitionName=bench Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP OverSubscribe=EXCLUSIVE
CONF
  export SLURM_CONF="$d/slurm.conf"
  slurmctld -D -i >/dev/null 2>"$d/log/slurmctld.out" & echo $! > "$d/slurmctld.bgpid"
  for n in n1 n2; do
    slurmd -D -N $n >/dev/null 2>"$d/log/slurmd-$n.out" & echo $! > "$d/slurmd-$n.bgpid"
  done
  i=0
  until [ "$(sinfo -h -N -o %t 2>/dev/null | grep -c '^idle$')" = 2 ]; do
    i=$((i + 1)); [ $i -lt 300 ] || { echo "nodes did not come up; see $d/log" >&2; exit 1; }
    sleep 0.1
  done
  sinfo
  echo "export SLURM_CONF=$d/slurm.conf"
  ;;
stop)
  SLURM_CONF="$d/slurm.conf" scancel -u "$(id -un)" 2>/dev/null || true
  for f in slurmd-n1 slurmd-n2 slurmctld munged; do
    [ -f "$d/$f.bgpid" ] && kill "$(cat "$d/$f.bgpid")" 2>/dev/null || true
    rm -f "$d/$f.bgpid"
  done
  ;;
*) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
