#!/bin/sh
# The image's ENTRYPOINT: runs sluice with the arguments it is given (the image's CMD or those of
# "docker run IMAGE ..."), replacing itself, so sluice is PID 1 and gets the stop signal.
#
# One exception, so that a plain "docker run IMAGE" starts: when the arguments name the image's
# default key path (--state-key-file /run/secrets/sluice-state-key) and nothing is there, that
# option is dropped with a warning, and sluice seals with the key in $SLUICE_STATE_KEY if set,
# else with a random key it generates for this process (rounds then end when the container
# stops and are not shared with other replicas). Any other key path, and a key file that exists
# but is unreadable or too open, reach sluice unchanged and fail its own checks as usual.
#
# Written for POSIX sh: debian:bookworm-slim's dash. tests/deploy/test_deploy.py runs it outside
# any image (SLUICE_ENTRYPOINT_EXEC names the program to start instead of the installed sluice).
set -eu
default_key=/run/secrets/sluice-state-key
sluice=${SLUICE_ENTRYPOINT_EXEC:-/usr/local/bin/sluice}

# Prints one log line on stderr in the format sluice's own lines will have (--log-format).
warn() {
  json=0 prev=
  for a in "$@"; do
    [ "$prev" = --log-format ] && [ "$a" = json ] && json=1
    [ "$a" = -- ] && break
    prev=$a
  done
  if [ "$json" = 1 ]; then
    printf '{"ts":"%s","level":"warning","source":"entrypoint","msg":"%s"}\n' \
      "$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)" "$msg" >&2
  else
    printf 'sluice: warning: %s\n' "$msg" >&2
  fi
}

# Is the default key path named (as sluice's own options, before any upstream command) and
# absent? Only options that take a value are skipped with their value, as sluice parses them.
drop=0 i=0 skip=0
for a in "$@"; do
  i=$((i + 1))
  if [ "$skip" = 1 ]; then
    skip=0
    if [ "$prev" = --state-key-file ] && [ "$a" = "$default_key" ] && [ ! -e "$a" ]; then
      drop=$((i - 1))
    fi
    continue
  fi
  case $a in
    --) break ;;
    --strict|--watch-policy|-h|--help|-V|--version) ;;
    -?*) skip=1 ;;
    *) break ;;
  esac
  prev=$a
done

if [ "$drop" != 0 ]; then
  if [ -n "${SLUICE_STATE_KEY:-}" ]; then
    msg="no key at $default_key: using the key in SLUICE_STATE_KEY"
  else
    msg="no key at $default_key: sealing with a key generated for this process; confirmations end when it stops and are not shared with other replicas (mount a 32-byte key there, mode 0600, owned by 10001)"
  fi
  # Rebuild "$@" without the two words at positions drop and drop+1.
  i=0
  for a in "$@"; do
    i=$((i + 1))
    [ "$i" = 1 ] && set --
    if [ "$i" != "$drop" ] && [ "$i" != $((drop + 1)) ]; then
      set -- "$@" "$a"
    fi
  done
  warn "$@"
fi
exec "$sluice" "$@"
