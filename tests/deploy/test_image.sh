#!/usr/bin/env bash
# The container image, built and run for real. No image registry is reachable, so the base is
# made from Debian's packages: mmdebstrap writes a minbase bookworm into a tarball (from the
# host's apt sources), podman imports it, and deploy/Containerfile is built on it for both stages
# (--build-arg BUILD_BASE/RUN_BASE, --pull=never). Then:
#   1. with a mounted policy and key, on the host's loopback at a free port (--network host,
#      --listen 127.0.0.1:PORT): /readyz answers, the image's HEALTHCHECK passes on that port
#      (not the EXPOSEd 8080), deb_round.mjs drives a confirmation round over HTTP through it
#      (the demo server must hold what the approved call wrote), SIGTERM stops it with status 0;
#   2. a plain `run IMAGE` with no argument and no key (--network none: the default CMD's
#      0.0.0.0:8080 is then the container's own loopback): it starts, logs the entry point's
#      warning as a JSON line, and its HEALTHCHECK passes on 8080;
#   3. the pair of the compose and Kubernetes examples: deploy/mcp-everything/Containerfile
#      (server-everything, pinned) built and started on a free loopback port, sluice's image in
#      front of it with deploy/policy.everything.yaml, and a confirmation round for get-env whose
#      answer only the server can give (its PORT).
# Every container and the private podman storage (a scratch --root) are removed on the way out.
#
# Settings for this kind of machine (a VM with hybrid cgroups and capped rlimits): runc (crun
# refuses hybrid cgroups), cgroupfs, nofile/nproc ulimits within the host's limits, host network
# for the build's apt-get. Without podman, mmdebstrap, runc or node the test is skipped (TAP
# 1..0), except under CI=true as root, where it installs them with apt-get first. Output is TAP.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
sluice_host=${SLUICE_BIN:-$root/build/proxy/sluice}
n=0
ok() { n=$((n + 1)); echo "ok $n $1"; }
not_ok() { n=$((n + 1)); echo "not ok $n $1"; sed 's/^/# /' <<<"${2:-}"; }
check() { # check NAME CMD...: one TAP line for CMD's status, its output as comments on failure
  local name=$1 out; shift
  if out=$("$@" 2>&1); then ok "$name"; else not_ok "$name" "$out"; fi
}
bail() { not_ok "$1" "${2:-}"; echo "1..$n"; exit 0; }

missing() {
  local m=()
  for tool in podman mmdebstrap runc node; do command -v "$tool" >/dev/null || m+=("$tool"); done
  echo "${m[*]}"
}
if [ -n "$(missing)" ] && [ "${CI:-}" = "true" ] && [ "$(id -u)" = 0 ]; then
  # With what podman only recommends (fuse-overlayfs, slirp4netns, uidmap, catatonit): the set
  # this test was written and run with.
  echo "# installing podman mmdebstrap runc (CI=true)"
  set -- podman mmdebstrap runc fuse-overlayfs slirp4netns uidmap catatonit
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" \
    >/dev/null 2>&1 ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        --no-install-recommends "$@" >/dev/null; }
fi
if [ -n "$(missing)" ]; then
  [ "${CI:-}" = "true" ] && bail "tools present under CI=true" "missing: $(missing)"
  echo "1..0 # SKIP missing $(missing) (apt-get install podman mmdebstrap runc)"
  exit 0
fi

scratch=$(mktemp -d "${TMPDIR:-/var/tmp}/sluice-imagetest.XXXXXX")
tag=localhost/sluice-imagetest:$$
base=localhost/sluice-imagetest-base:$$
pod() {
  podman --root "$scratch/storage" --runroot "$scratch/run" --tmpdir "$scratch/tmp" \
    --storage-driver overlay --runtime runc --cgroup-manager cgroupfs --events-backend none "$@"
}
limits=(--ulimit nofile=4096:4096 --ulimit nproc=4096:4096)
containers=()
cleanup() {
  local c
  for c in "${containers[@]}"; do pod rm -f -t 5 "$c" >/dev/null 2>&1; done
  pod rmi -af >/dev/null 2>&1
  rm -rf "$scratch"
}
trap cleanup EXIT
mkdir -p "$scratch/tmp"
t0=$(date +%s)
elapsed() { echo "$(($(date +%s) - t0)) s"; }

# The host's apt sources (not a mirror named here), and its Check-Valid-Until setting: a mirror
# snapshot may carry an expired Release file.
sources=()
[ -n "$(grep -v '^\s*#' /etc/apt/sources.list 2>/dev/null | grep -v '^\s*$')" ] && sources+=(/etc/apt/sources.list)
for f in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
  [ -f "$f" ] && sources+=("$f")
