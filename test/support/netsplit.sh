#!/usr/bin/env bash
# A partitionable RabbitMQ cluster on this one machine, for the partition suite (test/partitions, issue 40).
# Every node runs in a network namespace of its own; the workload's processes run in client namespaces;
# all of them hang on one bridge that lives in a namespace of its own. Nothing is added to the host's own
# network: no interface, address, route or firewall rule outside these namespaces (the veth pairs are created
# straight inside them), and their addresses (10.213.0.0/24) exist only there.
#
#   netsplit.sh up N            N nodes (3 or 5) and 3 client namespaces; returns when the cluster is formed
#   netsplit.sh clean           kill every process in our namespaces, delete them and the nodes' data
#                               (also what is left of a run that was killed: safe to call any time)
#   netsplit.sh grudge SPEC     drop traffic: SPEC is "DST<SRC,SRC[@P] ..." (endpoints n1..n5, c1..c3): DST drops
#                               packets coming from each SRC, with probability P (0-1) if given, else all.
#                               A symmetric cut names both directions; a one-way cut only one. Adds to the rules.
#   netsplit.sh heal            remove every rule (all links whole again)
#   netsplit.sh pause K|resume K  SIGSTOP / SIGCONT node K's Erlang VM
#   netsplit.sh ctl K ARGS...   rabbitmqctl on node K, run inside its namespace
#   netsplit.sh exec cK CMD...  run CMD inside client namespace K (what the harness starts its processes with)
#   netsplit.sh url K           amqp://guest:guest@10.213.0.1K:5672
#   netsplit.sh status          namespaces, nodes running, rules
#   netsplit.sh logs DIR        copy every node's log folder to DIR/nK (a clean removes them)
#   WARREN_TEST_SERVER=4.3 runs the nodes from the RabbitMQ 4.3 chroot (test/support/rabbit-server.sh), else
#   the machine's 3.10.
#
#   endpoint   namespace     address        what runs there
#   bridge     wsplit-br     -              the bridge br0 (every veth's other end)
#   nK         wsplit-nK     10.213.0.1K    node wsplitK@10.213.0.1K: AMQP 5672, distribution 25672, its own epmd
#   cK         wsplit-cK     10.213.0.10K   the workload's processes "on node K's side" (K = 1..3)
#
# Why it looks the way it does:
# - Node names are long names with the node's address as host part (RABBITMQ_USE_LONGNAME): every namespace
#   sees the host's /etc/hosts, which knows none of these addresses, and a hosts file per namespace would mean
#   files under /etc/netns (the host's config). An address needs no resolver, on 3.10 and 4.3 alike.
# - Each node namespace runs its own epmd (the host's binary, started before the node, so that no epmd starts
#   inside the 4.3 chroot and holds its mounts): the distribution finds a node at its address:4369, and a cut
#   cuts epmd too, as it would between hosts.
# - The clients reach PostgreSQL through its Unix socket (/var/run/postgresql): a path-bound socket is not
#   in any network namespace, so no route to the host's loopback is needed.
# - Rules are iptables INPUT drops inside the receiving namespace (the Jepsen "grudge": a node ignores what
#   comes from the nodes it holds a grudge against), so one-way, lossy (-m statistic) and symmetric cuts are
#   one mechanism. No br_netfilter: that would be a host-wide switch.
# - Every process of a run lives in one of our namespaces, so `ip netns pids` finds all of them for the
#   clean-up (never a broad process name), and deleting the namespaces deletes the veths.
# - RABBITMQ_CONF_ENV_FILE is an empty file of ours: the machine's /etc/rabbitmq/rabbitmq-env.conf pins the
#   distribution to 127.0.0.1 (ERL_FLAGS, ERL_EPMD_ADDRESS), which would make the nodes unreachable from
#   each other's namespace.
# - Few schedulers per node (+S 1:1, no busy waiting) so that 5 nodes and the workload share 2 cores;
#   net_ticktime 15 s as RabbitMQ's own Jepsen tests; 3.10 with cluster_partition_handling = pause_minority
#   (4.3 ignores the classic strategies: quorum queues and Khepri decide).
set -euo pipefail

PREFIX=wsplit
NET=10.213.0
SERVER=${WARREN_TEST_SERVER:-3.10}
RUN_AS=rabbitmq
HERE=$(cd "$(dirname "$0")" && pwd)
BOOT_TIMEOUT_S=${WARREN_NODE_BOOT_TIMEOUT_S:-180}
EPMD=$(command -v epmd || ls /usr/lib/erlang/erts-*/bin/epmd 2>/dev/null | head -1 || true)

