#!/usr/bin/env python3
"""The test snapshot_fixtures_current: tests/data/snapshots/make_snapshots.py, run again into a
scratch directory, writes exactly the committed files (so the fixtures are what the script says,
and a change to either shows). Usage: check_snapshot_fixtures.py SNAPSHOTS_DIR"""

import filecmp
import os
import subprocess
import sys
import tempfile


def files_under(root):
    out = set()
    for directory, _, names in os.walk(root):
        for name in names:
            out.add(os.path.relpath(os.path.join(directory, name), root))
    return out


def main():
    committed = sys.argv[1]
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run([sys.executable, os.path.join(committed, "make_snapshots.py"), scratch],
                       check=True)
        written = files_under(scratch)
        expected = files_under(committed) - {"make_snapshots.py", "README.md"}
        problems = [f"written but not committed: {name}" for name in sorted(written - expected)]
        problems += [f"committed but not written: {name}" for name in sorted(expected - written)]
        problems += [f"differs: {name}" for name in sorted(written & expected)
                     if not filecmp.cmp(os.path.join(scratch, name),
                                        os.path.join(committed, name), shallow=False)]
    for problem in problems:
        print(problem)
    if problems:
        print("run tests/data/snapshots/make_snapshots.py and commit what it writes")
        return 1
    print(f"{len(written)} files as make_snapshots.py writes them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
