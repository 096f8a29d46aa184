#!/bin/sh
# The image's HEALTHCHECK: probes /healthz on the port sluice really listens on. A HEALTHCHECK
# cannot see the container's arguments, so this reads them from the running sluice
# (/proc/1/cmdline: sluice is PID 1, started by entrypoint.sh with exec) and finds --listen
# ADDR:PORT, as sluice parses its options: a wildcard address (0.0.0.0, [::]) is probed on
# 127.0.0.1, any other IPv4 address on itself. Exits with `sluice probe`'s status: 0 when /healthz
# answers 2xx. Without --listen (sluice on stdio) there is nothing to probe, and it says so and
# exits 0. With --tls-cert it exits 1: `sluice probe` speaks plain http only, so set your own
# health check (or none) for a TLS front.
#
# tests/deploy/test_deploy.py runs it outside any image: SLUICE_HEALTHCHECK_PID names the
# process to read instead of 1, SLUICE_HEALTHCHECK_EXEC the sluice to probe with.
set -eu
pid=${SLUICE_HEALTHCHECK_PID:-1}
sluice=${SLUICE_HEALTHCHECK_EXEC:-/usr/local/bin/sluice}

listen= tls=0 take= first=1
# The NUL-separated argv, one word a line (an argument holding a newline is not an address).
args=$(tr '\0' '\n' <"/proc/$pid/cmdline")
set -f
IFS='
'
for a in $args; do
  if [ "$first" = 1 ]; then first=0; continue; fi   # argv[0]
  if [ -n "$take" ]; then
    [ "$take" = --listen ] && listen=$a
    take=
    continue
  fi
  case $a in
    --) break ;;
    --tls-cert) tls=1; take=$a ;;
    --strict|--watch-policy) ;;
    -?*) take=$a ;;
    *) break ;;   # the upstream command starts here; its options are not sluice's
  esac
done

if [ -z "$listen" ]; then
  echo "sluice (pid $pid) has no --listen: nothing to probe"
  exit 0
fi
if [ "$tls" = 1 ]; then
  echo "sluice listens with TLS on $listen; sluice probe speaks http only: set your own health check" >&2
  exit 1
fi
host=${listen%:*}
port=${listen##*:}
case $host in
  0.0.0.0|'[::]') host=127.0.0.1 ;;   # a [::] listener is dual-stack (Linux's default)
  '['*)
    echo "sluice listens on $listen; sluice probe takes no IPv6 literal: set your own health check" >&2
    exit 1 ;;
esac
exec "$sluice" probe "http://$host:$port/healthz"
