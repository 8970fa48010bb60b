#!/usr/bin/env bash
# Private RabbitMQ nodes for warren's fault tests: one standalone node and a throwaway 3-node cluster,
# run on this machine next to (and never touching) the shared broker rabbit@localhost on 5672, which
# other tests use. Fault tests stop, kill and restart these nodes; the shared one must stay up.
#
#   rabbit-node.sh single  start|stop|restart|kill|clean|status
#   rabbit-node.sh mgmt    start|stop|clean|status          (wmgmt: the management plugin on)
#   rabbit-node.sh cluster start|stop|clean|status|kill-node N|start-node N
#   rabbit-node.sh ctl     NODE rabbitmqctl-args...      e.g. ctl wsolo close_all_connections "test"
#   rabbit-node.sh queues  NODE rabbitmq-queues-args...  e.g. queues w2 quorum_status my-queue
#   rabbit-node.sh suite   start|stop|clean|status       (wsuite: a broker for the whole test suite on 5673,
#                          management HTTP 15673, when the suite runs on a server other than the machine's)
#   rabbit-node.sh node    wtls|wsmall|wshort start|stop|clean|status   (config from $WARREN_NODE_CONF, plugins
#                          from $WARREN_NODE_PLUGINS, e.g. "rabbitmq_auth_mechanism_ssl", read at start)
#   rabbit-node.sh clean-all                             (every node above, and for 4.3 the chroot's mounts)
#   WARREN_TEST_SERVER=4.3 runs every node from RabbitMQ 4.3 in the chroot rabbit-server.sh builds; the
#   default, 3.10, runs the machine's own server.
#
#   node     AMQP             distribution     data + logs
#   wsolo    127.0.0.1:5690   127.0.0.1:25690  $WARREN_NODE_DIR/wsolo/{mnesia,log}
#   w1..w3   127.0.0.1:568N   127.0.0.1:2568N  $WARREN_NODE_DIR/wN/{mnesia,log}
#   wmgmt    127.0.0.1:5696   127.0.0.1:25696  $WARREN_NODE_DIR/wmgmt/{mnesia,log}; management HTTP 15696
#   wtls     127.0.0.1:5694   127.0.0.1:25694  TLS listener on 5695 from the test's config (issue 12)
#   wsmall   127.0.0.1:5697   127.0.0.1:25697  a small max_message_size from the test's config
#   wshort   127.0.0.1:5698   127.0.0.1:25698  a consumer_timeout of seconds from the test's config
#   wsuite   127.0.0.1:5673   127.0.0.1:25673  the suite's broker (4.3 in CI); management HTTP 15673
#   WARREN_NODE_DIR defaults to ${TMPDIR:-/tmp}/warren-nodes. Node names are <node>@$(hostname -s).
#   The 4.3 nodes (all but wsuite) are <node>43@$(hostname -s) on these ports plus 200 (wsolo43 on 5890,
#   w1..w3 on 5881-5883, wmgmt43's management on 15896, wtls43's TLS on 5895), so the fault suites of both
#   servers can run at the same time (CI does): their nodes share epmd and the loopback, nothing else.
#
# Contract: `start` returns only when the node(s) accept AMQP and is idempotent; `stop` is graceful
# and keeps data (durable queues, persistent messages survive a later start); `kill` is SIGKILL;
# `clean` stops, kills any leftover VM of these node names and deletes their data. NODE for ctl/queues
# must be one of ours (wsolo, w1, w2, w3, optionally with @host): the shared node is refused.
#
# Why it looks the way it does (RabbitMQ 3.10, Debian package):
# - The nodes run as the rabbitmq user (runuser when we are root) with its HOME, so they and the stock
#   CLI share the Erlang cookie of the default node.
# - RABBITMQ_CONFIG_FILE points at a file that does not exist: /etc/rabbitmq/rabbitmq.conf declares a
#   listener on 5672 and must not be loaded. Plugins: an empty enabled_plugins per node.
# - `rabbitmq-server -detached` returns before the VM registers with epmd and `await_startup` fails on
#   a node that is not up yet, so we poll epmd first, then await_startup.
# - Since 3.7 the VM's command line does not carry the node name, so every VM we launch gets
#   WARREN_TEST_NODE=<node@host> in its environment; that is how leftovers are found (never by a broad
#   process name) and how a stale or reused pid in a pid file is told apart from our VM.
# - Mutating commands take a flock on $WARREN_NODE_DIR/.lock, so test processes cannot interleave them.
set -euo pipefail