done
[ ${#sources[@]} -gt 0 ] || bail "the host has apt sources for mmdebstrap"
if ! mmdebstrap --variant=minbase --aptopt='Acquire::Check-Valid-Until "false"' bookworm \
     "$scratch/base.tar" "${sources[@]}" >"$scratch/mmdebstrap.log" 2>&1; then
  bail "mmdebstrap makes a bookworm base" "$(tail -30 "$scratch/mmdebstrap.log")"
fi
ok "mmdebstrap makes a bookworm base ($(elapsed))"
check "podman imports it" pod import "$scratch/base.tar" "$base"
rm -f "$scratch/base.tar"

# --format docker: an OCI image would drop the HEALTHCHECK.
if ! (cd "$root" && pod build --format docker --network host "${limits[@]}" --pull=never \
        --build-arg BUILD_BASE="$base" --build-arg RUN_BASE="$base" \
        -f deploy/Containerfile --ignorefile deploy/Containerfile.dockerignore -t "$tag" .) \
     >"$scratch/build.log" 2>&1; then
  bail "deploy/Containerfile builds" "$(tail -40 "$scratch/build.log")"
fi
ok "deploy/Containerfile builds ($(elapsed))"
check "the image's HEALTHCHECK is the one of the Containerfile" bash -c \
  '[ "$1" = "[CMD /usr/local/bin/sluice-healthcheck]" ] || { echo "$1"; false; }' _ \
  "$(pod image inspect --format '{{.HealthCheck.Test}}' "$tag")"

# A free loopback port: bind port 0, read it, close (the container binds it a moment later).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
port=$(free_port)
umask 077
head -c 32 /dev/urandom >"$scratch/state.key"
chown 10001:10001 "$scratch/state.key"
cp "$root/policy.example.yaml" "$scratch/policy.yaml"
chmod 0644 "$scratch/policy.yaml"

# Waits (bounded) until PROBE-ARGS succeeds; prints the container's log on failure.
wait_for() { # wait_for CONTAINER CMD...: up to $WAIT_TRIES (100) tries 0.2 s apart
  local c=$1 i; shift
  for i in $(seq "${WAIT_TRIES:-100}"); do
    "$@" >/dev/null 2>&1 && return 0
    [ "$(pod inspect --format '{{.State.Running}}' "$c" 2>/dev/null)" = true ] || break
    sleep 0.2
  done
  pod logs "$c" 2>&1 | tail -20
  return 1
}

# 1. A mounted policy and key, on a free loopback port.
c1=sluice-imagetest-keyed-$$
containers+=("$c1")
if ! out=$(pod run -d --name "$c1" --network host "${limits[@]}" --read-only --cap-drop ALL \
             --security-opt no-new-privileges \
             -v "$scratch/policy.yaml:/etc/sluice/policy.yaml:ro" \
             -v "$scratch/state.key:/run/secrets/sluice-state-key:ro" \
             "$tag" --listen "127.0.0.1:$port" --policy /etc/sluice/policy.yaml \
             --state-key-file /run/secrets/sluice-state-key --log-format json 2>&1); then
  bail "the image starts with a mounted policy and key" "$out"
fi
check "the image starts with a mounted policy and key; /readyz answers on 127.0.0.1:$port" \
  wait_for "$c1" "$sluice_host" probe "http://127.0.0.1:$port/readyz"
check "its HEALTHCHECK passes on the --listen port ($port), not 8080" pod healthcheck run "$c1"
check "a confirmation round through the container over HTTP" \
  node "$root/tests/deploy/deb_round.mjs" --url "http://127.0.0.1:$port/mcp"
check "it used the mounted key (no entry-point warning, no random key)" bash -c \
  '! grep -q -e "\"source\":\"entrypoint\"" -e "using a random key" <<<"$1" || { echo "$1"; false; }' \
  _ "$(pod logs "$c1" 2>&1)"
pod stop -t 30 "$c1" >/dev/null 2>&1
check "SIGTERM stops it with status 0" bash -c \
  '[ "$1" = 0 ] || { echo "exit status $1"; echo "$2" | tail -20; false; }' _ \
  "$(pod inspect --format '{{.State.ExitCode}}' "$c1")" "$(pod logs "$c1" 2>&1)"

# 2. A plain run: no argument, no key, its own network namespace (nothing reaches the host).
c2=sluice-imagetest-plain-$$
containers+=("$c2")
if ! out=$(pod run -d --name "$c2" --network none "${limits[@]}" "$tag" 2>&1); then
  bail "a plain run of the image starts" "$out"
fi
check "a plain run without a key starts; its HEALTHCHECK passes on 8080" \
  wait_for "$c2" pod healthcheck run "$c2"
check "it logs a JSON warning that it generated a key" bash -c \
  'grep "\"source\":\"entrypoint\"" <<<"$1" | grep -q "\"level\":\"warning\".*generated" || { echo "$1"; false; }' \
  _ "$(pod logs "$c2" 2>&1)"
check "sluice itself says it seals with a random key" bash -c \
  'grep -q "using a random key" <<<"$1" || { echo "$1"; false; }' _ "$(pod logs "$c2" 2>&1)"
pod stop -t 30 "$c2" >/dev/null 2>&1
check "SIGTERM stops the plain run with status 0" bash -c \
  '[ "$1" = 0 ] || { echo "exit status $1"; false; }' _ "$(pod inspect --format '{{.State.ExitCode}}' "$c2")"
# 3. The examples' pair: server-everything built from deploy/mcp-everything/Containerfile (on
#    the base plus Debian's nodejs and npm, in place of the node image) and sluice in front of it
#    over Streamable HTTP with deploy/policy.everything.yaml, both on the host's loopback. The
#    server's npm install sees the host's CA bundle and npm configuration (a TLS-inspecting
#    proxy's CA may be in them), mounted read-only into the build.
mkdir -p "$scratch/nodebase"
printf '%s\n' 'ARG BASE' 'FROM ${BASE}' \
  'RUN apt-get update && apt-get install -y --no-install-recommends nodejs npm ca-certificates && rm -rf /var/lib/apt/lists/*' \
  >"$scratch/nodebase/Containerfile"
nodebase=localhost/sluice-imagetest-node:$$
evtag=localhost/sluice-imagetest-everything:$$
host_config=()
for f in /etc/ssl/certs/ca-certificates.crt /etc/npmrc; do
  [ -f "$f" ] && host_config+=(-v "$f:$f:ro")
done
if ! pod build --network host "${limits[@]}" --pull=never --build-arg BASE="$base" -t "$nodebase" \
       "$scratch/nodebase" >"$scratch/nodebase.log" 2>&1; then
  bail "a base with Debian's nodejs and npm builds" "$(tail -30 "$scratch/nodebase.log")"
fi
if ! (cd "$root" && pod build --format docker --network host "${limits[@]}" --pull=never \
        "${host_config[@]}" --build-arg NODE_BASE="$nodebase" \
        -f deploy/mcp-everything/Containerfile \
        --ignorefile deploy/mcp-everything/Containerfile.dockerignore -t "$evtag" .) \
     >"$scratch/everything.log" 2>&1; then
  bail "deploy/mcp-everything/Containerfile builds" "$(tail -40 "$scratch/everything.log")"
fi
ok "deploy/mcp-everything/Containerfile builds ($(elapsed))"
evport=$(free_port)
c3=sluice-imagetest-everything-$$
containers+=("$c3")
# Debian 12's node is 18, where the SDK's global crypto needs a flag (the image's own base,
# node:22, has it); the image's preload stays in NODE_OPTIONS.
if ! out=$(pod run -d --name "$c3" --network host "${limits[@]}" --read-only --cap-drop ALL \
             --security-opt no-new-privileges -e HOST=127.0.0.1 -e PORT="$evport" \
             -e NODE_OPTIONS="--require=/opt/mcp/preload.cjs --experimental-global-webcrypto" \
             "$evtag" 2>&1); then
  bail "the everything server starts" "$out"
fi
port3=$(free_port)
c4=sluice-imagetest-front-$$
containers+=("$c4")
if ! out=$(pod run -d --name "$c4" --network host "${limits[@]}" --read-only --cap-drop ALL \
             --security-opt no-new-privileges \
             -v "$root/deploy/policy.everything.yaml:/etc/sluice/policy.yaml:ro" \
             -v "$scratch/state.key:/run/secrets/sluice-state-key:ro" \
             "$tag" --listen "127.0.0.1:$port3" --upstream "http://127.0.0.1:$evport/mcp" \
             --policy /etc/sluice/policy.yaml --state-key-file /run/secrets/sluice-state-key \
             --log-format json 2>&1); then
  bail "sluice starts in front of the everything server" "$out"
fi
# node takes seconds to start on a busy machine: up to 60 s for sluice's /readyz.
WAIT_TRIES=300 check "sluice in front of the everything server is ready (upstream reached over HTTP)" \
  wait_for "$c4" "$sluice_host" probe "http://127.0.0.1:$port3/readyz"
check "the everything server listens on 127.0.0.1:$evport only (its HOST)" python3 - "$evport" <<'PY'
import sys
port, found = int(sys.argv[1]), []
for table in ("/proc/net/tcp", "/proc/net/tcp6"):
    for line in open(table).read().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        addr, p = local.split(":")
        if int(p, 16) == port and state == "0A":
            found.append(addr)
if not found or any(a not in ("0100007F", "0000000000000000FFFF00000100007F") for a in found):
    sys.exit(f"listening addresses (hex) on {port}: {found}")
PY
check "a confirmation round through sluice to the everything server (get-env ran there)" \
  env EVERYTHING_PORT="$evport" node "$root/tests/deploy/deb_round.mjs" --url "http://127.0.0.1:$port3/mcp" --everything
pod stop -t 10 "$c3" >/dev/null 2>&1
check "the everything server exits on SIGTERM (status 0, no kill)" bash -c \
  '[ "$1" = 0 ] || { echo "exit status $1"; false; }' _ "$(pod inspect --format '{{.State.ExitCode}}' "$c3")"
pod stop -t 30 "$c4" >/dev/null 2>&1
echo "# total $(elapsed)"
echo "1..$n"
exit 0