log() { echo "netsplit: $*" >&2; }
die() { log "error: $*"; exit 1; }
[ "$(id -u)" = 0 ] || die "run as root (network namespaces)"

case "$SERVER" in
  3.10) ROOT=""; BASE=${TMPDIR:-/tmp}/warren-netsplit; BASE_IN=$BASE
        BIN=/usr/lib/rabbitmq/bin; [ -x "$BIN/rabbitmq-server" ] || BIN=$(dirname "$(command -v rabbitmq-server)")
        COOKIE_HOME=$(getent passwd "$RUN_AS" | cut -d: -f6) ;;
  4.3)  ROOT=""; BASE=""; BASE_IN=/warren-netsplit; BIN=/usr/lib/rabbitmq/bin; COOKIE_HOME=/var/lib/rabbitmq ;;
  *) die "WARREN_TEST_SERVER must be 3.10 or 4.3 (got '$SERVER')" ;;
esac
chroot_root() {  # 4.3: build/mount the chroot on first need only (clean must work without it)
  if [ "$SERVER" = 4.3 ] && [ -z "$ROOT" ]; then
    ROOT=$(bash "$HERE/rabbit-server.sh" root); BASE="$ROOT/warren-netsplit"
  fi
}

ns() { echo "$PREFIX-$1"; }                      # ns n1 -> wsplit-n1
addr() {                                         # addr n2 -> 10.213.0.12, addr c1 -> 10.213.0.101
  case "$1" in n[1-9]) echo "$NET.$((10 + ${1#n}))" ;; c[1-9]) echo "$NET.$((100 + ${1#c}))" ;; *) die "bad endpoint '$1'" ;; esac
}
node_name() { echo "$PREFIX${1#n}@$(addr "$1")"; }
in_ns() { local n=$1; shift; ip netns exec "$(ns "$n")" "$@"; }
our_namespaces() { ip netns list 2>/dev/null | awk '{print $1}' | grep "^$PREFIX-" || true; }
node_count() { our_namespaces | grep -c "^$PREFIX-n" || true; }

need_iptables() {
  command -v iptables >/dev/null 2>&1 && return 0
  log "installing iptables (Debian's package)"
  apt-get install -y iptables >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y iptables >/dev/null; }
}

# ---- network ---------------------------------------------------------------------------------------
add_endpoint() {  # add_endpoint n1|c1: its namespace, a veth pair straight into it and the bridge namespace
  local e=$1
  ip netns add "$(ns "$e")"
  ip -n "$(ns "$e")" link set lo up
  ip -n "$(ns "$e")" link add eth0 type veth peer name "$e" netns "$(ns br)"
  ip -n "$(ns "$e")" addr add "$(addr "$e")/24" dev eth0
  ip -n "$(ns "$e")" link set eth0 up
  ip -n "$(ns br)" link set "$e" master br0 up
}

net_up() {
  local n=$1 i
  ip netns add "$(ns br)"
  ip -n "$(ns br)" link set lo up
  ip -n "$(ns br)" link add br0 type bridge
  ip -n "$(ns br)" link set br0 up
  for i in $(seq 1 "$n"); do add_endpoint "n$i"; done
  for i in 1 2 3; do add_endpoint "c$i"; done
}

endpoints() { our_namespaces | sed -n "s/^$PREFIX-\([nc][0-9]\)\$/\1/p"; }

heal() { local e; for e in $(endpoints); do in_ns "$e" iptables -F INPUT; done; }