HOST=$(hostname -s)
# Which server the nodes run: the machine's own (3.10) or RabbitMQ 4.3 from the chroot rabbit-server.sh
# builds. Each server's nodes have names and ports of their own (NODE_SUFFIX, PORT_OFFSET), so both
# servers' fault suites run side by side.
SERVER=${WARREN_TEST_SERVER:-3.10}
RUN_AS=${RABBITMQ_USER:-rabbitmq}
case "$SERVER" in
  3.10)
    ROOT=""
    BASE=${WARREN_NODE_DIR:-${TMPDIR:-/tmp}/warren-nodes}
    BASE_IN=$BASE
    # The Debian package keeps the real scripts here; /usr/sbin/* are su wrappers with their own cwd/HOME.
    BIN=${RABBITMQ_BIN:-/usr/lib/rabbitmq/bin}
    [ -x "$BIN/rabbitmq-server" ] || BIN=$(dirname "$(command -v rabbitmq-server)")
    COOKIE_HOME=$(getent passwd "$RUN_AS" | cut -d: -f6)
    NODE_SUFFIX=""
    PORT_OFFSET=0 ;;
  4.3)
    ROOT=$(bash "$(dirname "$0")/rabbit-server.sh" root)
    # the nodes' data must be inside the chroot: BASE is it as we see it, BASE_IN as the server does
    BASE="$ROOT/warren-nodes"
    BASE_IN=/warren-nodes
    BIN=/usr/lib/rabbitmq/bin
    COOKIE_HOME=/var/lib/rabbitmq
    NODE_SUFFIX=43
    PORT_OFFSET=200 ;;
  *) echo "rabbit-node: error: WARREN_TEST_SERVER must be 3.10 or 4.3 (got '$SERVER')" >&2; exit 2 ;;
esac
BOOT_TIMEOUT_S=${WARREN_NODE_BOOT_TIMEOUT_S:-120}
STOP_TIMEOUT_S=${WARREN_NODE_STOP_TIMEOUT_S:-60}
EPMD=$(command -v epmd || ls /usr/lib/erlang/erts-*/bin/epmd 2>/dev/null | head -1 || true)
[ -n "$EPMD" ] || EPMD=epmd

log() { echo "rabbit-node: $*" >&2; }
die() { log "error: $*"; exit 1; }

# Runs a command as the rabbitmq user. Fd 9 is our lock: nothing we start may inherit it, or a
# long-lived process (the detached node VM, an epmd the CLI starts) would hold the lock forever.
as_rmq() {
  if [ -n "$ROOT" ]; then
    [ "$(id -u)" = 0 ] || die "RabbitMQ $SERVER runs in a chroot: run as root"
    chroot --userspec="$RUN_AS:$RUN_AS" "$ROOT" /usr/bin/env -i HOME="$COOKIE_HOME" \
      PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@" 9>&-
  elif [ "$(id -un)" = "$RUN_AS" ]; then env HOME="$COOKIE_HOME" "$@" 9>&-
  elif [ "$(id -u)" = 0 ]; then runuser -u "$RUN_AS" -- env HOME="$COOKIE_HOME" "$@" 9>&-
  else die "must run as root or as $RUN_AS"; fi
}

# ---- node table --------------------------------------------------------------------------------
short_name() {  # wsolo, wsolo@host and (4.3) wsolo43@host all name wsolo
  local n=${1%@*}
  [ "$n" = wsuite ] || n=${n%"$NODE_SUFFIX"}
  case "$n" in wsolo|w1|w2|w3|wmgmt|wtls|wsmall|wshort|wsuite) echo "$n" ;; *) die "not a private test node: '$1' (expected wsolo, w1, w2, w3, wmgmt, wtls, wsmall, wshort or wsuite)" ;; esac; }
