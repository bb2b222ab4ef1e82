#!/usr/bin/env bash
# A real single-node Slurm cluster for the tests (tests/test_slurm.py), on loopback only.
#
#   bash scripts/slurm.sh start    # install (when missing and root), configure, start
#   bash scripts/slurm.sh status   # whether it is up; prints the variables to use it
#   bash scripts/slurm.sh stop     # cancel its jobs, stop the daemons it started, by pid
#   bash scripts/slurm.sh env      # the variables only (eval "$(bash scripts/slurm.sh env)")
#
# KDIST_SLURM_DIR: where it lives (build/slurm); KDIST_SLURM_KILL_WAIT: its KillWait (10 s);
# KDIST_SLURM_NO_INSTALL=1: never install (the tests' fixture starts it this way).
#
# Debian's slurm-wlm (22.05) and munge, with no cgroups: process tracking by the process
# list (proctrack/linuxproc), no task plugin, no accounting. One node, "localhost" at
# 127.0.0.1, with this machine's CPUs (`slurmd -C`). Every daemon binds 127.0.0.1
# (CommunicationParameters=NoCtldInAddrAny,NoInAddrAny) on ports chosen free at start.
# Its configuration, state, spool, logs, munge key and socket live under $KDIST_SLURM_DIR
# (build/slurm): nothing in /etc, /var or /run is touched, and the machine's own munge (if
# any) keeps running. Each daemon runs in a session of its own; its pid is recorded in
# $KDIST_SLURM_DIR/pids and `stop` signals exactly those pids.
#
# The cluster is used through SLURM_CONF=$KDIST_SLURM_DIR/etc/slurm.conf (the clients read
# it; `env` prints it). Where it cannot be installed or started, `start` exits 1 with the
# reason in $KDIST_SLURM_DIR/unavailable, which the tests print when they skip.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

dir="${KDIST_SLURM_DIR:-$PWD/build/slurm}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
# KillWait: seconds between a job's SIGTERM and its SIGKILL (Slurm's default is 30). The
# tests measure stops against it; 10 keeps a lost stop from costing the run half a minute.
kill_wait="${KDIST_SLURM_KILL_WAIT:-10}"
conf="$dir/etc/slurm.conf"
pids="$dir/pids"
logs="$dir/log"
munge_dir="$dir/munge"
munge_socket="$munge_dir/munge.socket"
daemons=(munged slurmctld slurmd)

say() { echo "slurm.sh: $*" >&2; }

unavailable() {
  echo "$*" > "$dir/unavailable"
  say "unavailable: $*"
  exit 1
}

# The pid recorded for daemon $1 when that process is alive and still that daemon.
live_pid() {
  local file="$pids/$1.pid" pid comm
  [ -f "$file" ] || return 1
  pid=$(< "$file")
  [ -n "$pid" ] && [ -r "/proc/$pid/comm" ] || return 1
  comm=$(< "/proc/$pid/comm")
  [ "$comm" = "$1" ] || return 1
  echo "$pid"
}

print_env() {
  echo "export SLURM_CONF=$conf"
  echo "export KDIST_SLURM_DIR=$dir"
  echo "export KDIST_SLURM_KILL_WAIT=$(sed -n 's/^KillWait=//p' "$conf" 2> /dev/null || echo "$kill_wait")"
}

free_ports() {
  python3 - "$1" << 'EOF'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
}

install() {
  command -v slurmctld > /dev/null && command -v slurmd > /dev/null && command -v munged > /dev/null \
    && command -v srun > /dev/null && return 0
  if [ -n "${KDIST_SLURM_NO_INSTALL:-}" ]; then
    unavailable "slurm-wlm and munge are not installed (bash scripts/slurm.sh start installs them, as root)"
  fi
  if [ "$(id -u)" != 0 ] || ! command -v apt-get > /dev/null; then
    unavailable "slurm-wlm and munge are not installed, and this is not root with apt-get to install them"
  fi
  say "installing slurm-wlm and munge (apt-get)"
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge; } \
    > "$dir/apt.log" 2>&1; then
    unavailable "apt-get install slurm-wlm munge failed: $(tail -n 3 "$dir/apt.log" | tr '\n' ' ')"
  fi
}

configure() {
  mkdir -p "$dir/etc" "$dir/state" "$dir/spool" "$logs" "$pids" "$dir/jobs"
  local cpu_line ports ctld_port slurmd_port
  # `slurmd -C`'s hardware line, under the node name the cluster uses.
  cpu_line=$(slurmd -C 2> /dev/null | head -n 1 | sed -E 's/^NodeName=[^ ]+ //; s/ *$//')
  [ -n "$cpu_line" ] || unavailable "slurmd -C printed no hardware line"
  read -r ctld_port slurmd_port < <(free_ports 2)
  cat > "$conf" << EOF
# Written by scripts/slurm.sh: a single-node test cluster on loopback, without cgroups.
ClusterName=kdisttest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
CommunicationParameters=NoCtldInAddrAny,NoInAddrAny
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$munge_socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/state/slurmctld.pid
SlurmdPidFile=$dir/spool/slurmd.pid
SlurmctldLogFile=$logs/slurmctld.log
SlurmdLogFile=$logs/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
KillWait=$kill_wait
# A finished job stays visible to scontrol for 5 minutes (the tests read its state).
MinJobAge=300
JobRequeue=0
SchedulerType=sched/backfill
NodeName=localhost NodeAddr=127.0.0.1 NodeHostname=localhost $cpu_line State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
}

