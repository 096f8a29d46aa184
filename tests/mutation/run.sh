#!/usr/bin/env bash
# The mutation check: each mutant in tests/mutation/mutants.txt (a deliberate break of the
# security code) is applied alone to a scratch copy of the tree, which is rebuilt, and the tests
# must fail. A mutant is
#   caught     a test failed (the unit suite, the fuzz corpus replays when tests/fuzz is built,
#              then the e2e files the mutant names);
#   SURVIVED   every test passed: a missing test (or an equivalent mutant, to be replaced);
#   INVALID    it did not build: a broken mutant, which is not a catch.
# The check fails if a snippet is not found exactly once (the list rotted), if the unmutated tree
# does not build or pass, or if any mutant survives or is invalid.
#
#   tests/mutation/run.sh [--list] [--check] [--only ID[,ID...]] [--jobs N] [--rev REV] [--keep]
#     --list      list the mutants and exit
#     --check     only check that every snippet occurs exactly once (no build)
#     --only      run these mutants only
#     --jobs N    N scratch trees working in parallel (default 1; 2 on a 2-core machine)
#     --rev REV   take the tracked files from git revision REV instead of the working tree
#                 (tests/mutation itself always comes from the working tree)
#     --keep      keep the scratch directory (its path is printed)
# Environment: MUTATION_TMP (where the scratch directory goes, default $TMPDIR or /tmp).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
py() { python3 "$here/mutate.py" "$@"; }

only="" jobs=1 rev="" keep=false
while [ $# -gt 0 ]; do
    case $1 in
        --list) py list | awk -F'\t' '{ printf "%-28s %-20s %s\n", $1, $2, $4 }'; exit 0 ;;
        --check) only_check=true ;;
        --only) only=$2; shift ;;
        --jobs) jobs=$2; shift ;;
        --rev) rev=$2; shift ;;
        --keep) keep=true ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "mutation: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
case $jobs in ''|*[!0-9]*|0) echo "mutation: --jobs needs a positive number" >&2; exit 2 ;; esac

start=$(date +%s)
scratch=$(mktemp -d "${MUTATION_TMP:-${TMPDIR:-/tmp}}/sluice-mutation.XXXXXX")
cleanup() { if $keep; then echo "mutation: scratch kept in $scratch"; else rm -rf "$scratch"; fi; }
trap cleanup EXIT

# ===== the scratch trees =====

copy_tree() { # dest
    mkdir -p "$1"
    if [ -n "$rev" ]; then
        git -C "$root" archive "$rev" | tar -xf - -C "$1"
    elif ! git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        # Not a git checkout (an unpacked tarball): everything but builds and npm packages.
        (cd "$root" && tar --exclude=./.git --exclude='./build*' --exclude=node_modules -cf - .) |
            tar -xf - -C "$1"
    else
        (cd "$root" && git ls-files -co --exclude-standard |
            while IFS= read -r f; do [ -e "$f" ] && printf '%s\n' "$f"; done |
            tar -cf - -T -) | tar -xf - -C "$1"
    fi
    rm -rf "$1/tests/mutation"
    cp -r "$here" "$1/tests/mutation"
    # Test dependencies that live outside git (npm packages), shared read-only.
    for d in tests/differential tests/interop; do
        if [ -d "$root/$d/node_modules" ] && [ -d "$1/$d" ]; then
            ln -s "$root/$d/node_modules" "$1/$d/node_modules"
        fi
    done
}

mkdir -p "$scratch/src0"
copy_tree "$scratch/src0"
if ! py check "$scratch/src0"; then
    echo "mutation: FAILED: mutants.txt does not match the tree (fix the snippets above)" >&2
    exit 1
fi
if [ "${only_check:-false}" = true ]; then
    echo "mutation: all $(py list | wc -l) snippets occur exactly once"
    exit 0
fi

mapfile -t ids < <(py list | cut -f1)
if [ -n "$only" ]; then
    IFS=, read -r -a want <<<"$only"
    for w in "${want[@]}"; do
        printf '%s\n' "${ids[@]}" | grep -x -- "$w" >/dev/null || { echo "mutation: no mutant $w" >&2; exit 2; }
    done
    ids=("${want[@]}")