# wsuite is one node whatever the server (the 4.3 suite's broker); the others carry their server's suffix
full_name() {
  local s; s=$(short_name "$1") || exit 1
  if [ "$s" = wsuite ]; then echo "$s@$HOST"; else echo "$s$NODE_SUFFIX@$HOST"; fi
}
base_port() { case "$1" in wsolo) echo 5690 ;; w[123]) echo $((5680 + ${1#w})) ;; wmgmt) echo 5696 ;; wtls) echo 5694 ;; wsmall) echo 5697 ;; wshort) echo 5698 ;; esac; }
amqp_port() { if [ "$1" = wsuite ]; then echo 5673; else echo $(($(base_port "$1") + PORT_OFFSET)); fi; }
dist_port() { echo $((20000 + $(amqp_port "$1"))); }
node_dir() { echo "$BASE/$1"; }        # as this script sees it
node_dir_in() { echo "$BASE_IN/$1"; }  # as the server sees it (inside the chroot for 4.3)
# wmgmt runs the management plugin (HTTP on 127.0.0.1:15696) for the ops topology drift tests; wsuite is
# the broker the whole suite runs on when it is not the machine's (HTTP 127.0.0.1:15673), as the shared
# node on 5672 has it
node_plugins() { case "$1" in wmgmt|wsuite) echo '[rabbitmq_management].' ;; *) : ;; esac; }
node_conf() {  # node_conf NODE DIR: a config file for nodes that need one, else nothing
  case "$1" in
    wmgmt) printf '%s\n' "management.tcp.port = $((15696 + PORT_OFFSET))" "management.tcp.ip = 127.0.0.1" > "$2/rabbitmq.conf"
           echo "$2/rabbitmq.conf" ;;
    wsuite) printf '%s\n' "management.tcp.port = 15673" "management.tcp.ip = 127.0.0.1" > "$2/rabbitmq.conf"
           echo "$2/rabbitmq.conf" ;;
  esac
}

# ---- probes (cheap: no Erlang VM is started for these) -----------------------------------------
# pids of the VM(s) we launched for node $1, recognised by the marker in their environment
node_pids() {
  local full pid
  full=$(full_name "$1")
  for pid in $(pgrep -x beam.smp 2>/dev/null || true); do
    grep -qzx "WARREN_TEST_NODE=$full" "/proc/$pid/environ" 2>/dev/null && echo "$pid"
  done
  return 0
}
alive_name() { local f; f=$(full_name "$1") || exit 1; echo "${f%@*}"; }  # the name epmd knows
epmd_registered() { "$EPMD" -names 2>/dev/null | grep -q "^name $(alive_name "$1") at port "; }
epmd_port() { "$EPMD" -names 2>/dev/null | sed -n "s/^name $(alive_name "$1") at port \([0-9]*\)\$/\1/p"; }
port_listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
port_owner() { ss -ltnpH "sport = :$1" 2>/dev/null | head -1; }
log_tail() {
  local f
  f="$(node_dir "$1")/log/$(full_name "$1").log"
  [ -f "$f" ] && { log "last lines of $f:"; tail -n 25 "$f" >&2; }
  return 0
}

# rabbitmqctl against one of our nodes; every call is bounded so a wedged node cannot hang a test run
ctl() { local n; n=$(full_name "$1"); shift; as_rmq timeout 180 "$BIN/rabbitmqctl" -n "$n" "$@"; }

