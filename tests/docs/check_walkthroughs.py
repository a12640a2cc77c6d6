"""The README's journeys print what they show. In README.md:

- a ```console block is a session: a line starting with "$ " is a command (continued on the next
  line while a line ends with a backslash), and the lines after it, up to the next "$ " or the end of
  the block, are exactly what it prints, stderr and stdout together as a terminal shows them. It must
  exit 0.
- a ```sh block's commands that start with build/bin/ppb are run too (they set up the files later
  blocks read) and must exit 0; what they print is not compared. Its other lines (cmake, the two
  scripts) are instructions for a reader's machine and are not run here.

ppb prints plugin paths absolute (resolved from its own location); the build tree's absolute path
reads `build` in the document, as from the repository root.

Every command runs in one scratch directory, in the order of the document, with `samples` linked to
the repository's and `build` to the build tree, so the README's relative paths work as they do from
the repository root and one block can read what an earlier one wrote. Commands are split as a shell
splits words, without a shell: no pipes, redirections or variables.

Usage: check_walkthroughs.py SOURCE_DIR BUILD_DIR [DOCUMENT]; exits 1 naming the first difference."""

import difflib
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

BLOCK = re.compile(r"^```(console|sh)\n(.*?)^```", re.S | re.M)


def commands_of(kind, body):
    """[(line offset, command words, expected output or None)] of one block."""
    lines = body.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    steps = []
    i = 0
    while i < len(lines):
        line = lines[i]
        start = i
        if kind == "console":
            if not line.startswith("$ "):
                raise ValueError(f"line {i + 1} of a console block is output before any command: {line!r}")
            text = line[2:]
        else:
            text = line
        while text.endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text[:-1] + " " + lines[i].strip()
        i += 1
        if kind == "console":
            output = []
            while i < len(lines) and not lines[i].startswith("$ "):
                output.append(lines[i])
                i += 1
            steps.append((start, shlex.split(text), "".join(o + "\n" for o in output)))
        elif text.strip().startswith("build/bin/ppb"):
            steps.append((start, shlex.split(text), None))
    return steps


def main():
    source = Path(sys.argv[1]).resolve()
    build = Path(sys.argv[2]).resolve()
    document = source / (sys.argv[3] if len(sys.argv) > 3 else "README.md")
    text = document.read_text(encoding="utf-8")
    env = dict(os.environ, PPB_PLUGIN_PATH="", PPB_DEBUG_PLUGINS="", COLUMNS="100")
    ran = compared = 0
    with tempfile.TemporaryDirectory(prefix="ppb-walkthrough-") as scratch:
        work = Path(scratch)
        (work / "samples").symlink_to(source / "samples")
        (work / "build").symlink_to(build)
        for block in BLOCK.finditer(text):
            first_line = text.count("\n", 0, block.start(2)) + 1
            for offset, words, expected in commands_of(block.group(1), block.group(2)):
                where = f"{document.name}:{first_line + offset}"
                done = subprocess.run(words, cwd=work, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True)
                ran += 1
                printed = done.stdout.replace(str(build), "build")
                if done.returncode != 0:
                    print(f"{where}: {' '.join(words)}\nexited {done.returncode}:\n{printed}")
                    return 1
                if expected is not None:
                    compared += 1
                    if printed != expected:
                        diff = difflib.unified_diff(expected.splitlines(), printed.splitlines(),
                                                    "shown", "printed", lineterm="")
                        print(f"{where}: {' '.join(words)}\nprints other than shown:")
                        print("\n".join(diff))
                        return 1
    if compared == 0:
        print(f"{document.name}: no console block to check")
        return 1
    print(f"{document.name}: {ran} commands run, {compared} outputs as shown")
    return 0


if __name__ == "__main__":
    sys.exit(main())
