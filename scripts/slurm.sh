#!/usr/bin/env bash
# A real Slurm cluster for the tests: one node on loopback (tests/clusters/test_slurm.py), or several
# nodes, each in a network namespace of its own (tests/clusters/test_slurm_multinode.py).
#
#   bash scripts/slurm.sh start [--nodes N]   # install (when missing and root), configure, start
#   bash scripts/slurm.sh status [--nodes N]  # whether it is up; prints the variables to use it
#   bash scripts/slurm.sh stop [--nodes N]    # cancel its jobs, stop the daemons it started (by
#                                             # pid), remove the namespaces and lines it added
#   bash scripts/slurm.sh env [--nodes N]     # the variables only
#
# --nodes N (or KDIST_SLURM_NODES=N; default 1): the cluster's node count, which also picks its
# default directory. KDIST_SLURM_DIR: where it lives (build/slurm for one node,
# build/slurm-multinode for more); KDIST_SLURM_KILL_WAIT: its KillWait (10 s);
# KDIST_SLURM_NO_INSTALL=1: never install (the tests' fixture starts it this way);
# KDIST_SLURM_SUBNET: the multi-node cluster's /24 (10.77.0: clear of tests/helpers/netns.py's
# 10.200-249 ones).
#
# Debian's slurm-wlm (22.05) and munge, with no cgroups: process tracking by the process
# list (proctrack/linuxproc), no task plugin, no accounting, each node with this machine's
# CPUs (`slurmd -C`), ports chosen free at start. Its configuration, state, spool, logs, munge
# key and socket live under $KDIST_SLURM_DIR, and the machine's own munge (if any) keeps
# running. Each daemon runs in a session of its own; its pid is recorded in
# $KDIST_SLURM_DIR/pids and `stop` signals exactly those pids.
#
# One node: "localhost" at 127.0.0.1; every daemon binds 127.0.0.1
# (CommunicationParameters=NoCtldInAddrAny,NoInAddrAny); nothing in /etc, /var or /run is
# touched.
#
# Several nodes (root and iproute2 needed): node1..nodeN, each a network namespace
# kdslurm-nodeK joined by a veth pair to the bridge kdslurm-br, at $KDIST_SLURM_SUBNET.K. Each
# node's slurmd runs inside its namespace (entered with nsenter --net: `ip netns exec` remounts
# /sys, and slurmd then finds no /sys/fs/cgroup), so its job steps and their tasks do too:
# each task has its node's address, and the tasks of one job reach each other across the
# bridge. Every node shares this machine's host name, which resolves to loopback (as on a
# Debian host). slurmctld runs in the root namespace, at the bridge's .254, under a host name
# of its own (kdslurm-ctld, in a UTS namespace: slurmctld refuses to start unless SlurmctldHost
# is its own name, and with NoCtldInAddrAny binds the address that name resolves to, which for
# this machine's name is loopback). Only slurmctld binds one address: NoInAddrAny would make
# slurmd and srun bind this machine's name's loopback address too, so each slurmd binds any
# address of its namespace (only the bridge reaches it), and srun its I/O ports. The node names
# and kdslurm-ctld go to /etc/hosts (one line each, tagged with this directory), so that a
# task resolves SLURM_STEP_NODELIST's first node without DNS; `stop` removes exactly those
# lines, the veths, the bridge and the namespaces, which `start` records in
# $KDIST_SLURM_DIR/network as it makes them; a failed start undoes itself.
#
# The cluster is used through SLURM_CONF=$KDIST_SLURM_DIR/etc/slurm.conf (the clients read
# it; `env` prints it). Where it cannot be installed or started, `start` exits 1 with the
# reason in $KDIST_SLURM_DIR/unavailable, which the tests print when they skip.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

action="${1:-}"
[ $# -gt 0 ] && shift
nodes="${KDIST_SLURM_NODES:-1}"
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) nodes="${2:-}"; shift; [ $# -gt 0 ] && shift ;;
    --nodes=*) nodes="${1#--nodes=}"; shift ;;
    *) echo "slurm.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
case "$nodes" in
  '' | *[!0-9]* | 0) echo "slurm.sh: --nodes: expected a positive integer, received \"$nodes\"" >&2; exit 2 ;;
esac
if [ "$nodes" = 1 ]; then
  dir="${KDIST_SLURM_DIR:-$PWD/build/slurm}"
