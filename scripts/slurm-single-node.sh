#!/usr/bin/env bash
# A single-node SLURM on this machine (Debian/Ubuntu: slurm-wlm and munge), then the check of
# `iclab sweep --executor slurm` against `--executor local`: the same results.csv, byte for
# byte (docs/guide/cluster.md). Needs root (a throwaway machine or container: it installs the
# packages if missing, writes /etc/slurm/slurm.conf and /etc/munge/munge.key, starts munged,
# slurmctld and slurmd, and stops the daemons it started when done).
#
#   scripts/slurm-single-node.sh [PYTHON]     # PYTHON: with iclab[slurm] installed
#
# Exit 0 when the results match, 1 when they differ, 2 when SLURM could not be started here.
set -euo pipefail
PYTHON=${1:-python}
cd "$(dirname "$0")/.."
WORK=$(mktemp -d /tmp/iclab-slurm.XXXXXX)
STARTED=()
cleanup() {
    for pid in "${STARTED[@]}"; do kill "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT
cannot() { echo "slurm-single-node: cannot start SLURM here: $*" >&2; exit 2; }

[ "$(id -u)" = 0 ] || cannot "needs root"
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    command -v apt-get >/dev/null || cannot "no slurmctld and no apt-get"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        slurm-wlm munge >/dev/null || cannot "apt-get install slurm-wlm munge failed"
fi

echo "== munge"
install -d -o munge -g munge -m 0700 /etc/munge /var/lib/munge /var/log/munge
install -d -o munge -g munge -m 0755 /run/munge
if [ ! -s /etc/munge/munge.key ]; then
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
fi
chown munge:munge /etc/munge/munge.key && chmod 0400 /etc/munge/munge.key
if ! munge -n >/dev/null 2>&1; then
    runuser -u munge -- munged --foreground >"$WORK/munged.log" 2>&1 & STARTED+=($!)
    for _ in $(seq 50); do munge -n >/dev/null 2>&1 && break; sleep 0.2; done
fi
munge -n | unmunge >/dev/null || cannot "munged does not answer"

echo "== slurm.conf"
HOST=$(hostname -s)
CPUS=$(nproc)
MEM=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2 ))
install -d /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm
cat > /etc/slurm/slurm.conf <<CONF
ClusterName=iclab
SlurmctldHost=$HOST
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
NodeName=$HOST CPUs=$CPUS RealMemory=$MEM State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
CONF

echo "== slurmctld, slurmd"
slurmctld -D -c >"$WORK/slurmctld.log" 2>&1 & STARTED+=($!)
slurmd -D >"$WORK/slurmd.log" 2>&1 & STARTED+=($!)
for _ in $(seq 100); do
    sinfo -h -o %t 2>/dev/null | grep -qE '^(idle|mix|alloc)' && break
    sleep 0.2
done
sinfo -h -o %t 2>/dev/null | grep -qE '^(idle|mix|alloc)' || cannot "the node is not idle: $(sinfo 2>&1 | tail -1)"
sinfo

echo "== the same sweep, locally and as SLURM jobs"
cat > "$WORK/tiny.toml" <<SPEC
name = "tiny"
[defaults]
d = 2
steps = 20
batch = 64
eval_prompts = 200
[[groups]]
name = "a"
seeds = [0, 1]
n = [4, 8]
sigma = 0.5
SPEC
"$PYTHON" -m iclab.cli.main sweep "$WORK/tiny.toml" --out "$WORK/local" --workers 1 --quiet
# No accounting here: submitit warns that sacct fails and reads each job's result file.
"$PYTHON" -m iclab.cli.main sweep "$WORK/tiny.toml" --out "$WORK/slurm" --executor slurm \
    --partition debug --time 10 --mem 1 --array-parallelism 2 --quiet 2>"$WORK/sweep.err" \
    || { cat "$WORK/sweep.err" >&2; exit 1; }
if cmp "$WORK/local/results.csv" "$WORK/slurm/results.csv"; then
    echo "results.csv identical (byte for byte): $WORK/local, $WORK/slurm"
else
    echo "results.csv differ: $WORK/local/results.csv, $WORK/slurm/results.csv" >&2
    exit 1
fi
