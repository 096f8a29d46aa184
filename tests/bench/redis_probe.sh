#!/usr/bin/env bash
# What a gated pair costs each process: one loadgen run of gated pairs against one sluice with
# the Redis store (or the memory store), then the CPU time that sluice, redis-server and the
# echo upstream spent over it, per pair (and the kernel's share of it), and Redis's commandstats; with --syscalls also the
# system calls per pair of sluice and redis-server (perf stat); with --callgrind, redis-server
# runs under callgrind and the instructions it spent per pair are counted (they do not depend on
# what else runs, as its CPU time does). A probe for work on the Redis row of run.sh's gated
# section (tests/bench/README.md), not a benchmark: one run, no rounds, nothing compared.
#
# usage: tests/bench/redis_probe.sh [--store redis|memory] [--duration SECONDS]
#                                   [--connections N] [--principals N] [--syscalls] [--callgrind]
# env: BUILD (default <repo>/build), SLUICE (default $BUILD/proxy/sluice)
# Needs redis-server and redis-cli; --syscalls needs perf, --callgrind valgrind. Children are
# stopped on exit.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
SLUICE=${SLUICE:-$BUILD/proxy/sluice}
STORE=redis DURATION=4 CONNS=16 PRINCIPALS=256 SYSCALLS=false CALLGRIND=false
while [ $# -gt 0 ]; do
  case "$1" in
    --store) STORE=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --connections) CONNS=$2; shift 2 ;;
    --principals) PRINCIPALS=$2; shift 2 ;;
    --syscalls) SYSCALLS=true; shift ;;
    --callgrind) CALLGRIND=true; shift ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "redis_probe: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$STORE" in redis|memory) ;; *) echo "redis_probe: --store is redis or memory" >&2; exit 2 ;; esac
if $CALLGRIND && [ "$STORE" != redis ]; then echo "redis_probe: --callgrind is for --store redis" >&2; exit 2; fi
# not built by default (tests/bench/meson.build): asked for here, as run.sh does
if [ ! -x "$BUILD/tests/bench/loadgen" ] || [ ! -x "$BUILD/tests/bench/echo_upstream" ]; then
  ninja -C "$BUILD" tests/bench/echo_upstream tests/bench/loadgen >&2 || true
fi
for f in "$SLUICE" "$BUILD/tests/bench/loadgen" "$BUILD/tests/bench/echo_upstream"; do
  [ -x "$f" ] || { echo "redis_probe: $f is missing (build first)" >&2; exit 1; }
done