else
  dir="${KDIST_SLURM_DIR:-$PWD/build/slurm-multinode}"
fi
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
network="$dir/network"
subnet="${KDIST_SLURM_SUBNET:-10.77.0}"
bridge=kdslurm-br
# The multi-node controller's host name: slurmctld runs in a UTS namespace of its own under it
# (slurmctld wants SlurmctldHost to be its own name, and with NoCtldInAddrAny binds the address
# that name resolves to: /etc/hosts gives it the bridge's; this machine's resolves to loopback).
controller=kdslurm-ctld
hosts_tag="# kdist scripts/slurm.sh $dir"
# The nodes: names, addresses, and the daemons to run (munged, slurmctld, one slurmd each).
node_names=()
if [ "$nodes" = 1 ]; then
  node_names=(localhost)
  slurmds=(slurmd)
else
  slurmds=()
  for k in $(seq "$nodes"); do
    node_names+=("node$k")
    slurmds+=("slurmd-node$k")
  done
fi
daemons=(munged slurmctld "${slurmds[@]}")

say() { echo "slurm.sh: $*" >&2; }

unavailable() {
  echo "$*" > "$dir/unavailable"
  say "unavailable: $*"
  exit 1
}

# The pid recorded for daemon $1 (slurmd-nodeK runs slurmd) when that process is alive and
# still that daemon.
live_pid() {
  local file="$pids/$1.pid" pid comm
  [ -f "$file" ] || return 1
  pid=$(< "$file")
  [ -n "$pid" ] && [ -r "/proc/$pid/comm" ] || return 1
  comm=$(< "/proc/$pid/comm")
  [ "$comm" = "${1%%-*}" ] || return 1
  echo "$pid"
}

node_address() {  # $1: node index from 1
  if [ "$nodes" = 1 ]; then echo 127.0.0.1; else echo "$subnet.$1"; fi
}

print_env() {
  local k hosts=() namespaces=() links=()
  echo "export SLURM_CONF=$conf"
  echo "export KDIST_SLURM_DIR=$dir"
  echo "export KDIST_SLURM_KILL_WAIT=$(sed -n 's/^KillWait=//p' "$conf" 2> /dev/null || echo "$kill_wait")"
  echo "export KDIST_SLURM_NODES=$nodes"
  for k in $(seq "$nodes"); do
    hosts+=("${node_names[k - 1]}=$(node_address "$k")")
    [ "$nodes" = 1 ] || namespaces+=("kdslurm-node$k") links+=("kdslurm-v$k")
  done
  # name=address for each node; several nodes: each node's namespace, and the root
  # namespace's end of its veth (the tests take a node away by setting it down).
  echo "export KDIST_SLURM_HOSTS=$(IFS=,; echo "${hosts[*]}")"
  if [ "$nodes" != 1 ]; then
    echo "export KDIST_SLURM_NAMESPACES=$(IFS=,; echo "${namespaces[*]}")"
    echo "export KDIST_SLURM_LINKS=$(IFS=,; echo "${links[*]}")"
  fi
}