grudge() {  # grudge "n1<n2,n3 c1<n2@0.3": one iptables-restore per receiving namespace (a cut takes effect at once)
  local item dst srcs src prob
  for item in $1; do
    dst=${item%%<*}; srcs=${item#*<}
    [ "$dst" != "$item" ] || die "grudge item '$item' is not DST<SRC,..."
    {
      echo '*filter'
      for src in ${srcs//,/ }; do
        prob=""; case "$src" in *@*) prob=${src#*@}; src=${src%@*} ;; esac
        if [ -n "$prob" ]; then
          echo "-A INPUT -s $(addr "$src") -m statistic --mode random --probability $prob -j DROP"
        else
          echo "-A INPUT -s $(addr "$src") -j DROP"
        fi
      done
      echo COMMIT
    } | in_ns "$dst" iptables-restore --noflush
  done
}

# ---- nodes -----------------------------------------------------------------------------------------
as_rmq_in() {  # as_rmq_in nK CMD...: as the rabbitmq user inside node K's namespace (and the chroot for 4.3)
  local e=$1; shift
  if [ -n "$ROOT" ]; then
    in_ns "$e" chroot --userspec="$RUN_AS:$RUN_AS" "$ROOT" /usr/bin/env -i HOME="$COOKIE_HOME" \
      PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 RABBITMQ_USE_LONGNAME=true "$@"
  else
    in_ns "$e" runuser -u "$RUN_AS" -- env HOME="$COOKIE_HOME" RABBITMQ_USE_LONGNAME=true "$@"
  fi
}

ctl() {
  local e=n$1; shift
  as_rmq_in "$e" env RABBITMQ_CONF_ENV_FILE="$BASE_IN/$e/rabbitmq-env.conf" \
    timeout 120 "$BIN/rabbitmqctl" -l -n "$(node_name "$e")" "$@"
}

node_conf() {  # node_conf nK COUNT DIR
  local e=$1 count=$2 dir=$3 i
  {
    echo "listeners.tcp.default = 5672"
    echo "loopback_users = none"
    echo "net_ticktime = 15"
    echo "cluster_formation.peer_discovery_backend = rabbit_peer_discovery_classic_config"
    for i in $(seq 1 "$count"); do echo "cluster_formation.classic_config.nodes.$i = $(node_name "n$i")"; done
    [ "$SERVER" = 3.10 ] && echo "cluster_partition_handling = pause_minority"
    echo "log.file.level = info"
  } > "$dir/rabbitmq.conf"
}

launch_node() {  # launch_node nK COUNT
  local e=$1 count=$2 dir din
  dir="$BASE/$e"; din="$BASE_IN/$e"
  mkdir -p "$dir/mnesia" "$dir/log"
  echo '[].' > "$dir/enabled_plugins"
  : > "$dir/rabbitmq-env.conf"
  node_conf "$e" "$count" "$dir"
  if [ -n "$ROOT" ]; then chroot "$ROOT" chown -R "$RUN_AS:$RUN_AS" "$din" /var/lib/rabbitmq; else chown -R "$RUN_AS" "$dir"; fi
  in_ns "$e" "$EPMD" -daemon
  ( cd "$dir" && as_rmq_in "$e" env \
      WARREN_TEST_NODE="$(node_name "$e")" \
      RABBITMQ_NODENAME="$(node_name "$e")" \
      RABBITMQ_NODE_IP_ADDRESS="$(addr "$e")" \
      RABBITMQ_NODE_PORT=5672 \
      RABBITMQ_DIST_PORT=25672 \
      RABBITMQ_MNESIA_BASE="$din/mnesia" \
      RABBITMQ_LOG_BASE="$din/log" \
      RABBITMQ_PID_FILE="$din/pid" \
      RABBITMQ_ENABLED_PLUGINS_FILE="$din/enabled_plugins" \
      RABBITMQ_CONFIG_FILE="$din/rabbitmq.conf" \
      RABBITMQ_CONF_ENV_FILE="$din/rabbitmq-env.conf" \
      RABBITMQ_ADVANCED_CONFIG_FILE="$din/none.config" \
      RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="+S 1:1 +sbwt none +sbwtdcpu none +sbwtdio none" \
      ERL_CRASH_DUMP="$din/log/erl_crash.dump" \
      "$BIN/rabbitmq-server" -detached ) >/dev/null
}

beam_pids() {  # the Erlang VM(s) in node K's namespace
  local pid
  for pid in $(ip netns pids "$(ns "n$1")" 2>/dev/null); do
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = beam.smp ] && echo "$pid"
  done
  return 0
}

port_open() { in_ns "$1" bash -c "exec 3<>/dev/tcp/$(addr "$1")/5672" 2>/dev/null; }

await_node() {  # await_node nK
  local e=$1 deadline=$((SECONDS + BOOT_TIMEOUT_S))
  until port_open "$e"; do
    if [ -z "$(beam_pids "${e#n}")" ] && [ "$SECONDS" -gt $((deadline - BOOT_TIMEOUT_S + 10)) ]; then
      tail -n 30 "$BASE/$e/log/"*.log >&2 2>/dev/null || true; die "$(node_name "$e") exited while booting"
    fi
    [ "$SECONDS" -lt "$deadline" ] || { tail -n 30 "$BASE/$e/log/"*.log >&2 2>/dev/null || true; die "$(node_name "$e") did not boot in ${BOOT_TIMEOUT_S}s"; }
    sleep 0.5
  done
}

cluster_up() {
  local n=$1 i running
  case "$n" in 3|5) ;; *) die "N must be 3 or 5 (got '$n')" ;; esac
  [ -z "$(our_namespaces)" ] || die "a partition cluster exists already (netsplit.sh clean first)"
  need_iptables
  chroot_root
  rm -rf "${BASE:?}"
  net_up "$n"
  if [ "$SERVER" = 3.10 ]; then
    # 3.10: the first node alone, then the others join it through classic peer discovery while they boot
    # (booted together, two 3.10 nodes can each form a cluster of their own)
    launch_node n1 "$n"; await_node n1
    for i in $(seq 2 "$n"); do launch_node "n$i" "$n"; done
  else
    # 4.3: peer discovery waits for the listed peers (a lone first node never finishes booting): all at once
    for i in $(seq 1 "$n"); do launch_node "n$i" "$n"; done
  fi
  for i in $(seq 1 "$n"); do await_node "n$i"; done
  for _ in $(seq 1 60); do
    running=$(ctl 1 cluster_status --formatter json 2>/dev/null | grep -o '"running_nodes":\[[^]]*\]' || true)
    [ "$(grep -o '@' <<<"$running" | wc -l)" -ge "$n" ] && { echo "$running"; return 0; }
    sleep 2
  done
  die "the cluster did not form: $running"
}

clean() {
  local space pids
  for space in $(our_namespaces); do
    pids=$(ip netns pids "$space" 2>/dev/null | tr '\n' ' ')
    # shellcheck disable=SC2086
    [ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
  done
  for _ in $(seq 1 50); do
    pids=""; for space in $(our_namespaces); do pids="$pids$(ip netns pids "$space" 2>/dev/null)"; done
    [ -n "$pids" ] || break; sleep 0.1
  done
  for space in $(our_namespaces); do ip netns del "$space" 2>/dev/null || true; done
  rm -rf "${TMPDIR:-/tmp}/warren-netsplit"
  local cache=${WARREN_RABBITMQ_CACHE:-/var/cache/warren}/rabbitmq-4.3
  rm -rf "$cache/warren-netsplit"
  [ ! -d "$cache" ] || bash "$HERE/rabbit-server.sh" unmount >/dev/null 2>&1 || true
  [ -z "$(our_namespaces)" ] || die "namespaces left: $(our_namespaces | tr '\n' ' ')"
  echo "netsplit: clean"
}

status() {
  local e
  for e in $(endpoints); do
    case "$e" in
      n*) echo "$e $(node_name "$e") vm $(beam_pids "${e#n}" | tr '\n' ' ')" ;;
      c*) echo "$e $(addr "$e") pids $(ip netns pids "$(ns "$e")" | tr '\n' ' ')" ;;
    esac
    in_ns "$e" iptables -S INPUT | grep -- '-A' | sed "s/^/  $e: /" || true
  done
}

signal_node() {  # signal_node K STOP|CONT
  local pids; pids=$(beam_pids "$1")
  [ -n "$pids" ] || die "node $1 has no VM running"
  # shellcheck disable=SC2086
  kill "-$2" $pids
}

case "${1:-}" in
  up) cluster_up "${2:-3}" ;;
  clean) clean ;;
  grudge) [ -n "${2:-}" ] || die "grudge needs a SPEC"; grudge "$2" ;;
  heal) heal ;;
  pause) signal_node "${2:?node index}" STOP ;;
  resume) signal_node "${2:?node index}" CONT ;;
  ctl) [ $# -ge 3 ] || die "ctl K ARGS..."; chroot_root; k=$2; shift 2; ctl "$k" "$@" ;;
  exec) [ $# -ge 3 ] || die "exec cK CMD..."; e=$2; shift 2; exec ip netns exec "$(ns "$e")" "$@" ;;
  url) echo "amqp://guest:guest@$(addr "n${2:?node index}"):5672" ;;
  status) chroot_root; status ;;
  logs) [ $# -ge 2 ] || die "logs DIR"; chroot_root
        for e in $(endpoints | grep '^n'); do
          [ ! -d "$BASE/$e/log" ] || { mkdir -p "$2/$e"; cp -r "$BASE/$e/log/." "$2/$e/"; }
        done ;;
  *) sed -n '6,20p' "$0" >&2; exit 2 ;;
esac
