"""The documents' walk-throughs print what they show, against a build tree (CTest
docs_walkthroughs, in the test command's build and sanitizer stages).

Every walk-through of every document (rules in walkthroughs.py) that calls only ppb, the shell's
everyday tools and, where the build tree has the Python module, python3, runs in a scratch
directory of its own, with `samples` and `tests` linked to the repository's and `build` to the
build tree, so that the documents' relative paths work as from the repository root. The
walk-throughs that need the set-up command's checkout (cmake --install, the plugin template) are
listed and left to the journeys stage (check_journeys.py), which runs every walk-through from a
clean checkout.

Usage: check_walkthroughs.py SOURCE_DIR BUILD_DIR; exits 1 naming the first difference."""

import os
import sys
import tempfile
from pathlib import Path

import walkthroughs


def main():
    source = Path(sys.argv[1]).resolve()
    build = Path(sys.argv[2]).resolve()
    ran = steps = 0
    left = []
    # Against a sanitizer build the blocks marked "release build only" are left out (walkthroughs.py).
    sanitized = bool(os.environ.get("PPB_SANITIZED_BUILD"))
    release_only = []
    with tempfile.TemporaryDirectory(prefix="ppb-walkthrough-") as scratch:
        for number, document in enumerate(walkthroughs.documents(walkthroughs.tracked_files(source))):
            for index, walkthrough in enumerate(walkthroughs.read_walkthroughs(source, document)):
                if not walkthrough.steps:
                    continue
                if walkthroughs.needs_checkout(walkthrough, build):
                    left.append(walkthrough.name)
                    continue
                if sanitized:
                    release_only += [f"{s.where}: {s.release_only}" for s in walkthrough.steps
                                     if s.release_only]
                    walkthrough.steps = [s for s in walkthrough.steps if not s.release_only]
                work = Path(scratch) / f"w{number}-{index}"
                work.mkdir()
                (work / "samples").symlink_to(source / "samples")
                (work / "tests").symlink_to(source / "tests")
                (work / "build").symlink_to(build)
                try:
                    walkthroughs.run(walkthrough, work, Path(scratch) / f"home{number}-{index}", build)
                except walkthroughs.Failure as failure:
                    print(f"{walkthrough.name}:\n{failure}")
                    return 1
                ran += 1
                steps += len(walkthrough.steps)
    print(f"{ran} walk-throughs ({steps} commands) run against {build}")
    if release_only:
        print("left to the release build (PPB_SANITIZED_BUILD):")
        for where in release_only:
            print(f"  {where}")
    if left:
        print("left to the journeys stage (they need the set-up command's checkout):")
        for name in left:
            print(f"  {name}")
    return 0 if ran else 1


if __name__ == "__main__":
    sys.exit(main())