# ---- one node -----------------------------------------------------------------------------------
# launch_node NODE [SEED]: start the VM detached. With SEED (a node name) the node gets a config file
# that makes it join SEED's cluster through classic peer discovery on its first boot.
launch_node() {
  local n=$1 seed=${2:-} full dir din port dist conf
  full=$(full_name "$n"); dir=$(node_dir "$n"); din=$(node_dir_in "$n"); port=$(amqp_port "$n"); dist=$(dist_port "$n")
  if [ -n "$(node_pids "$n")" ]; then log "$full already running"; return 0; fi
  # a VM killed a moment ago may still be registered with epmd for a few ms
  for _ in $(seq 1 50); do epmd_registered "$n" || break; sleep 0.1; done
  # a node of that name that we did not launch (no marker): someone else's, e.g. a run of another
  # script. We leave it alone; it has to be stopped by whoever started it.
  epmd_registered "$n" && die "a node named $full that this script did not start is running" \
    "($(port_owner "$(epmd_port "$n")")); stop it with: rabbitmqctl -n $full stop"
  port_listening "$port" && die "127.0.0.1:$port is taken by another process: $(port_owner "$port")"
  port_listening "$dist" && die "127.0.0.1:$dist is taken by another process: $(port_owner "$dist")"
  mkdir -p "$dir/mnesia" "$dir/log"
  rm -f "$dir/pid"   # stale after a SIGKILL; rabbit writes a fresh one on boot
  node_plugins "$n" > "$dir/enabled_plugins"
  conf="$din/none"   # does not exist: keeps /etc/rabbitmq/rabbitmq.conf (listener on 5672) out
  if own_config "$n" "$dir"; then
    conf="$din/rabbitmq.conf"
  elif [ -n "$seed" ]; then
    conf="$din/rabbitmq.conf"
    printf '%s\n' "cluster_formation.peer_discovery_backend = rabbit_peer_discovery_classic_config" \
      "cluster_formation.classic_config.nodes.1 = $(full_name "$seed")" > "$dir/rabbitmq.conf"
  else
    rm -f "$dir/rabbitmq.conf"
    [ -z "$(node_conf "$n" "$dir")" ] || conf="$din/rabbitmq.conf"
  fi
  if [ -n "$ROOT" ]; then
    chroot "$ROOT" chown -R "$RUN_AS:$RUN_AS" "$din" /var/lib/rabbitmq
  else
    chown -R "$RUN_AS" "$dir"
  fi
  as_rmq test -w "$din/mnesia" || die "$RUN_AS cannot write $dir (set WARREN_NODE_DIR to a directory it can reach)"
  ( cd "$dir" && as_rmq env \
      WARREN_TEST_NODE="$full" \
      RABBITMQ_NODENAME="$full" \
      RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 \
      RABBITMQ_NODE_PORT="$port" \
      RABBITMQ_DIST_PORT="$dist" \
      RABBITMQ_MNESIA_BASE="$din/mnesia" \
      RABBITMQ_LOG_BASE="$din/log" \
      RABBITMQ_PID_FILE="$din/pid" \
      RABBITMQ_ENABLED_PLUGINS_FILE="$din/enabled_plugins" \
      RABBITMQ_CONFIG_FILE="$conf" \
      RABBITMQ_ADVANCED_CONFIG_FILE="$din/none.config" \
      RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}" \
      ERL_CRASH_DUMP="$din/log/erl_crash.dump" \
      "$BIN/rabbitmq-server" -detached )
}

# own_config NODE DIR: wtls, wsmall and wshort take their rabbitmq.conf from the test ($WARREN_NODE_CONF, a file)
# and their plugins from $WARREN_NODE_PLUGINS (comma or space separated). False for the other nodes.
own_config() {
  case "$1" in wtls|wsmall|wshort) ;; *) return 1 ;; esac
  [ -f "${WARREN_NODE_CONF:-}" ] || die "$1 needs WARREN_NODE_CONF (a rabbitmq.conf file) at start"
  # Files the config names (`ssl_options.certfile = /tmp/...`) are copied next to it and the config
  # rewritten to the copies: the server may not see the test's paths (a chroot) or its files' owner.
  local line key value files="$2/files" n=0
  mkdir -p "$files"
  : > "$2/rabbitmq.conf"
  while IFS= read -r line || [ -n "$line" ]; do
    if [[ "$line" =~ ^[[:space:]]*([A-Za-z0-9_.]*file)[[:space:]]*=[[:space:]]*(/[^[:space:]]+)[[:space:]]*$ ]]; then
      key=${BASH_REMATCH[1]}; value=${BASH_REMATCH[2]}; n=$((n + 1))
      [ -f "$value" ] || die "$1: $key names $value, which does not exist"
      cp "$value" "$files/$n-$(basename "$value")"
      line="$key = $(node_dir_in "$1")/files/$n-$(basename "$value")"
    fi
    printf '%s\n' "$line" >> "$2/rabbitmq.conf"
  done < "$WARREN_NODE_CONF"
  local plugins
  plugins=$(echo "${WARREN_NODE_PLUGINS:-}" | tr ', ' '\n\n' | grep -v '^$' | paste -sd, - || true)
  echo "[$plugins]." > "$2/enabled_plugins"
}