start_munge() {
  if live_pid munged > /dev/null; then return 0; fi
  mkdir -p "$munge_dir"
  if [ ! -f "$munge_dir/munge.key" ]; then
    head -c 1024 /dev/urandom > "$munge_dir/munge.key"
  fi
  chown -R munge:munge "$munge_dir" 2> /dev/null || unavailable "no user munge to run munged as"
  chmod 0711 "$munge_dir"  # the socket must be reachable; the key stays 0600
  chmod 0600 "$munge_dir/munge.key"
  # setpriv execs munged in place (no child left between), in a session of its own.
  setsid setpriv --reuid=munge --regid=munge --init-groups munged --foreground \
    --key-file="$munge_dir/munge.key" --socket="$munge_socket" \
    --pid-file="$munge_dir/munged.pid" --seed-file="$munge_dir/munged.seed" \
    --log-file="$munge_dir/munged.log" --force \
    < /dev/null > "$logs/munged.out" 2>&1 &
  echo $! > "$pids/munged.pid"
  wait_for "munged" "[ -S '$munge_socket' ]" || unavailable "munged did not start: $(tail -n 3 "$logs/munged.out" "$munge_dir/munged.log" 2> /dev/null | tr '\n' ' ')"
}

start_daemon() {
  local name=$1
  shift
  if live_pid "$name" > /dev/null; then return 0; fi
  setsid "$name" "$@" < /dev/null > "$logs/$name.out" 2>&1 &
  echo $! > "$pids/$name.pid"
}

# Waits (at most 30 s) until the shell test $2 holds while daemon $1 lives.
wait_for() {
  local name=$1 check=$2
  for _ in $(seq 300); do
    if eval "$check"; then return 0; fi
    # Alive under any name: it may not have exec'd the daemon yet (setsid, setpriv).
    [ -d "/proc/$(< "$pids/$name.pid")" ] || return 1
    sleep 0.1
  done
  return 1
}

node_idle() {
  SLURM_CONF="$conf" sinfo -h -n localhost -o %T 2> /dev/null | grep -qE '^(idle|mixed|allocated)'
}

start() {
  rm -f "$dir/unavailable"
  install
  if status > /dev/null 2>&1; then
    say "already up"
    print_env
    return 0
  fi
  configure
  start_munge
  export SLURM_CONF="$conf"
  start_daemon slurmctld -D -f "$conf"
  wait_for slurmctld "scontrol ping 2> /dev/null | grep -q UP" \
    || unavailable "slurmctld did not start: $(tail -n 5 "$logs/slurmctld.out" "$logs/slurmctld.log" 2> /dev/null | tr '\n' ' ')"
  start_daemon slurmd -D -N localhost -f "$conf"
  wait_for slurmd node_idle \
    || unavailable "slurmd did not join: $(tail -n 5 "$logs/slurmd.out" "$logs/slurmd.log" 2> /dev/null | tr '\n' ' ')"
  say "up: $(sinfo -h -o '%P %D %T %c CPUs')"
  print_env
}

status() {
  local name missing=()
  for name in "${daemons[@]}"; do
    live_pid "$name" > /dev/null || missing+=("$name")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "down (not running: ${missing[*]})"
    return 1
  fi
  if ! SLURM_CONF="$conf" node_idle; then
    echo "down (the node is not up: $(SLURM_CONF="$conf" sinfo -h -n localhost -o '%T %E' 2>&1))"
    return 1
  fi
  echo "up (munged $(live_pid munged), slurmctld $(live_pid slurmctld), slurmd $(live_pid slurmd))"
  print_env
}

stop() {
  local name pid
  # Jobs first, while slurmctld can still end them: a job step's slurmstepd outlives slurmd.
  if live_pid slurmctld > /dev/null; then
    SLURM_CONF="$conf" scancel --full --signal=KILL --state=RUNNING --user="$(id -un)" 2> /dev/null || true
    SLURM_CONF="$conf" scancel --user="$(id -un)" 2> /dev/null || true
    for _ in $(seq 100); do
      [ -z "$(SLURM_CONF="$conf" squeue -h -o %i 2> /dev/null)" ] && break
      sleep 0.1
    done
  fi
  for name in slurmd slurmctld munged; do
    pid=$(live_pid "$name") || continue
    kill -TERM "$pid"
    for _ in $(seq 100); do
      [ -d "/proc/$pid" ] || break
      sleep 0.1
    done
    if [ -d "/proc/$pid" ]; then
      say "$name (pid $pid) still runs 10 s after SIGTERM: SIGKILL"
      kill -KILL "$pid"
    fi
    rm -f "$pids/$name.pid"
  done
  say "stopped"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  env) print_env ;;
  *)
    echo "usage: $0 start|stop|status|env" >&2
    exit 2
    ;;
esac