TMP=$(mktemp -d)
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$TMP"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
wait_port() {
  local i
  for i in $(seq 1 200); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    sleep 0.05
  done
  echo "redis_probe: nothing listens on 127.0.0.1:$1 after 10 s" >&2
  exit 1
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
sys_ticks() { awk '{print $15}' "/proc/$1/stat"; }  # the kernel's share (loopback TCP is dear)
# all cores' ticks, their idle ones (idle + iowait): the share of the cores nothing used, and
# the ticks the hypervisor took (steal): on a shared VM the runs that lose most are the ones
# whose chain of round trips waits most for a core
all_ticks() {
  awk '/^cpu / { t = 0; for (i = 2; i <= NF; i++) t += $i; print t, $5 + $6, $9 }' /proc/stat
}

RPORT=$(free_port)
VG=()
$CALLGRIND && VG=(valgrind --tool=callgrind --callgrind-out-file="$TMP/callgrind.redis")
"${VG[@]}" redis-server --port "$RPORT" --bind 127.0.0.1 --save '' --appendonly no \
  --dir "$TMP" > "$TMP/redis.log" 2>&1 &
RPID=$!; PIDS+=("$RPID")
wait_port "$RPORT"

"$BUILD/tests/bench/echo_upstream" --http 0 > "$TMP/echo.log" 2>&1 &
EPID=$!; PIDS+=("$EPID")
for _ in $(seq 1 200); do grep -q '^listening' "$TMP/echo.log" && break; sleep 0.05; done
EPORT=$(sed -n 's/^listening 127.0.0.1://p' "$TMP/echo.log")
[ -n "$EPORT" ] || { echo "redis_probe: echo_upstream did not start" >&2; exit 1; }

SPORT=$(free_port)
store=memory
[ "$STORE" = redis ] && store=redis://127.0.0.1:$RPORT
"$SLUICE" --policy "$HERE/policy-gated.yaml" --log-level warning \
  --principal header:X-Bench-Principal --result-retention 0 --store "$store" \
  --listen "127.0.0.1:$SPORT" --upstream "http://127.0.0.1:$EPORT/mcp" > "$TMP/sluice.log" 2>&1 &
SPID=$!; PIDS+=("$SPID")
wait_port "$SPORT"

load() {
  "$BUILD/tests/bench/loadgen" --url "http://127.0.0.1:$SPORT/mcp" --connections "$CONNS" \
    --duration "$1" --era modern --pair gated --principal-header X-Bench-Principal --principals "$PRINCIPALS"
}
load 1 > /dev/null 2>&1 || true  # warm-up (under --callgrind some of its calls may time out)
redis-cli -p "$RPORT" config resetstat > /dev/null
$CALLGRIND && callgrind_control -z "$RPID" > /dev/null 2>&1
s0=$(cpu_ticks "$SPID"); r0=$(cpu_ticks "$RPID"); e0=$(cpu_ticks "$EPID"); read -r t0 i0 st0 < <(all_ticks)
ks0=$(sys_ticks "$SPID"); kr0=$(sys_ticks "$RPID"); ke0=$(sys_ticks "$EPID")
PERFS=()
if $SYSCALLS; then
  ev=syscalls:sys_enter_read,syscalls:sys_enter_write,syscalls:sys_enter_writev
  ev=$ev,syscalls:sys_enter_readv,syscalls:sys_enter_sendto,syscalls:sys_enter_recvfrom
  ev=$ev,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_epoll_ctl,syscalls:sys_enter_ioctl
  perf stat -x, -e "$ev" -p "$SPID" -o "$TMP/stat.sluice" > /dev/null 2>&1 & PERFS+=($!)
  perf stat -x, -e "$ev" -p "$RPID" -o "$TMP/stat.redis" > /dev/null 2>&1 & PERFS+=($!)
  sleep 0.3
fi
load "$DURATION" > "$TMP/load.txt" 2>&1
for p in "${PERFS[@]}"; do kill -INT "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
s1=$(cpu_ticks "$SPID"); r1=$(cpu_ticks "$RPID"); e1=$(cpu_ticks "$EPID"); read -r t1 i1 st1 < <(all_ticks)
ks1=$(sys_ticks "$SPID"); kr1=$(sys_ticks "$RPID"); ke1=$(sys_ticks "$EPID")

grep -E '^loadgen:' "$TMP/load.txt" || { cat "$TMP/load.txt" >&2; exit 1; }
good=$(sed -n 's/.* \([0-9]*\) good,.*/\1/p' "$TMP/load.txt" | head -1)
[ -n "$good" ] && [ "$good" -gt 0 ] || { echo "redis_probe: no pair completed" >&2; exit 1; }
hz=$(getconf CLK_TCK)
per_pair() { awk -v t="$1" -v hz="$hz" -v n="$good" 'BEGIN { printf "%.1f", t / hz * 1e6 / n }'; }
echo "store $STORE: $good pairs completed over the whole loadgen run (its warm-up second too, as the CPU times)"
echo "CPU us per pair: sluice $(per_pair $((s1 - s0))), redis-server $(per_pair $((r1 - r0)))," \
     "echo upstream $(per_pair $((e1 - e0)))"
echo "... of which in the kernel: sluice $(per_pair $((ks1 - ks0))), redis-server" \
     "$(per_pair $((kr1 - kr0))), echo upstream $(per_pair $((ke1 - ke0)))"
# with the CPU times above, what the load generator and the rest of the machine took: a row
# bound by its processes' CPU leaves little idle; one bound by waits (a chain of round trips at
# too few connections) leaves a lot
awk -v t=$((t1 - t0)) -v i=$((i1 - i0)) -v s=$((st1 - st0)) 'BEGIN { if (t > 0)
  printf "cores idle during the run: %.0f%%, taken by the hypervisor (steal): %.0f%%\n",
         100 * i / t, 100 * s / t }'
if $SYSCALLS; then
  for who in sluice redis; do
    printf 'system calls per pair, %s:' "$who"
    awk -F, -v n="$good" '$3 ~ /sys_enter_/ && $1 + 0 > 0 {
      sub(/.*sys_enter_/, "", $3); printf " %s %.2f", $3, $1 / n } END { print "" }' \
      "$TMP/stat.$who"
  done
fi
if $CALLGRIND; then
  # the counters were zeroed before this loadgen run: the dump is its pairs' alone (the ones
  # completed; a pair that timed out under callgrind counts against the others)
  callgrind_control -d "$RPID" > /dev/null 2>&1
  ir=$(cat "$TMP"/callgrind.redis.* | sed -n 's/^summary: \([0-9]*\).*/\1/p' | head -1)
  if [ -n "$ir" ]; then
    echo "redis-server instructions per pair (callgrind, $good pairs): $((ir / good))"
  else
    echo "redis_probe: no callgrind dump" >&2
  fi
fi
if [ "$STORE" = redis ]; then
  echo "Redis commandstats (the scripts' inner commands are counted in both):"
  redis-cli -p "$RPORT" info commandstats | grep '^cmdstat' | grep -v 'config|' | cut -d, -f1-3
fi
