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
#   tests/mutation/run.sh [--list] [--check] [--compiles BUILD] [--only ID[,ID...]] [--jobs N]
#                         [--deadline T] [--rev REV] [--keep]
#     --list      list the mutants and exit
#     --check     only check that every snippet occurs exactly once (no build)
#     --compiles BUILD  only check the snippets and that every mutant of a C file compiles with
#                 the flags of build directory BUILD (-fsyntax-only, -Werror included; about a
#                 minute): a run fails on an INVALID mutant only when it draws it, this always
#     --only      run these mutants only
#     --jobs N    N scratch trees working in parallel (default 1; 2 on a 2-core machine)
#     --deadline T  start no mutant after T (seconds since the epoch): the ones left are listed
#                 as NOT RUN and do not fail the check. CI gives one so that a slow machine still
#                 finishes in its time; the order is shuffled by the commit, so a cut falls on
#                 other mutants at the next commit. Without it every mutant runs.
#     --rev REV   take the tracked files from git revision REV instead of the working tree
#                 (tests/mutation itself always comes from the working tree)
#     --keep      keep the scratch directory (its path is printed)
# Environment: MUTATION_TMP (where the scratch directory goes, default $TMPDIR or /tmp).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
py() { python3 "$here/mutate.py" "$@"; }

only="" jobs=1 rev="" keep=false deadline=
while [ $# -gt 0 ]; do
    case $1 in
        --list) py list | awk -F'\t' '{ printf "%-28s %-20s %s\n", $1, $2, $4 }'; exit 0 ;;
        --check) only_check=true ;;
        --compiles) compiles_in=$2; shift ;;
        --only) only=$2; shift ;;
        --jobs) jobs=$2; shift ;;
        --deadline) deadline=$2; shift ;;
        --rev) rev=$2; shift ;;
        --keep) keep=true ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "mutation: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
case $jobs in ''|*[!0-9]*|0) echo "mutation: --jobs needs a positive number" >&2; exit 2 ;; esac
case $deadline in *[!0-9]*) echo "mutation: --deadline needs seconds since the epoch" >&2; exit 2 ;; esac

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
if [ -n "${compiles_in:-}" ]; then
    if ! py compiles "$root" "$(cd "$compiles_in" && pwd)"; then
        echo "mutation: FAILED: the mutants above do not compile (fix their replacements)" >&2
        exit 1
    fi
    echo "mutation: all $(py list | wc -l) snippets occur exactly once; every mutant compiles"
    exit 0
fi

# In an order shuffled by the commit (stable for one tree, different at the next), so that when
# --deadline cuts a run short it is not always the same mutants that go unrun.
seed=$(git -C "$root" rev-parse HEAD 2>/dev/null || echo 0)
mapfile -t ids < <(py list | cut -f1 | while IFS= read -r id; do
    printf '%s %s\n' "$(printf '%s %s' "$seed" "$id" | sha256sum | cut -c1-16)" "$id"; done |
    sort | cut -d' ' -f2)
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
    # Without LTO: it would redo code generation at every test's link, for every mutant. With
    # shared libraries: a mutant then recompiles its file and relinks one library, and ninja
    # relinks no test program unless the library's exported symbols changed (4.4 s -> 1.2 s for
    # a mutant of gate.c, measured; each of 40 programs relinked the static libraries before).
    meson setup "$build" "$src" -Db_lto=false -Ddefault_library=shared -Dwerror=true \
        >"$scratch/setup$1.log" 2>&1 &&
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

# Keeps only the test names this build defines (the HTTP e2e files may not exist yet). The
# build's list is read once ($scratch/tests): every scratch tree defines the same tests.
known_tests() { # names...
    local t
    for t in "$@"; do
        if grep -qx -- "$t" "$scratch/tests"; then echo "$t"; else
            echo "mutation: warning: no test named $t in this build" >&2; fi
    done
}

# A mutant's field from the list, read once ($scratch/list): 2 its file, 3 its tests.
field() { # id n
    awk -F'\t' -v id="$1" -v n="$2" '$1 == id { print $n }' "$scratch/list"
}

echo "mutation: ${#ids[@]} mutants, $jobs worker(s), scratch $scratch"
for ((w = 1; w <= jobs; w++)); do setup_worker "$w" & done
fail_setup=false
for ((w = 1; w <= jobs; w++)); do wait -n || fail_setup=true; done
if $fail_setup; then
    echo "mutation: FAILED: the unmutated tree does not build:" >&2
    tail -n 30 "$scratch"/setup*.log >&2
    exit 1
fi

# Baseline: the unmutated tree must pass everything the mutants will run, or every mutant would
# look caught. It runs before any mutant, alone: beside a worker's mutant, the timing bounds of
# e2e-quadratic failed (CI, 1a7e962).
b="$scratch/build1"
py list >"$scratch/list"
meson test -C "$b" --list --no-rebuild 2>/dev/null | sed 's/.* \/ //' >"$scratch/tests"
read -r -a fast <<<"$(fast_suites "$b")"
mapfile -t all_e2e < <(known_tests $(py tests "${ids[@]}"))
echo "mutation: baseline (suites $(printf '%s ' "${fast[@]}" | sed 's/--suite //g; s/ $//'); tests ${all_e2e[*]:-none})"
base_failed() { # log
    echo "mutation: FAILED: the unmutated tree fails its tests; fix that first:" >&2
    grep -E '^ *[0-9]+/[0-9]+ .*(FAIL|TIMEOUT)' "$1" >&2 || tail -30 "$1" >&2
    exit 1
}
meson test -C "$b" --no-rebuild --print-errorlogs "${fast[@]}" >"$scratch/baseline.log" 2>&1 ||
    base_failed "$scratch/baseline.log"
