"""Every journey verbatim from a clean checkout (the test command's journeys stage).

1. A clean checkout: the repository's tracked files as they are in the working tree (what a clone
   of them holds: no build tree, nothing untracked), copied to WORK_DIR/checkout.
2. The README's set-up command, `samples/scripts/run-sample.sh`, run there as a reader runs it; it
   must exit 0, say what it is doing before and while it builds, and print what the README says it
   prints.
3. Every walk-through of every document (walkthroughs.py: each README journey, each other
   document), each in a fresh copy of the clean checkout whose `build` is the set-up's build tree
   (a link: walk-throughs read it, `cmake --install` copies from it) and with a HOME of its own, so
   that what one walk-through writes (files, `~/.local`) never changes another's output.

Usage: check_journeys.py [--only TEXT] [--reuse-setup] WORK_DIR
  --only TEXT     run only the walk-throughs whose name contains TEXT (after the set-up)
  --reuse-setup   for a developer editing documents: refresh the tracked files of an earlier
                  run's checkout and keep its build tree instead of running the set-up again
Exits 1 when the set-up or any walk-through fails, naming the step and the difference."""

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import walkthroughs

SOURCE = Path(__file__).resolve().parents[2]
SETUP = "samples/scripts/run-sample.sh"


def copy_checkout(files, source: Path, target: Path, fresh=True):
    if fresh and target.exists():
        shutil.rmtree(target)
    for path in files:
        destination = target / path
        destination.parent.mkdir(parents=True, exist_ok=True)
        if destination.is_symlink() or destination.exists():
            destination.unlink()
        shutil.copy2(source / path, destination, follow_symlinks=False)


def check_setup_output(printed: str):
    """What the README says the set-up prints: progress while it builds, the plugins it finds, the
    fit as a table, the partition, and the ranking of pipeline configurations."""
    expected = [
        ("says what it builds before building", r"^run-sample: building .* in build/"),
        ("reports progress while it builds", r"^run-sample: built [1-9][0-9]* %$"),
        ("lists the plugins", r"^NAME +VERSION +API +VERDICT +PATH$"),
        ("prints the fit as a table", r"^  PARAMETER +ESTIMATE"),
        ("prints the partition", r"^MindFormers / SAPP configuration:$"),
        ("prints the ranking of the search", r"^RANK +PP +DP"),
    ]
    missing = [what for what, pattern in expected if not re.search(pattern, printed, re.M)]
    usable = sum(1 for line in printed.splitlines() if " usable " in f" {line} ")
    if usable < 3:
        missing.append(f"lists the three bundled plugins as usable (found {usable})")
    return missing


def setup(work: Path, checkout: Path):
    """Runs the set-up command in the checkout as a reader runs it; 0 when it did what the README
    says."""
    started = time.monotonic()
    print(f"journeys: the set-up command, {SETUP}, from the checkout's root:", flush=True)
    setup_home = work / "home-setup"
    setup_home.mkdir(exist_ok=True)
    process = subprocess.Popen([SETUP], cwd=checkout, env=walkthroughs.environment(setup_home),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    printed = []
    for line in process.stdout:
        printed.append(line)
        print(f"  | {line}", end="", flush=True)
    process.wait()
    (work / "setup.log").write_text("".join(printed), encoding="utf-8")
    if process.returncode != 0:
        print(f"journeys: FAILED: {SETUP} exited {process.returncode}")
        return 1
    missing = check_setup_output("".join(printed))
    if missing:
        print(f"journeys: FAILED: {SETUP} does not do what the README says: " + "; ".join(missing))
        return 1
    print(f"journeys: set-up done in {time.monotonic() - started:.0f} s", flush=True)
    return 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="")
    parser.add_argument("--reuse-setup", action="store_true")
    parser.add_argument("work_dir")
    args = parser.parse_args()
    work = Path(args.work_dir).resolve()
    work.mkdir(parents=True, exist_ok=True)

    untracked = subprocess.run(["git", "ls-files", "--others", "--exclude-standard"], cwd=SOURCE,
                               check=True, stdout=subprocess.PIPE, text=True).stdout.split()
    if untracked:
        print(f"journeys: note: {len(untracked)} untracked files are not in the checkout (a clone "
              f"would not have them either): {', '.join(untracked[:5])}"
              + (" …" if len(untracked) > 5 else ""))
    files = walkthroughs.tracked_files(SOURCE)
    checkout = work / "checkout"
    reuse = args.reuse_setup and (checkout / "build" / "bin" / "ppb").exists()
    copy_checkout(files, SOURCE, checkout, fresh=not reuse)
    print(f"journeys: clean checkout of {len(files)} tracked files in {checkout}", flush=True)
    if reuse:
        print("journeys: --reuse-setup: the set-up is not run again; its build tree is kept")
    else:
        status = setup(work, checkout)
        if status != 0:
            return status

    build = checkout / "build"
    failures = []
    ran = 0
    not_run = []
    for number, document in enumerate(walkthroughs.documents(files)):
        for index, walkthrough in enumerate(walkthroughs.read_walkthroughs(checkout, document)):
            not_run.extend(walkthrough.not_run)
            if not walkthrough.steps or args.only not in walkthrough.name:
                continue
            where = work / f"w{number:02d}-{index}"
            copy_checkout(files, checkout, where)
            (where / "build").symlink_to(build)
            began = time.monotonic()
            try:
                walkthroughs.run(walkthrough, where, work / f"home{number:02d}-{index}", build)
            except walkthroughs.Failure as failure:
                failures.append(f"{walkthrough.name}:\n{failure}")
                print(f"journeys: FAILED  {walkthrough.name}", flush=True)
                continue
            ran += 1
            print(f"journeys: ok {time.monotonic() - began:6.1f} s  {walkthrough.name} "
                  f"({len(walkthrough.steps)} commands)", flush=True)
    if not_run:
        print("journeys: blocks not run, each with its reason:")
        for line in not_run:
            print(f"  {line}")
    for failure in failures:
        print(f"\n{failure}")
    print(f"journeys: {ran} walk-throughs ran as written, {len(failures)} failed")
    return 1 if failures or ran == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
