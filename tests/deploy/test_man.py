#!/usr/bin/env python3
"""The man pages, deploy/man/sluice.1 and deploy/man/sluice-policy.5, against what they describe.

sluice(1) must describe (in an .It line, not merely mention) every option, subcommand and
environment variable that `sluice --help` prints; sluice-policy(5) every key policy/policy.c
accepts, and its example must load. Both must render without a warning: groff -mandoc -ww
always (groff-base comes with man-db), and mandoc -T lint when mandoc is installed (.ci/deps
--test installs it, so under CI=true it must be there).

    SLUICE_BIN=build/proxy/sluice python3 tests/deploy/test_man.py [--tap]
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAN = ROOT / "deploy" / "man"
PAGE1 = MAN / "sluice.1"
PAGE5 = MAN / "sluice-policy.5"
POLICY_C = ROOT / "policy" / "policy.c"
SLUICE = os.environ.get("SLUICE_BIN", str(ROOT / "build" / "proxy" / "sluice"))


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, **kw)


def help_text():
    r = run([SLUICE, "--help"])
    assert r.returncode == 0, f"sluice --help exited {r.returncode}: {r.stderr}"
    return r.stdout + r.stderr


def described(page):
    """The words an .It line of the page introduces: options as --name or -x, commands, env."""
    words = set()
    head = False  # inside ".It Xo" ... ".Xc", an item head written over several lines
    for line in page.read_text().splitlines():
        head = (head or line == ".It Xo") and line != ".Xc"
        if not line.startswith(".It ") and not head:
            continue
        words.update("--" + m for m in re.findall(r"\bFl \\-([a-z][a-z-]*)", line))
        words.update("-" + m for m in re.findall(r"\bFl ([a-zA-Z])\b", line))
        words.update(re.findall(r"\b(?:Cm|Ev|Ic|Dv) ([A-Za-z_][A-Za-z_0-9]*)", line))
        words.update(m for m in re.findall(r",\s*([a-z_]+)", line))  # ".It Ic min , max"
    return words


def test_every_help_option_is_in_sluice_1():
    text = help_text()
    options = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*|-[a-zA-Z])\b", text))
    assert len(options) > 30, f"found only {len(options)} options in sluice --help"
    missing = sorted(options - described(PAGE1))
    assert not missing, f"sluice(1) does not describe {missing}"


def test_every_subcommand_and_variable_is_in_sluice_1():
    text = help_text()
    names = set(re.findall(r"^(?:usage: |[ \t]+)sluice ([a-z]+) ", text, re.M))
    names |= set(re.findall(r"\$([A-Z][A-Z_]+)", text))
    names |= {"SLUICE_STATE_KEY", "SLUICE_UPSTREAM_AUTHORIZATION", "SLUICE_STORE_PASSWORD",
              "SIGHUP", "SIGTERM"}
    assert {"check", "probe"} <= names, f"subcommands in --help: {names}"
    missing = sorted(names - described(PAGE1))
    assert not missing, f"sluice(1) does not describe {missing}"
    for section in ("ENVIRONMENT", "SIGNALS", "EXIT STATUS", "FILES"):
        assert f".Sh {section}\n" in PAGE1.read_text(), f"sluice(1) has no {section} section"


def test_every_policy_key_is_in_sluice_policy_5():
    src = POLICY_C.read_text()
    keys = set()
    for body in re.findall(r"_keys\[[A-Z_]+\] = \{(.*?)\};", src, re.S):
        keys.update(re.findall(r'"([a-z_]+)"', body))
    assert {"version", "confirm_ttl", "strict_args", "deny_glob", "tool"} <= keys, keys
    missing = sorted(keys - described(PAGE5))
    assert not missing, f"sluice-policy(5) does not describe {missing}"


def test_policy_page_example_loads():
    text = PAGE5.read_text()
    m = re.search(r"\.Sh EXAMPLES\n\.Bd -literal[^\n]*\n(.*?)\n\.Ed", text, re.S)
    assert m, "sluice-policy(5) has no literal example under EXAMPLES"
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
        f.write(m.group(1) + "\n")
        f.flush()
        r = run([SLUICE, "check", "--policy", f.name])
    assert r.returncode == 0, f"the example does not load: {r.stdout}{r.stderr}"


def test_groff_renders_without_warnings():
    groff = shutil.which("groff")
    if groff is None:
        return "SKIP groff is not installed (apt-get install groff-base)"
    for page in (PAGE1, PAGE5):
        r = run([groff, "-mandoc", "-Tutf8", "-ww", "-z", str(page)])
        assert r.returncode == 0 and not r.stderr.strip(), f"{page.name}: {r.stderr}"


def test_mandoc_lint_is_clean():
    mandoc = shutil.which("mandoc")
    if mandoc is None:
        assert os.environ.get("CI") != "true", "mandoc is missing under CI=true (.ci/deps --test)"
        return "SKIP mandoc is not installed (apt-get install mandoc)"
    for page in (PAGE1, PAGE5):
        r = run([mandoc, "-T", "lint", "-W", "warning", str(page)])
        out = (r.stdout + r.stderr).strip()
        assert r.returncode == 0 and not out, f"{page.name}: {out}"


def main():
    tap = "--tap" in sys.argv
    tests = [(n, f) for n, f in globals().items() if n.startswith("test_")]
    failed = 0
    if tap:
        print(f"1..{len(tests)}")
    for i, (name, fn) in enumerate(tests, 1):
        try:
            res = fn()
            skip = f" # {res}" if isinstance(res, str) else ""
            print(f"ok {i} {name}{skip}")
        except (AssertionError, subprocess.TimeoutExpired, OSError) as e:
            failed += 1
            print(f"not ok {i} {name}")
            for line in str(e).splitlines():
                print(f"# {line}")
    if not tap:
        sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