# wait until node $1 has finished booting (AMQP listener up)
await_node() {
  local n=$1 full port deadline launched
  full=$(full_name "$n"); port=$(amqp_port "$n")
  launched=$SECONDS; deadline=$((SECONDS + BOOT_TIMEOUT_S))
  until epmd_registered "$n"; do
    if [ -z "$(node_pids "$n")" ] && [ $((SECONDS - launched)) -ge 5 ]; then
      log_tail "$n"; die "$full exited while booting"
    fi
    [ "$SECONDS" -lt "$deadline" ] || { log_tail "$n"; die "$full did not register with epmd within ${BOOT_TIMEOUT_S}s"; }
    sleep 0.2
  done
  # right after registration the rabbit app may not be loaded yet: await_startup can fail, so retry
  until ctl "$n" await_startup --timeout "$BOOT_TIMEOUT_S" >/dev/null 2>&1; do
    [ -n "$(node_pids "$n")" ] || { log_tail "$n"; die "$full exited while booting"; }
    [ "$SECONDS" -lt "$deadline" ] || { log_tail "$n"; die "$full did not finish booting within ${BOOT_TIMEOUT_S}s"; }
    sleep 0.5
  done
  until port_listening "$port"; do
    [ "$SECONDS" -lt "$deadline" ] || die "$full booted but 127.0.0.1:$port does not accept connections"
    sleep 0.1
  done
  echo "$full up on 127.0.0.1:$port"
}

start_node() {
  local n=$1 port
  port=$(amqp_port "$n")
  if [ -n "$(node_pids "$n")" ] && epmd_registered "$n"; then
    # Already running. A test may have stop_app'ed it (VM up, app down): then start the app again.
    # await_startup alone would just sit out its timeout on a stopped app.
    if ! port_listening "$port" \
       && [ "$(ctl "$n" eval '{rabbit:is_booting(), rabbit:is_running()}.' 2>/dev/null)" = "{false,false}" ]; then
      log "$(full_name "$n") is up but its app is stopped: start_app"
      ctl "$n" start_app >/dev/null
    fi
  else
    launch_node "$n"
  fi
  await_node "$n"
}

