#!/usr/bin/env bash
# The soak test ("faults under load"): bash tests/soak/run.sh [SECONDS]
# SECONDS (default 120, or $SOAK_SECONDS) bounds the whole run. SLUICE_BIN picks the binary
# (default build/proxy/sluice). Needs Node.js 20 or later; see tests/soak/README.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v node >/dev/null 2>&1; then
    echo "soak: node (Node.js 20 or later) is required" >&2
    exit 2
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
    echo "soak: Node.js 20 or later is required (found $(node --version))" >&2
    exit 2
fi
export SOAK_SECONDS="${1:-${SOAK_SECONDS:-120}}"
export SLUICE_BIN="${SLUICE_BIN:-build/proxy/sluice}"
# Sanitizer builds: fail on the first report, and let LeakSanitizer check at exit.
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
exec node tests/soak/soak.mjs