free_ports() {  # $1 ports, free on address $2
  python3 - "$1" "$2" << 'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind((sys.argv[2], 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
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

# --- several nodes: the namespaces, the bridge and /etc/hosts --------------------------------

# Runs `ip ARGS` and, when it made something, records how to undo it (a line of $network).
made() {
  local undo=$1
  shift
  "$@" 2> "$dir/ip.err" || unavailable "$* failed: $(tr '\n' ' ' < "$dir/ip.err")"
  echo "$undo" >> "$network"
}

make_network() {
  local k name address line
  [ "$(id -u)" = 0 ] || unavailable "a multi-node cluster needs root (network namespaces)"
  command -v ip > /dev/null || unavailable "a multi-node cluster needs iproute2's ip (apt-get install iproute2)"
  command -v nsenter > /dev/null || unavailable "a multi-node cluster needs util-linux's nsenter"
  for name in "${node_names[@]}" "$controller"; do
    if grep -qE "[[:space:]]$name([[:space:]]|$)" /etc/hosts; then
      unavailable "/etc/hosts already names $name (not a line of this cluster's)"
    fi
  done
  made "link $bridge" ip link add "$bridge" type bridge
  ip link set "$bridge" up
  ip addr add "$subnet.254/24" dev "$bridge"
  for k in $(seq "$nodes"); do
    made "netns kdslurm-node$k" ip netns add "kdslurm-node$k"
    made "link kdslurm-v$k" ip link add "kdslurm-v$k" type veth peer name "kdslurm-p$k"
    ip link set "kdslurm-p$k" netns "kdslurm-node$k"
    ip link set "kdslurm-v$k" master "$bridge"
    ip link set "kdslurm-v$k" up
    ip -n "kdslurm-node$k" addr add "$(node_address "$k")/24" dev "kdslurm-p$k"
    ip -n "kdslurm-node$k" link set "kdslurm-p$k" up
    ip -n "kdslurm-node$k" link set lo up
  done
  # /etc/hosts may be a bind mount (containers): rewrite it in place, never replace it.
  echo "hosts" >> "$network"
  echo "$subnet.254 $controller  $hosts_tag" >> /etc/hosts
  for k in $(seq "$nodes"); do
    line="$(node_address "$k") ${node_names[k - 1]}  $hosts_tag"
    echo "$line" >> /etc/hosts
  done
}

remove_network() {
  local kind name kept
  [ -f "$network" ] || return 0
  while read -r kind name; do
    case "$kind" in
      hosts)
        # Every line but those ending with this cluster's tag; written back in place.
        awk -v tag="$hosts_tag" 'substr($0, length($0) - length(tag) + 1) != tag' /etc/hosts \
          > "$dir/hosts.kept"
        cat "$dir/hosts.kept" > /etc/hosts
        rm -f "$dir/hosts.kept"
        ;;
      netns) ip netns del "$name" 2> /dev/null || true ;;
      link) ip link del "$name" 2> /dev/null || true ;;
    esac
  done < <(tac "$network")
  rm -f "$network"
}

# -------------------------------------------------------------------------------------------