alive() {  # alive PID: exists and is not a zombie (a dying VM loses its environ before its sockets)
  local state
  state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

wait_gone() {  # wait_gone NODE SECONDS PID...: until those VMs exited, epmd forgot the name, AMQP port closed
  local n=$1 deadline=$((SECONDS + $2)) pid busy
  shift 2
  while :; do
    busy=""
    for pid in "$@" $(node_pids "$n"); do alive "$pid" && busy=1; done
    epmd_registered "$n" && busy=1
    port_listening "$(amqp_port "$n")" && busy=1
    [ -n "$busy" ] || return 0
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.1
  done
}

stop_node() {  # graceful: rabbit closes connections, flushes queues and exits; data stays
  local n=$1 full pids
  full=$(full_name "$n")
  pids=$(node_pids "$n")
  if [ -z "$pids" ]; then log "$full is not running"; return 0; fi
  ctl "$n" stop --idempotent >/dev/null 2>&1 || log "rabbitmqctl stop on $full failed; waiting for the VM to exit anyway"
  # shellcheck disable=SC2086
  wait_gone "$n" "$STOP_TIMEOUT_S" $pids || { log_tail "$n"; die "$full did not stop within ${STOP_TIMEOUT_S}s"; }
  echo "$full stopped"
}

kill_node() {  # crash: SIGKILL the VM, no shutdown work at all
  local n=$1 full pids
  full=$(full_name "$n"); pids=$(node_pids "$n")
  if [ -z "$pids" ]; then log "$full is not running"; return 0; fi
  # shellcheck disable=SC2086
  kill -KILL $pids 2>/dev/null || true
  # shellcheck disable=SC2086
  wait_gone "$n" 30 $pids || die "$full (pid $pids) survived SIGKILL"
  echo "$full killed (SIGKILL, pid $(echo $pids))"
}

clean_node() {  # never fails because the node is in a bad state: stop, else kill, then delete data
  local n=$1 full
  full=$(full_name "$n")
  if [ -n "$(node_pids "$n")" ]; then
    if epmd_registered "$n"; then
      # subshells: stop_node/kill_node exit the script on failure, and clean must go on regardless
      ( STOP_TIMEOUT_S=20 stop_node "$n" ) >/dev/null 2>&1 || log "$full did not stop gracefully; killing it"
    fi
    ( kill_node "$n" ) >/dev/null 2>&1 || true
  fi
  [ -z "$(node_pids "$n")" ] || die "could not get rid of $full (pids $(node_pids "$n"))"
  rm -rf "$(node_dir "$n")"
  epmd_registered "$n" && log "warning: a node named $full that this script did not start is running; left alone"
  echo "$full cleaned"
}

status_node() {
  local n=$1 full pids
  full=$(full_name "$n"); pids=$(node_pids "$n")
  if [ -z "$pids" ]; then echo "$full not running"; return 3; fi
  echo "$full running (pid $(echo $pids)) AMQP 127.0.0.1:$(amqp_port "$n") data $(node_dir "$n")"
}

# ---- cluster ------------------------------------------------------------------------------------
cluster_disk_nodes() {  # disc members as w1 knows them, one per line
  ctl w1 cluster_status --formatter json 2>/dev/null \
    | grep -o '"disk_nodes":\[[^]]*\]' | grep -o '"[^"]*@[^"]*"' | tr -d '"'
}

has_data() { [ -d "$(node_dir "$1")/mnesia/$(full_name "$1")" ]; }

cluster_complete() {  # all three VMs up, all three running members of w1's cluster, AMQP open
  local i running
  for i in 1 2 3; do
    [ -n "$(node_pids "w$i")" ] && epmd_registered "w$i" && port_listening "$(amqp_port "w$i")" || return 1
  done
  running=$(cluster_status 2>/dev/null) || return 1
  for i in 1 2 3; do grep -q "\"$(full_name "w$i")\"" <<<"$running" || return 1; done
  echo "$running"
}

cluster_start() {
  local i members launched="" fresh=0
  # already up: one CLI call instead of one per node
  cluster_complete && return 0
  if ! has_data w1; then
    fresh=1
    # A new cluster. Stale w2/w3 data would belong to a cluster that is gone: drop it.
    for i in 2 3; do [ -n "$(node_pids "w$i")" ] || rm -rf "$(node_dir "w$i")"; done
    # Boot w1 alone, then w2 and w3 together; they find w1 through classic peer discovery and join
    # while booting. About twice as fast as booting all three and then stop_app/reset/join_cluster/
    # start_app on two of them (each CLI call starts an Erlang VM).
    start_node w1
    for i in 2 3; do
      if [ -z "$(node_pids "w$i")" ]; then launch_node "w$i" w1; launched="$launched $i"; fi
    done
  else
    # An existing cluster: a member that was not the last to stop waits for its peers' tables while
    # booting, so all of them must be launched before waiting on any.
    for i in 1 2 3; do
      if [ -z "$(node_pids "w$i")" ]; then launch_node "w$i"; launched="$launched $i"; fi
    done
  fi
  # wait for the nodes in parallel: each wait is a CLI call that starts an Erlang VM (~1 s of CPU)
  for i in 1 2 3; do
    case " $launched " in
      *" $i "*) await_node "w$i" & ;;
      *) [ "$fresh" = 1 ] && [ "$i" = 1 ] && continue; start_node "w$i" & ;;
    esac
  done
  wait_all || die "the cluster did not come up"
  # Fallback (peer discovery did not join it, or it ran alone before): join the classic way.
  members=$(cluster_disk_nodes)
  for i in 2 3; do
    grep -qx "$(full_name "w$i")" <<<"$members" && continue
    log "$(full_name "w$i") is not a member of w1's cluster: reset and join_cluster"
    ctl "w$i" stop_app >/dev/null
    ctl "w$i" reset >/dev/null
    # join_cluster prints harmless "Failed to create a tracked connection table" errors on 3.10
    ctl "w$i" join_cluster "$(full_name w1)" >/dev/null 2>&1 || ctl "w$i" join_cluster "$(full_name w1)"
    ctl "w$i" start_app >/dev/null
    ctl "w$i" await_startup --timeout "$BOOT_TIMEOUT_S" >/dev/null
  done
  cluster_status
}

