#!/usr/bin/env python3
"""mutate.py: reads tests/mutation/mutants.txt and applies one mutant to a tree (run.sh's helper).

  mutate.py list                 id, file, tests and description of every mutant (tab-separated)
  mutate.py check ROOT           every original snippet occurs exactly once in ROOT/<file>
  mutate.py apply ROOT ID        replaces the snippet of mutant ID in ROOT/<file>
  mutate.py tests [ID...]        the union of the extra tests the mutants (or these ones) name
  mutate.py compiles ROOT BUILD  every mutant of a C file compiles (-fsyntax-only, with BUILD's
                                 compile_commands.json): a mutant that does not is INVALID in a
                                 run, which fails it, but only when a run draws that mutant

The file format is documented at the top of mutants.txt. Exits 1 (with a message) when the list
is malformed or a snippet is not found exactly once, so the list cannot silently rot.
"""
import json
import os
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
NEWLINE = '\u23ce'  # ⏎ in a snippet is a line break
PIPE = '\u00a6'     # ¦ in a snippet is a literal |


def unescape(s):
    return s.replace(NEWLINE, '\n').replace(PIPE, '|')


def load(path=os.path.join(HERE, 'mutants.txt')):
    mutants, seen = [], set()
    with open(path, encoding='utf-8') as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip('\n')
            if not line.strip() or line.lstrip().startswith('#'):
                continue
            parts = line.split(' | ', 5)
            if len(parts) != 6:
                sys.exit(f'mutants.txt:{n}: expected 6 fields separated by " | ", got {len(parts)}')
            mid, file, orig, repl, tests, what = (p.strip() for p in parts)
            if mid in seen:
                sys.exit(f'mutants.txt:{n}: duplicate id {mid}')
            seen.add(mid)
            orig, repl = unescape(orig), unescape(repl)
            if not orig or orig == repl:
                sys.exit(f'mutants.txt:{n}: {mid}: empty snippet or replacement equal to it')
            tests = [] if tests == '-' else [t.strip() for t in tests.split(',') if t.strip()]
            mutants.append(dict(id=mid, file=file, orig=orig, repl=repl, tests=tests, what=what,
                                line=n))
    return mutants


def check_one(root, m):
    path = os.path.join(root, m['file'])
    try:
        with open(path, encoding='utf-8') as f:
            text = f.read()
    except OSError as e:
        return f'{m["id"]} (mutants.txt:{m["line"]}): cannot read {m["file"]}: {e.strerror}'
    count = text.count(m['orig'])
    if count != 1:
        return (f'{m["id"]} (mutants.txt:{m["line"]}): the original snippet occurs {count} times '
                f'in {m["file"]} (must be exactly once): {m["orig"]!r}')
    return None


def syntax_command(entry, path):
    """entry's compiler command, checking path instead of writing an object."""
    args, out, skip = shlex.split(entry['command']), [], False
    for a in args:
        if skip:
            skip = False
        elif a in ('-o', '-MQ', '-MF'):
            skip = True
        elif a != '-MD':
            out.append(path if a == entry['file'] else a)
    return out + ['-fsyntax-only', '-fdiagnostics-color=never']


def compiles(root, build, mutants):
    """Each mutant of a file BUILD compiles, applied alone next to the original (so that its
    quoted includes resolve as they do) and compiled with the original's flags, -Werror
    included. Returns the messages of the mutants that do not compile."""
    with open(os.path.join(build, 'compile_commands.json'), encoding='utf-8') as f:
        entries = {os.path.realpath(os.path.join(e['directory'], e['file'])): e for e in json.load(f)}
    errors = []
    for m in mutants:
        path = os.path.realpath(os.path.join(root, m['file']))
        entry = entries.get(path)
        if entry is None or check_one(root, m):
            continue
        with open(path, encoding='utf-8') as f:
            text = f.read()
        tmp = os.path.join(os.path.dirname(path), '.mutant-' + os.path.basename(path))
        with open(tmp, 'w', encoding='utf-8') as f:
            f.write(text.replace(m['orig'], m['repl']))
        try:
            r = subprocess.run(syntax_command(entry, tmp), cwd=entry['directory'],
                               capture_output=True, text=True)
        finally:
            os.unlink(tmp)
        if r.returncode != 0:
            first = next((ln for ln in r.stderr.splitlines() if 'error' in ln), r.stderr.strip())
            errors.append(f'{m["id"]} (mutants.txt:{m["line"]}) does not compile: {first}')
    return errors


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    mutants = load()
    cmd = argv[1]
    if cmd == 'list':
        for m in mutants:
            print('\t'.join([m['id'], m['file'], ','.join(m['tests']) or '-', m['what']]))
    elif cmd == 'check':
        errors = [e for e in (check_one(argv[2], m) for m in mutants) if e]
        for e in errors:
            print('mutation: ' + e, file=sys.stderr)
        sys.exit(1 if errors else 0)
    elif cmd == 'apply':
        m = next((m for m in mutants if m['id'] == argv[3]), None)
        if m is None:
            sys.exit(f'no mutant {argv[3]}')
        err = check_one(argv[2], m)
        if err:
            sys.exit('mutation: ' + err)
        path = os.path.join(argv[2], m['file'])
        with open(path, encoding='utf-8') as f:
            text = f.read()
        with open(path, 'w', encoding='utf-8') as f:
            f.write(text.replace(m['orig'], m['repl']))
        print(m['file'])
    elif cmd == 'compiles':
        errors = compiles(argv[2], argv[3], mutants)
        for e in errors:
            print('mutation: ' + e, file=sys.stderr)
        sys.exit(1 if errors else 0)
    elif cmd == 'tests':
        want = set(argv[2:])
        print(' '.join(sorted({t for m in mutants if not want or m['id'] in want
                               for t in m['tests']})))
    else:
        sys.exit(__doc__)


if __name__ == '__main__':
    main(sys.argv)