configure() {
  mkdir -p "$dir/etc" "$dir/state" "$dir/spool" "$logs" "$pids" "$dir/jobs"
  local cpu_line ports ctld_port slurmd_port ctld_host spool slurmd_pid slurmd_log k
  local node_lines="" partition comm_params=NoCtldInAddrAny,NoInAddrAny
  # `slurmd -C`'s hardware line, under the node name the cluster uses.
  cpu_line=$(slurmd -C 2> /dev/null | head -n 1 | sed -E 's/^NodeName=[^ ]+ //; s/ *$//')
  [ -n "$cpu_line" ] || unavailable "slurmd -C printed no hardware line"
  if [ "$nodes" = 1 ]; then
    read -r ctld_port slurmd_port < <(free_ports 2 127.0.0.1)
    ctld_host="localhost(127.0.0.1)"
    spool="$dir/spool" slurmd_pid="$dir/spool/slurmd.pid" slurmd_log="$logs/slurmd.log"
    partition=localhost
  else
    # Each slurmd binds its own address in its own namespace: any port is free there.
    read -r ctld_port slurmd_port < <(free_ports 2 "$subnet.254")
    ctld_host="$controller($subnet.254)"
    spool="$dir/spool/%n" slurmd_pid="$dir/spool/%n/slurmd.pid" slurmd_log="$logs/slurmd-%n.log"
    partition="node[1-$nodes]"
    # NoInAddrAny makes slurmd and srun bind the address this machine's host name resolves to,
    # loopback, which the other nodes cannot reach: slurmd binds any address of its namespace
    # (only the bridge reaches it), and srun its step's I/O ports.
    comm_params=NoCtldInAddrAny
    for k in $(seq "$nodes"); do mkdir -p "$dir/spool/node$k"; done
  fi
  for k in $(seq "$nodes"); do
    node_lines+="NodeName=${node_names[k - 1]} NodeAddr=$(node_address "$k") NodeHostname=${node_names[k - 1]} $cpu_line State=UNKNOWN"$'\n'
  done
  cat > "$conf" << CONF
# Written by scripts/slurm.sh: a $nodes-node test cluster, without cgroups.
ClusterName=kdisttest
SlurmctldHost=$ctld_host
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
CommunicationParameters=$comm_params
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$munge_socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$spool
SlurmctldPidFile=$dir/state/slurmctld.pid
SlurmdPidFile=$slurmd_pid
SlurmctldLogFile=$logs/slurmctld.log
SlurmdLogFile=$slurmd_log
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
${node_lines}PartitionName=debug Nodes=$partition Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
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

# Starts daemon $1 (its pid file's name) as the command after it, in a session of its own;
# setsid and nsenter --net exec in place, so the recorded pid is the daemon's.
start_daemon() {
  local name=$1
  shift
  if live_pid "$name" > /dev/null; then return 0; fi
  setsid "$@" < /dev/null > "$logs/$name.out" 2>&1 &
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

# Whether node $1 is up (idle, or running jobs).
node_idle() {
  SLURM_CONF="$conf" sinfo -h -n "$1" -o %T 2> /dev/null | grep -qE '^(idle|mixed|allocated)'
}

start() {
  local k
  rm -f "$dir/unavailable"
  install
  if status > /dev/null 2>&1; then
    say "already up"
    print_env
    return 0
  fi
  # What an earlier start of this directory left (its stop never ran); and what this one
  # starts or makes, undone if it fails.
  stop_daemons
  remove_network
  trap 'stop_daemons; remove_network' EXIT
  [ "$nodes" = 1 ] || make_network
  configure
  start_munge
  export SLURM_CONF="$conf"
  if [ "$nodes" = 1 ]; then
    start_daemon slurmctld slurmctld -D -f "$conf"
  else
    # unshare (without --fork) and sh exec in place: the recorded pid is slurmctld's.
    start_daemon slurmctld unshare --uts sh -c 'hostname "$0" && exec slurmctld -D -f "$1"' \
      "$controller" "$conf"
  fi
  wait_for slurmctld "scontrol ping 2> /dev/null | grep -q UP" \
    || unavailable "slurmctld did not start: $(tail -n 5 "$logs/slurmctld.out" "$logs/slurmctld.log" 2> /dev/null | tr '\n' ' ')"
  if [ "$nodes" = 1 ]; then
    start_daemon slurmd slurmd -D -N localhost -f "$conf"
  else
    for k in $(seq "$nodes"); do
      start_daemon "slurmd-node$k" nsenter --net="/var/run/netns/kdslurm-node$k" \
        slurmd -D -N "node$k" -f "$conf"
    done
  fi
  for k in $(seq "$nodes"); do
    wait_for "${slurmds[k - 1]}" "node_idle ${node_names[k - 1]}" \
      || unavailable "slurmd of ${node_names[k - 1]} did not join: $(tail -n 5 "$logs/${slurmds[k - 1]}.out" "$logs/slurmd"*.log 2> /dev/null | tr '\n' ' ')"
  done
  trap - EXIT
  say "up: $(sinfo -h -o '%P %D %T %N %c CPUs')"
  print_env
}

status() {
  local name missing=() k
  for name in "${daemons[@]}"; do
    live_pid "$name" > /dev/null || missing+=("$name")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "down (not running: ${missing[*]})"
    return 1
  fi
  for k in $(seq "$nodes"); do
    if ! node_idle "${node_names[k - 1]}"; then
      echo "down (node ${node_names[k - 1]} is not up: $(SLURM_CONF="$conf" sinfo -h -n "${node_names[k - 1]}" -o '%T %E' 2>&1))"
      return 1
    fi
  done
  echo "up (munged $(live_pid munged), slurmctld $(live_pid slurmctld), ${slurmds[*]}: $(for name in "${slurmds[@]}"; do live_pid "$name"; done | tr '\n' ' '))"
  print_env
}

stop_daemons() {
  local name pid
  # Jobs first, while slurmctld can still end them: a job step's slurmstepd outlives slurmd.
  # (A client retries an unanswering controller for a minute: each gets 10 s.)
  if live_pid slurmctld > /dev/null \
    && SLURM_CONF="$conf" timeout 10 scontrol ping 2> /dev/null | grep -q UP; then
    SLURM_CONF="$conf" timeout 10 scancel --full --signal=KILL --state=RUNNING --user="$(id -un)" 2> /dev/null || true
    SLURM_CONF="$conf" timeout 10 scancel --user="$(id -un)" 2> /dev/null || true
    for _ in $(seq 100); do
      [ -z "$(SLURM_CONF="$conf" timeout 10 squeue -h -o %i 2> /dev/null)" ] && break
      sleep 0.1
    done
  fi
  for name in "${slurmds[@]}" slurmctld munged; do
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
}

stop() {
  stop_daemons
  remove_network
  say "stopped"
}

case "$action" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  env) print_env ;;
  *)
    echo "usage: $0 start|stop|status|env [--nodes N]" >&2
    exit 2
    ;;
esac
