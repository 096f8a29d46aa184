#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan + LSan) and runs each one for a bounded
# time on its seed corpus. Exits non-zero if any target crashes, leaks, times out, runs out of
# memory or breaks a property (the targets abort() then). See tests/fuzz/README.md.
#
#   tests/fuzz/run.sh [SECONDS_PER_TARGET]     default 30; 0 replays the seed corpus once
#
# Environment: FUZZ_TARGETS (default: every tests/fuzz/fuzz_*.c), FUZZ_BUILD_DIR (default
# build-fuzz/ at the top of the tree, which .gitignore covers), CC (default clang-14, else clang),
# FUZZ_RSS_MB (default 2048), FUZZ_TIMEOUT (seconds for one input, default 10).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
secs=${1:-30}
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}
targets=${FUZZ_TARGETS:-$(cd "$here" && ls fuzz_*.c | sed 's/^fuzz_//; s/\.c$//' | tr '\n' ' ')}
rss=${FUZZ_RSS_MB:-2048}
timeout=${FUZZ_TIMEOUT:-10}
if [ -z "${CC:-}" ]; then
    if command -v clang-14 >/dev/null 2>&1; then CC=clang-14; else CC=clang; fi
fi
case "$secs" in ''|*[!0-9]*) echo "usage: $0 [SECONDS_PER_TARGET]" >&2; exit 2 ;; esac

# The modules the targets reach: libsluice_core, the pure part of sluice (no libevent; http1 is
# the HTTP/1.1 head parser, not the transport), read from the meson files that build it so the
# two lists cannot drift. main.c (and session, upstream, the transports, cli, demo) stay out:
# main() would clash with libFuzzer's, and none of them is needed.
core_list() { # meson file, variable: the .c files of its "variable = ...files(" block
    # (no match is an empty list, which the caller reports: under pipefail grep's status would
    # end the script without a word)
    sed -n "/^$2 = .*files(/,/)/p" "$1" | { grep -o "'[a-z0-9_]*\.c'" || true; } | tr -d "'" |
        sed 's/\.c$//'
}
proxy_srcs=$(core_list "$root/proxy/meson.build" core_sources)
policy_srcs=$(core_list "$root/policy/meson.build" policy_lib)
if [ -z "$proxy_srcs" ] || [ -z "$policy_srcs" ]; then
    echo "fuzz: cannot read the core's sources from proxy/meson.build, policy/meson.build" >&2
    exit 2
fi

mkdir -p "$build/obj" "$build/artifacts" "$build/logs"
deps="yajl yaml-0.1 libcrypto"
pkg_cflags=$(pkg-config --cflags $deps)
pkg_libs="$(pkg-config --libs $deps) -lunistring" # libunistring-dev has no .pc file
san="-fsanitize=address,undefined -fno-sanitize-recover=all"
# The version is written once, in meson.build.
version=$(sed -n "s/^  version: '\(.*\)',\$/\1/p" "$root/meson.build")
[ -n "$version" ] || { echo "fuzz: no version in $root/meson.build" >&2; exit 1; }
cflags="-g -O1 -fno-omit-frame-pointer -std=gnu11 -D_GNU_SOURCE -DSLUICE_VERSION=\"$version\" -Wall -Wextra -Wno-unused-parameter
        -include $root/proxy/core_pure.h -I$root/proxy -I$root/policy $pkg_cflags"

echo "fuzz: building with $($CC --version | head -1) into $build"
objs=()
pids=()
compile() { # source object: an object for the fuzz library (coverage, no libFuzzer main)
    # shellcheck disable=SC2086
    $CC $cflags $san -fsanitize=fuzzer-no-link -c "$1" -o "$2"
}
for s in $proxy_srcs; do
    objs+=("$build/obj/$s.o"); compile "$root/proxy/$s.c" "$build/obj/$s.o" & pids+=($!)
done
for s in $policy_srcs; do
    objs+=("$build/obj/$s.o"); compile "$root/policy/$s.c" "$build/obj/$s.o" & pids+=($!)
done
# The yajl-based reader sluice used before its own: fuzz_reader's reference.
objs+=("$build/obj/yajl_reader.o"); compile "$here/yajl_reader.c" "$build/obj/yajl_reader.o" & pids+=($!)
for p in "${pids[@]}"; do wait "$p" || { echo "fuzz: build failed" >&2; exit 1; }; done
rm -f "$build/libsluice-fuzz.a"
ar rcs "$build/libsluice-fuzz.a" "${objs[@]}"
pids=()
for t in $targets; do
    # shellcheck disable=SC2086
    $CC $cflags $san -fsanitize=fuzzer "$here/fuzz_$t.c" "$build/libsluice-fuzz.a" $pkg_libs \
        -o "$build/fuzz_$t" & pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || { echo "fuzz: build failed" >&2; exit 1; }; done

export ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1:symbolize=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
failed=()
summary=()
for t in $targets; do
    seeds="$here/corpus/$t"
    work="$build/corpus/$t"
    log="$build/logs/$t.log"
    mkdir -p "$work"
    dict=()
    if [ -f "$here/$t.dict" ]; then
        dict=("-dict=$here/$t.dict")
    else
        case $t in jsonrpc|reader|canon|gate|argcheck) dict=("-dict=$here/json.dict") ;; esac
    fi
    if [ "$secs" = 0 ]; then
        mode=(-runs=0)
    else
        mode=("-max_total_time=$secs")
    fi
    echo "fuzz: fuzz_$t for ${secs}s (seeds $(ls "$seeds" | wc -l), log $log)"
    rc=0
    "$build/fuzz_$t" "${mode[@]}" "${dict[@]}" -rss_limit_mb="$rss" -timeout="$timeout" \
        -detect_leaks=1 -print_final_stats=1 -artifact_prefix="$build/artifacts/$t-" \
        "$work" "$seeds" >"$log" 2>&1 || rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    if [ $rc -ne 0 ] || grep -qE '^(==[0-9]+==)?ERROR: |runtime error:|^SUMMARY: ' "$log"; then
        failed+=("$t")
        summary+=("fuzz_$t: FAILED (exit $rc) after ${execs:-?} executions")
        echo "---- fuzz_$t: last lines of $log"
        tail -40 "$log"
        ls -1 "$build/artifacts/$t-"* 2>/dev/null | sed 's/^/---- reproducer: /' || true
    else
        summary+=("fuzz_$t: ok, ${execs:-?} executions in ${secs}s, corpus $(ls "$work" | wc -l) files")
    fi
done
echo "fuzz: summary"
printf '  %s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: FAILED: ${failed[*]} (reproduce: $build/fuzz_<target> <artifact>)" >&2
    exit 1
fi