fi
[ "$jobs" -gt "${#ids[@]}" ] && jobs=${#ids[@]}

setup_worker() { # n: scratch tree n with a configured, built build dir
    local src="$scratch/src$1" build="$scratch/build$1"
    [ -d "$src" ] || { mkdir -p "$src"; (cd "$scratch/src0" && tar -cf - .) | tar -xf - -C "$src"; }
    # without LTO: it would redo code generation at every test's link, for every mutant
    meson setup "$build" "$src" -Db_lto=false -Dwerror=true >"$scratch/setup$1.log" 2>&1 &&
        meson compile -C "$build" >>"$scratch/setup$1.log" 2>&1
}

# The unit tests and, when the tree builds them, the fuzz corpus replays: fast, run for every
# mutant. Then the mutant's own e2e files.
fast_suites() { # build
    local s args=()
    for s in unit fuzz; do
        meson test -C "$1" --list --no-rebuild --suite "$s" >/dev/null 2>&1 && args+=(--suite "$s")
    done
    echo "${args[@]}"
}

# Keeps only the test names this build defines (the HTTP e2e files may not exist yet).
known_tests() { # build names...
    local build=$1 t
    shift
    local have
    have=$(meson test -C "$build" --list --no-rebuild 2>/dev/null | sed 's/.* \/ //')
    for t in "$@"; do
        if printf '%s\n' "$have" | grep -x -- "$t" >/dev/null; then echo "$t"; else
            echo "mutation: warning: no test named $t in this build" >&2; fi
    done
}

echo "mutation: ${#ids[@]} mutants, $jobs worker(s), scratch $scratch"
for ((w = 1; w <= jobs; w++)); do setup_worker "$w" & done
fail_setup=false
for ((w = 1; w <= jobs; w++)); do wait -n || fail_setup=true; done
if $fail_setup; then
    echo "mutation: FAILED: the unmutated tree does not build:" >&2
    tail -30 "$scratch"/setup*.log >&2
    exit 1
fi

# Baseline: the unmutated tree must pass everything the mutants will run, or every mutant would
# look caught.
b="$scratch/build1"
read -r -a fast <<<"$(fast_suites "$b")"
mapfile -t all_e2e < <(known_tests "$b" $(py tests "${ids[@]}"))
echo "mutation: baseline (suites $(printf '%s ' "${fast[@]}" | sed 's/--suite //g; s/ $//'); tests ${all_e2e[*]:-none})"
base_ok=true
meson test -C "$b" --no-rebuild --print-errorlogs "${fast[@]}" >"$scratch/baseline.log" 2>&1 || base_ok=false
if [ ${#all_e2e[@]} -gt 0 ]; then
    meson test -C "$b" --no-rebuild --print-errorlogs "${all_e2e[@]}" >>"$scratch/baseline.log" 2>&1 ||
        base_ok=false
fi
if ! $base_ok; then
    echo "mutation: FAILED: the unmutated tree fails its tests; fix that first:" >&2
    grep -E '^ *[0-9]+/[0-9]+ .*(FAIL|TIMEOUT)' "$scratch/baseline.log" >&2 || tail -30 "$scratch/baseline.log" >&2
    exit 1
fi
echo "mutation: baseline passes ($(( $(date +%s) - start )) s so far)"

# ===== the mutants =====

# A mutant's test can be stopped from outside: meson kills the test runner at a timeout or at
# --maxfail, its after-hooks never run, and the sluice it started is orphaned (one that a mutant
# made spin took a whole core for the rest of a CI run). Whatever still runs from this worker's
# tree is killed before its next mutant.
reap_strays() { # worker id, log
    local p exe
    for p in /proc/[0-9]*; do
        exe=$(readlink "$p/exe" 2>/dev/null) || continue
        if [[ $exe == "$scratch/build$1/"* ]] ||
           grep -qaF -- "$scratch/src$1/" "$p/cmdline" 2>/dev/null; then
            kill -9 "${p#/proc/}" 2>/dev/null &&
                echo "mutation: killed a stray left by the tests: pid ${p#/proc/} $exe" | tee -a "$2" >&2
        fi
    done
}

run_one() { # worker id
    local w=$1 id=$2 src="$scratch/src$1" build="$scratch/build$1" file t0 status detail
    t0=$(date +%s)
    file=$(py list | awk -F'\t' -v id="$id" '$1 == id { print $2 }')
    cp "$src/$file" "$scratch/pristine$w"
    local log="$scratch/log-$id"
    py apply "$src" "$id" >/dev/null 2>"$log" || { echo "$id INVALID 0 could not apply: $(cat "$log")"; return; }
    read -r -a fast_w <<<"$(fast_suites "$build")"
    if ! meson compile -C "$build" >>"$log" 2>&1; then
        status=INVALID detail="does not build (see below)"
    elif ! meson test -C "$build" --no-rebuild --print-errorlogs --timeout-multiplier 0.25 --maxfail 1 \
            "${fast_w[@]}" >>"$log" 2>&1; then
        status=caught
        detail=$(grep -E '^ *[0-9]+/[0-9]+ .*(FAIL|TIMEOUT)' "$log" | sed -E 's/^ *[0-9]+\/[0-9]+ +//; s/ +(FAIL|TIMEOUT).*/ \1/' | sort -u | head -3 | paste -sd, -)
    else
        mapfile -t e2e < <(known_tests "$build" $(py list | awk -F'\t' -v id="$id" '$1 == id { gsub(",", " ", $3); if ($3 != "-") print $3 }') 2>>"$log")
        if [ ${#e2e[@]} -gt 0 ] && ! meson test -C "$build" --no-rebuild --print-errorlogs \
                --timeout-multiplier 0.25 --maxfail 1 "${e2e[@]}" >>"$log" 2>&1; then
            status=caught
            detail=$(grep -E '^ *[0-9]+/[0-9]+ .*(FAIL|TIMEOUT)' "$log" | sed -E 's/^ *[0-9]+\/[0-9]+ +//; s/ +(FAIL|TIMEOUT).*/ \1/' | sort -u | head -3 | paste -sd, -)
        else
            status=SURVIVED
            detail="suites $(printf '%s ' "${fast_w[@]}" | sed 's/--suite //g; s/ $//')${e2e[*]:+ + ${e2e[*]}} all passed"
        fi
    fi
    reap_strays "$w" "$log"
    cp "$scratch/pristine$w" "$src/$file"
    echo "$id $status $(( $(date +%s) - t0 )) ${detail:-}"
}

worker() { # worker id: every jobs-th mutant from w
    local w=$1 i
    for ((i = w - 1; i < ${#ids[@]}; i += jobs)); do
        local line
        line=$(run_one "$w" "${ids[$i]}")
        echo "$line" >>"$scratch/results"
        printf 'mutation: [%d/%d] %s\n' "$(wc -l <"$scratch/results")" "${#ids[@]}" "$line"
    done
}

: >"$scratch/results"
for ((w = 1; w <= jobs; w++)); do worker "$w" & done
wait

# ===== summary =====
total=${#ids[@]}
caught=$(awk '$2 == "caught"' "$scratch/results" | wc -l)
survived=$(awk '$2 == "SURVIVED" { print $1 }' "$scratch/results")
invalid=$(awk '$2 == "INVALID" { print $1 }' "$scratch/results")
echo
echo "mutation: caught $caught of $total in $(( $(date +%s) - start )) s"
if [ -n "$survived" ]; then
    echo "mutation: SURVIVORS (a test is missing, or the mutant is equivalent):"
    for id in $survived; do
        py list | awk -F'\t' -v id="$id" '$1 == id { printf "  %s (%s): %s\n", $1, $2, $4 }'
    done
fi
if [ -n "$invalid" ]; then
    echo "mutation: INVALID (did not apply or build; fix the mutant):"
    for id in $invalid; do
        echo "  $id"
        grep -E 'error|Error' "$scratch/log-$id" 2>/dev/null | head -3 | sed 's/^/      /'
    done
fi
[ -z "$survived" ] && [ -z "$invalid" ] && [ "$caught" -eq "$total" ]