if [ ${#all_e2e[@]} -gt 0 ]; then
    E2E_BAIL=1 meson test -C "$b" --no-rebuild --print-errorlogs "${all_e2e[@]}" \
        >>"$scratch/baseline.log" 2>&1 || base_failed "$scratch/baseline.log"
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
    file=$(field "$id" 2)
    cp "$src/$file" "$scratch/pristine$w"
    local log="$scratch/log-$id"
    py apply "$src" "$id" >/dev/null 2>"$log" || { echo "$id INVALID 0 could not apply: $(cat "$log")"; return; }
    if ! meson compile -C "$build" >>"$log" 2>&1; then
        status=INVALID detail="does not build (see below)"
    elif ! meson test -C "$build" --no-rebuild --print-errorlogs --timeout-multiplier 0.25 --maxfail 1 \
            "${fast[@]}" >>"$log" 2>&1; then
        status=caught
        detail=$(grep -E '^ *[0-9]+/[0-9]+ .*(FAIL|TIMEOUT)' "$log" | sed -E 's/^ *[0-9]+\/[0-9]+ +//; s/ +(FAIL|TIMEOUT).*/ \1/' | sort -u | head -3 | paste -sd, -)
    else
        mapfile -t e2e < <(known_tests $(field "$id" 3 | tr ',' ' ' | sed 's/^-$//') 2>>"$log")
        if [ ${#e2e[@]} -gt 0 ] && ! meson test -C "$build" --no-rebuild --print-errorlogs \
                --timeout-multiplier 0.25 --maxfail 1 "${e2e[@]}" >>"$log" 2>&1; then
            status=caught
            detail=$(grep -E '^ *[0-9]+/[0-9]+ .*(FAIL|TIMEOUT)' "$log" | sed -E 's/^ *[0-9]+\/[0-9]+ +//; s/ +(FAIL|TIMEOUT).*/ \1/' | sort -u | head -3 | paste -sd, -)
        else
            status=SURVIVED
            detail="suites $(printf '%s ' "${fast[@]}" | sed 's/--suite //g; s/ $//')${e2e[*]:+ + ${e2e[*]}} all passed"
        fi
    fi
    reap_strays "$w" "$log"
    rm -rf "$scratch/tmp$w" && mkdir "$scratch/tmp$w"
    cp "$scratch/pristine$w" "$src/$file"
    echo "$id $status $(( $(date +%s) - t0 )) ${detail:-}"
}

# The index of the next mutant to run, from a counter the workers share: a worker that drew
# quick mutants takes more of them, rather than wait for one that drew the slow ones.
next_index() {
    (
        flock 9
        local n
        n=$(<"$scratch/queue")
        echo $((n + 1)) >"$scratch/queue"
        echo "$n"
    ) 9>"$scratch/queue.lock"
}

worker() { # worker id
    local w=$1 i line
    # The tests' temporary files go under the scratch tree, emptied after each mutant: a test
    # stopped at its first failure (E2E_BAIL) or killed at a timeout leaves its own behind.
    mkdir -p "$scratch/tmp$w"
    while i=$(next_index) && [ "$i" -lt "${#ids[@]}" ]; do
        if [ -n "$deadline" ] && [ "$(date +%s)" -ge "$deadline" ]; then
            line="${ids[$i]} NOT-RUN 0 the --deadline had passed"
        else
            line=$(TMPDIR="$scratch/tmp$w" run_one "$w" "${ids[$i]}")
        fi
        echo "$line" >>"$scratch/results"
        printf 'mutation: [%d/%d] %s\n' "$(wc -l <"$scratch/results")" "${#ids[@]}" "$line"
    done
}

# A test file stops at its first failure (tests/e2e/bail.mjs): one failure is all a catch needs.
export E2E_BAIL=1
: >"$scratch/results"
echo 0 >"$scratch/queue"
for ((w = 1; w <= jobs; w++)); do worker "$w" & done
wait

# ===== summary =====
total=${#ids[@]}
caught=$(awk '$2 == "caught"' "$scratch/results" | wc -l)
survived=$(awk '$2 == "SURVIVED" { print $1 }' "$scratch/results")
invalid=$(awk '$2 == "INVALID" { print $1 }' "$scratch/results")
notrun=$(awk '$2 == "NOT-RUN" { print $1 }' "$scratch/results")
echo
echo "mutation: caught $caught of $total in $(( $(date +%s) - start )) s"
if [ -n "$notrun" ]; then
    echo "mutation: NOT RUN, the --deadline had passed ($(echo "$notrun" | wc -l); run them with --only):"
    echo "$notrun" | paste -sd' ' - | fmt -w 100 | sed 's/^/  /'
fi
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
[ -z "$survived" ] && [ -z "$invalid" ] &&
    [ "$caught" -eq "$((total - $(awk '$2 == "NOT-RUN"' "$scratch/results" | wc -l)))" ]