cluster_status() {
  ctl w1 cluster_status --formatter json | grep -o '"running_nodes":\[[^]]*\]'
}

check_index() { case "${1:-}" in 1|2|3) ;; *) die "node index must be 1, 2 or 3 (got '${1:-}')" ;; esac; }

wait_all() {  # wait for every background job of this shell; fail if any failed
  local rc=0 pid
  for pid in $(jobs -p); do wait "$pid" || rc=1; done
  return "$rc"
}

# ---- dispatch -------------------------------------------------------------------------------------
with_lock() {
  mkdir -p "$BASE"
  exec 9>"$BASE/.lock"
  flock -w 600 9 || die "timed out waiting for $BASE/.lock"
}

usage() {
  sed -n '6,17p' "$0" >&2
  exit 2
}

one_node() {  # one_node NODE start|stop|clean|status: the commands of a node that is not restarted or killed
  case "${2:-}" in
    start)  with_lock; start_node "$1" ;;
    stop)   with_lock; stop_node "$1" ;;
    clean)  with_lock; clean_node "$1" ;;
    status) status_node "$1" ;;
    *) usage ;;
  esac
}

case "${1:-}" in
  single)
    case "${2:-}" in
      start)   with_lock; start_node wsolo ;;
      stop)    with_lock; stop_node wsolo ;;
      restart) with_lock; stop_node wsolo; start_node wsolo ;;
      kill)    with_lock; kill_node wsolo ;;
      clean)   with_lock; clean_node wsolo ;;
      status)  status_node wsolo ;;
      *) usage ;;
    esac ;;
  mgmt) one_node wmgmt "${2:-}" ;;
  cluster)
    case "${2:-}" in
      start)      with_lock; cluster_start ;;
      stop)       with_lock; for i in 3 2 1; do stop_node "w$i"; done ;;
      clean)      with_lock; for i in 3 2 1; do clean_node "w$i" & done; wait_all ;;
      status)     cluster_status ;;
      kill-node)  check_index "${3:-}"; with_lock; kill_node "w$3" ;;
      start-node) check_index "${3:-}"; with_lock; start_node "w$3" ;;
      *) usage ;;
    esac ;;
  ctl)
    [ $# -ge 3 ] || usage
    node=$(full_name "$2") || exit 1; shift 2
    as_rmq "$BIN/rabbitmqctl" -n "$node" "$@" ;;
  node)
    case "${2:-}" in wtls|wsmall|wshort) ;; *) usage ;; esac
    one_node "$2" "${3:-}" ;;
  queues)
    [ $# -ge 3 ] || usage
    node=$(full_name "$2") || exit 1; shift 2
    as_rmq "$BIN/rabbitmq-queues" -n "$node" "$@" ;;
  suite) one_node wsuite "${2:-}" ;;
  clean-all)  # every node of this server, then (4.3) the chroot's mounts: CI's and a test run's last step
    with_lock
    for n in wsolo w1 w2 w3 wmgmt wtls wsmall wshort wsuite; do clean_node "$n" & done
    wait_all || log "some node could not be cleaned" ;;
  *) usage ;;
esac
# a 4.3 node cleaned: once nothing runs inside the chroot any more, its mounts go too
case "${1:-} ${2:-} ${3:-}" in
  *clean*) [ -z "$ROOT" ] || bash "$(dirname "$0")/rabbit-server.sh" unmount ;;
esac
