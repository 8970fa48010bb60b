#!/usr/bin/env bash
# The RabbitMQ servers warren's tests run against: the machine's own (3.10, Debian bookworm's package) and
# RabbitMQ 4.3 from Debian's testing suite, which this script builds once into a chroot in a cache folder
# outside the repository and reuses while it is there.
#
#   rabbit-server.sh root        build the 4.3 chroot if it is missing, mount /proc and /dev into it,
#                                print its path (what rabbit-node.sh runs 4.3 nodes from)
#   rabbit-server.sh build       build the chroot only (idempotent)
#   rabbit-server.sh version     the RabbitMQ version the chroot carries, e.g. 4.3.6
#   rabbit-server.sh unmount     unmount /proc and /dev from the chroot when no process runs inside it;
#                                with --force, kill what runs inside first (CI's last step)
#   rabbit-server.sh status      chroot path, version, mounts and the processes inside it
#
# Environment: WARREN_RABBITMQ_CACHE (default /var/cache/warren) holds the chroot as rabbitmq-4.3/;
# WARREN_DEBIAN_MIRROR overrides the mirror (default: the first Debian URI apt already uses).
#
# Why it looks the way it does (found while building it; see also DESIGN.md, "Wave 3"):
# - debootstrap knows no `forky` script of its own on bookworm: the `sid` script builds it. The suite's
#   Release file can be past its Valid-Until on a mirror snapshot; debootstrap does not check it, apt inside
#   the chroot needs -o Acquire::Check-Valid-Until=false.
# - /etc/hosts is copied in at every mount (else epmd cannot resolve the short host name: nxdomain), and
#   /proc and /dev are bind-mounted (the Erlang VM reads /proc for memory, /dev/urandom for its cookie).
# - The host's epmd (OTP 25) serves the chroot's Erlang 29 nodes too; it is started here if it is not
#   running, so that no epmd is started inside the chroot, where it would hold the mounts.
# - The build goes to a temporary folder and is renamed into place only when it is complete, under a lock,
#   so a build killed half way is never taken for a chroot.
set -euo pipefail

CACHE=${WARREN_RABBITMQ_CACHE:-/var/cache/warren}
ROOT="$CACHE/rabbitmq-4.3"
SUITE=forky
WANT_SERIES=4.3

log() { echo "rabbit-server: $*" >&2; }
die() { log "error: $*"; exit 1; }

mirror() {
  if [ -n "${WARREN_DEBIAN_MIRROR:-}" ]; then echo "$WARREN_DEBIAN_MIRROR"; return; fi
  local uri
  uri=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' | grep -v security | head -1 || true)
  [ -n "$uri" ] || uri=$(grep -hsE '^deb ' /etc/apt/sources.list | awk '{print $2}' | grep -v security | head -1 || true)
  [ -n "$uri" ] || uri=http://deb.debian.org/debian
  echo "$uri"
}

installed_version() {
  local v
  v=$(ls -d "$ROOT"/usr/lib/rabbitmq/lib/rabbitmq_server-* 2>/dev/null | head -1) || true
  [ -n "$v" ] && echo "${v##*rabbitmq_server-}"
}

build() {
  [ -f "$ROOT/.warren-ready" ] && return 0
  mkdir -p "$CACHE"
  exec 8>"$CACHE/.build.lock"
  flock -w 900 8 || die "timed out waiting for $CACHE/.build.lock"
  [ -f "$ROOT/.warren-ready" ] && return 0
  command -v debootstrap >/dev/null 2>&1 || {
    log "installing debootstrap (Debian's package)"
    apt-get install -y debootstrap >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y debootstrap >/dev/null; }
  }
  local script=/usr/share/debootstrap/scripts/sid tmp="$CACHE/rabbitmq-4.3.building"
  [ -f "$script" ] || die "debootstrap has no $script"
  unmount_tree "$tmp"
  rm -rf "$tmp" "$ROOT"
  log "building RabbitMQ $WANT_SERIES from Debian $SUITE into $ROOT (about 30 s)"
  if ! debootstrap --variant=minbase --include=rabbitmq-server "$SUITE" "$tmp" "$(mirror)" "$script" \
    >"$CACHE/build.log" 2>&1; then
    tail -n 20 "$CACHE/build.log" >&2
    unmount_tree "$tmp"
    die "debootstrap failed (log: $CACHE/build.log)"
  fi
  unmount_tree "$tmp"   # debootstrap may leave /proc mounted in its target
  mv "$tmp" "$ROOT"
  local v
  v=$(installed_version)
  case "$v" in "$WANT_SERIES".*) ;; *) die "the chroot carries RabbitMQ '${v:-none}', not $WANT_SERIES.x" ;; esac
  echo "$v" >"$ROOT/.warren-ready"
  log "RabbitMQ $v ready in $ROOT"
}

is_mounted() { mountpoint -q "$1" 2>/dev/null; }

mount_tree() {
  cp /etc/hosts "$ROOT/etc/hosts"
  is_mounted "$ROOT/proc" || mount --bind /proc "$ROOT/proc"
  is_mounted "$ROOT/dev" || mount --bind /dev "$ROOT/dev"
  if ! pgrep -x epmd >/dev/null 2>&1; then
    local epmd
    epmd=$(command -v epmd || ls /usr/lib/erlang/erts-*/bin/epmd 2>/dev/null | head -1 || true)
    [ -n "$epmd" ] && "$epmd" -daemon
  fi
  return 0
}

# processes whose root directory is the chroot
inside_pids() {
  local pid
  for pid in $(ls /proc | grep -E '^[0-9]+$'); do
    [ "$(readlink "/proc/$pid/root" 2>/dev/null)" = "$ROOT" ] && echo "$pid"
  done
  return 0
}

unmount_tree() {  # unmount_tree DIR: every mount below DIR, deepest first
  local dir=$1 m
  [ -d "$dir" ] || return 0
  for m in $(awk -v d="$dir" '$2 == d || index($2, d "/") == 1 {print $2}' /proc/mounts | sort -r); do
    umount "$m" 2>/dev/null || umount -l "$m"
  done
}

unmount() {
  local pids
  pids=$(inside_pids)
  if [ -n "$pids" ]; then
    if [ "${1:-}" = --force ]; then
      # shellcheck disable=SC2086
      kill -KILL $pids 2>/dev/null || true
      sleep 1
    else
      log "processes still run inside $ROOT ($(echo $pids)); mounts kept"
      return 0
    fi
  fi
  unmount_tree "$ROOT"
}

case "${1:-}" in
  root) build; mount_tree; echo "$ROOT" ;;
  build) build; echo "$ROOT" ;;
  version) build; installed_version ;;
  unmount) unmount "${2:-}" ;;
  status)
    echo "root $ROOT version $(installed_version || echo none)"
    awk -v d="$ROOT" 'index($2, d "/") == 1 {print "mounted " $2}' /proc/mounts
    echo "processes inside: $(inside_pids | tr '\n' ' ')" ;;
  *) sed -n '6,12p' "$0" >&2; exit 2 ;;
esac
