#!/usr/bin/env bash
# A single-node Slurm cluster on this machine, for `lab batch slurm` and tests/slurm:
# munge + slurmctld + slurmd on localhost, CPU only (grading on PoCL), no systemd, no cgroups.
#
#   sudo scripts/slurm_single_node.sh          # install (Debian's slurm-wlm packages), configure, start
#   sudo scripts/slurm_single_node.sh --stop   # stop the three daemons it started
#
# Idempotent: a cluster already up with this configuration is left as it is. Every step it
# takes is printed. It is meant for a throwaway machine (a container, a CI runner): it writes
# /etc/slurm/slurm.conf and runs the daemons as root.
set -euo pipefail

CONF=/etc/slurm/slurm.conf
STATE=/var/lib/slurm
LOGS=/var/log/slurm
RUN=/run/slurm
say() { printf 'slurm_single_node: %s\n' "$*"; }

if [[ $(id -u) != 0 ]]; then
    say "must run as root (it installs packages and starts daemons)" >&2
    exit 2
fi

pid_alive() { [[ -f $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

stop() {
    for daemon in slurmd slurmctld; do
        if pid_alive "$RUN/$daemon.pid"; then
            kill "$(cat "$RUN/$daemon.pid")" && say "stopped $daemon"
        fi
    done
    if pid_alive /run/munge/munged.pid; then
        kill "$(cat /run/munge/munged.pid)" && say "stopped munged"
    fi
}

if [[ ${1:-} == --stop ]]; then
    stop
    exit 0
fi

# 1. packages
missing=()
for pair in slurmctld:slurmctld slurmd:slurmd sbatch:slurm-client munged:munge; do
    command -v "${pair%%:*}" >/dev/null 2>&1 || [[ -x /usr/sbin/${pair%%:*} ]] || missing+=("${pair#*:}")
done
if (( ${#missing[@]} )); then
    say "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null 2>&1 || {
        apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null; }
else
    say "packages already installed"
fi

# 2. configuration: this node as slurmd sees it, and plugins that need neither systemd nor cgroups
node_line=$(/usr/sbin/slurmd -C | head -n 1)   # NodeName=... CPUs=... RealMemory=...
node=$(sed -E 's/^NodeName=([^ ]+).*/\1/' <<<"$node_line")
memory=$(sed -E 's/.*RealMemory=([0-9]+).*/\1/' <<<"$node_line")
node_line=${node_line/RealMemory=$memory/RealMemory=$(( memory * 9 / 10 ))}
new_conf=$(cat <<EOF
# Written by scripts/slurm_single_node.sh: a single-node cluster on localhost, CPU only.
ClusterName=lab
SlurmctldHost=$node(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CryptoType=crypto/munge
MpiDefault=none
# in a container: no systemd, no cgroup delegation
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1024
ReturnToService=2
KillWait=10
MinJobAge=600
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmdPidFile=$RUN/slurmd.pid
SlurmdSpoolDir=$STATE/slurmd
StateSaveLocation=$STATE/slurmctld
SlurmctldLogFile=$LOGS/slurmctld.log
SlurmdLogFile=$LOGS/slurmd.log
SlurmctldTimeout=30
SlurmdTimeout=60
$node_line NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
)
mkdir -p "$STATE/slurmd" "$STATE/slurmctld" "$LOGS" "$RUN" /etc/slurm
changed=0
if [[ ! -f $CONF ]] || [[ $(cat "$CONF") != "$new_conf" ]]; then
    printf '%s\n' "$new_conf" > "$CONF"
    say "wrote $CONF (node $node: ${node_line#NodeName=$node })"
    changed=1
else
    say "$CONF already up to date"
fi

# 3. munge
if pid_alive /run/munge/munged.pid; then
    say "munged already running"
else
    mkdir -p /run/munge /var/log/munge /var/lib/munge
    if [[ ! -s /etc/munge/munge.key ]]; then
        dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none
        say "made a munge key"
    fi
    chown munge:munge /etc/munge /etc/munge/munge.key /run/munge /var/log/munge /var/lib/munge
    chmod 0700 /etc/munge && chmod 0400 /etc/munge/munge.key
    runuser -u munge -- /usr/sbin/munged
    say "started munged"
fi

# 4. the two Slurm daemons (restarted when the configuration changed)
if (( changed )); then
    for daemon in slurmd slurmctld; do
        if pid_alive "$RUN/$daemon.pid"; then
            kill "$(cat "$RUN/$daemon.pid")"
            for _ in $(seq 50); do pid_alive "$RUN/$daemon.pid" || break; sleep 0.1; done
            say "stopped $daemon (configuration changed)"
        fi
    done
fi
if pid_alive "$RUN/slurmctld.pid"; then
    say "slurmctld already running"
else
    /usr/sbin/slurmctld
    say "started slurmctld"
fi
if pid_alive "$RUN/slurmd.pid"; then
    say "slurmd already running"
else
    /usr/sbin/slurmd -N "$node"
    say "started slurmd"
fi

# 5. wait for the node to take jobs
for _ in $(seq 150); do
    state=$(sinfo --noheader --nodes="$node" --format=%T 2>/dev/null | head -n 1 || true)
    case $state in
        idle|mixed|allocated|completing) say "node $node is $state: sbatch works"; exit 0 ;;
        down*|drain*|fail*) scontrol update NodeName="$node" State=RESUME >/dev/null 2>&1 || true ;;
    esac
    sleep 0.2
done
say "node $node did not come up (state: ${state:-none}); see $LOGS/slurmctld.log and $LOGS/slurmd.log" >&2
exit 1
