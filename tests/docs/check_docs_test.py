#!/usr/bin/env python3
"""check_docs_test.py: check_docs.py's own rules can pass and can fail.

    tests/docs/check_docs_test.py

Runs tests/docs/check_docs.py over the fixtures in tests/docs/fixtures/ (a root of its own with a
CMakeLists.txt, quoted files and stand-in programs printing a --help): good.md, which quotes
every form each rule accepts, must pass (exit 0); bad.md, which breaks each rule, must fail
(exit 1) with exactly the problems listed in bad.expected. Exit 0 when both hold, 1 otherwise.
"""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures")


def run(doc: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, os.path.join(HERE, "check_docs.py"), "--root", FIXTURES,
         "--program", "kdp-manager=" + os.path.join(FIXTURES, "bin", "kdp-manager"),
         "--program", "kdpctl=" + os.path.join(FIXTURES, "bin", "kdpctl"), doc],
        capture_output=True, text=True, check=False)


def main() -> int:
    failed = False
    good = run("good.md")
    if good.returncode != 0:
        print(f"FAIL: good.md: exit {good.returncode}, want 0:\n{good.stdout}{good.stderr}")
        failed = True
    bad = run("bad.md")
    with open(os.path.join(FIXTURES, "bad.expected"), encoding="utf-8") as file:
        want = file.read().splitlines()
    got = [line for line in bad.stdout.splitlines() if not line.startswith("check_docs:")]
    if bad.returncode != 1:
        print(f"FAIL: bad.md: exit {bad.returncode}, want 1:\n{bad.stdout}{bad.stderr}")
        failed = True
    for line in want:
        if line not in got:
            print(f"FAIL: bad.md: not reported: {line}")
            failed = True
    for line in got:
        if line not in want:
            print(f"FAIL: bad.md: reported but not expected: {line}")
            failed = True
    if not failed:
        print(f"ok: good.md passes; bad.md fails with the {len(want)} expected problems")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
