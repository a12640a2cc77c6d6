"""The documents' walk-throughs, read and run as a reader runs them. One owner of the rules below;
check_walkthroughs.py (CTest, against a build tree) and check_journeys.py (the test command's
journeys stage, from a clean checkout after the set-up command) both use it.

What a document holds, and what is run:

- A ```sh block is a series of shell commands (a line ending with a backslash continues on the
  next), each run in turn and required to exit 0; what they print is not compared.
- A ```console block is a session: a line starting with "$ " is a command (continued while a line
  ends with a backslash), and the lines after it, up to the next "$ " or the end of the block, are
  exactly what it prints, stderr and stdout together as a terminal shows them (blank lines before
  the next command are spacing, not output). It must exit 0,
  unless the next command of the block is `echo $?`, whose shown output then states the status.
- A ```python block is run in the same shell by Debian's `/usr/bin/python3` when it exists (the
  interpreter the module is built for, with NumPy from apt; python.md says so), else `python3`;
  a ```text block right after it is exactly what it prints.
- A ```text block after a ```sh block, with only prose between them that ends with "ends with"
  (or "ends with:"), is the end of what the last command of that ```sh block prints.
- A block right after the line `<!-- not run: REASON -->` is not run (REASON says why: a command
  that takes hours, the test command itself, a synopsis); every such block is listed.
- A block right after the line `<!-- release build only: REASON -->` runs and is compared as any
  other, but not against a sanitizer build (docs_walkthroughs there sets PPB_SANITIZED_BUILD): its
  commands take minutes under the sanitizers and run no code the other tests do not run there.
  It must write nothing a later block reads; every such block is listed where it is left out.
- Any other block (```text, ```yaml, ```json, …) is text to read, not a command.

A walk-through is a document, except the README, where each section (`## ` heading) is one: a
journey never reads what another wrote. All the commands of one walk-through run, in order, in one
bash process whose working directory is a checkout of the repository (so `cd`, `export` and the
files one command writes reach the later ones), with a HOME of its own (so `~/.local` is the
walk-through's), `PPB_PLUGIN_PATH` and `PYTHONPATH` unset and COLUMNS=100. Output is compared after
two substitutions: the build tree's real path reads `build`, and HOME reads `~`, as a reader's
terminal shows them from the repository root."""

import difflib
import os
import re
import shlex
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path

BLOCK = re.compile(r"^```([A-Za-z0-9_-]*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
NOT_RUN = re.compile(r"<!--\s*not run:\s*(.+?)\s*-->\s*\n\s*$", re.S)
RELEASE_ONLY = re.compile(r"<!--\s*release build only:\s*(.+?)\s*-->\s*\n\s*$", re.S)
STEP_SECONDS = 600
SEPARATOR = "\x1e"  # ASCII record separator: never in ppb's output nor in a document


@dataclass
class Step:
    where: str  # document:line
    kind: str  # "sh", "console" or "python"
    command: str  # shell text (python: the program)
    expected: str | None  # exact output, or None when not compared
    expected_end: str | None = None  # what the output ends with, or None
    status_shown: bool = False  # the next step is `echo $?`: a non-zero status is expected
    release_only: str | None = None  # why it is not run against a sanitizer build, or None


@dataclass
class Walkthrough:
    name: str  # "README.md: Journey: …" or a document's path
    steps: list[Step] = field(default_factory=list)
    not_run: list[str] = field(default_factory=list)  # "where: reason"


def _join_continued(lines, i):
    """The command starting at lines[i] joined over backslash-continued lines; (text, next i)."""
    text = lines[i]
    while text.endswith("\\") and i + 1 < len(lines):
        i += 1
        text = text + "\n" + lines[i]
    return text, i + 1


def _steps_of(kind, body, where_line, document):
    lines = body.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    steps = []
    if kind == "python":
        return [Step(f"{document}:{where_line}", "python", body, None)]
    i = 0
    while i < len(lines):
        start = i
        if kind == "console":
            if not lines[i].startswith("$ "):
                raise ValueError(f"{document}:{where_line + i}: console block output before any "
                                 f"command: {lines[i]!r}")
            text, i = _join_continued(lines, i)
            text = text[2:]
            output = []
            while i < len(lines) and not lines[i].startswith("$ "):
                output.append(lines[i])
                i += 1
            while i < len(lines) and output and output[-1] == "":
                output.pop()  # blank lines before the next command are the reader's spacing
            steps.append(Step(f"{document}:{where_line + start}", "console", text,
                              "".join(o + "\n" for o in output)))
        else:
            if not lines[i].strip() or lines[i].lstrip().startswith("#"):
                i += 1
                continue
            text, i = _join_continued(lines, i)
            steps.append(Step(f"{document}:{where_line + start}", "sh", text, None))
    for a, b in zip(steps, steps[1:]):
        if a.kind == "console" and b.kind == "console" and b.command.strip() == "echo $?":
            a.status_shown = True
    return steps


def read_walkthroughs(source: Path, document: str):
    """The walk-throughs of one document (a path relative to source)."""
    text = (source / document).read_text(encoding="utf-8")
    split = document == "README.md"
    sections = []  # (start offset, name)
    if split:
        for m in re.finditer(r"^## (.+)$", text, re.M):
            sections.append((m.start(), f"{document}: {m.group(1).strip()}"))
    if not sections or sections[0][0] > 0:
        sections.insert(0, (0, document))
    result = {name: Walkthrough(name) for _, name in sections}

    def section_of(offset):
        name = sections[0][1]
        for start, n in sections:
            if start <= offset:
                name = n
        return result[name]

    blocks = list(BLOCK.finditer(text))
    for index, block in enumerate(blocks):
        kind = block.group(1)
        first_line = text.count("\n", 0, block.start(2)) + 1
        walkthrough = section_of(block.start())
        before = text[blocks[index - 1].end() if index else 0:block.start()]
        skipped = NOT_RUN.search(before)
        if kind in ("sh", "console", "python") and skipped:
            walkthrough.not_run.append(f"{document}:{first_line - 1}: {skipped.group(1)}")
            continue
        if kind not in ("sh", "console", "python"):
            continue
        steps = _steps_of(kind, block.group(2), first_line, document)
        if release := RELEASE_ONLY.search(before):
            for step in steps:
                step.release_only = release.group(1)
        if steps and index + 1 < len(blocks) and blocks[index + 1].group(1) == "text":
            between = " ".join(text[block.end():blocks[index + 1].start()].split())
            if kind == "python" and not between:
                steps[0].expected = blocks[index + 1].group(2)
            elif kind == "sh" and re.search(r"(^|\s)ends with:?$", between):
                steps[-1].expected_end = blocks[index + 1].group(2)
        walkthrough.steps.extend(steps)
    return [w for w in result.values() if w.steps or w.not_run]


def tracked_files(source: Path):
    """The repository's tracked files that exist in the working tree (what a clone holds)."""
    done = subprocess.run(["git", "ls-files", "-z", "--cached"], cwd=source,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if done.returncode != 0:  # not a git checkout (a source archive): every file but build trees
        return sorted(str(p.relative_to(source)) for p in source.rglob("*")
                      if p.is_file() and not any(part.startswith(("build", ".")) for part in
                                                 p.relative_to(source).parts))
    listed = done.stdout.decode().split("\0")
    return [p for p in listed if p and os.path.lexists(source / p)]


def documents(files):
    """The Markdown documents among the repository's files, README.md first."""
    found = sorted(p for p in files if p.endswith(".md"))
    if "README.md" in found:
        found.remove("README.md")
        found.insert(0, "README.md")
    return found


def environment(home: Path):
    env = {k: v for k, v in os.environ.items()
           if k not in ("PPB_PLUGIN_PATH", "PPB_DEBUG_PLUGINS", "PYTHONPATH", "BUILD_DIR")}
    env.update(HOME=str(home), COLUMNS="100", TERM="dumb", PYTHONDONTWRITEBYTECODE="1")
    return env


class Failure(Exception):
    pass


# The programs a walk-through may call and still run against a bare build tree: ppb and the shell's
# everyday tools (and python3 where the tree has the Python module). A walk-through that calls
# anything else (cmake, the scripts) needs the set-up command's checkout and runs in the journeys
# stage only.
BUILD_TREE_PROGRAMS = {"build/bin/ppb", "echo", "cat", "grep", "head", "tail", "diff", "cmp", "wc",
                       "test", "[", "rm", "ls", "cp", "mv", "mkdir", "cd", "export"}


def programs(step: Step):
    """The programs a step's command line calls (the first word of each command of its pipelines
    and lists)."""
    if step.kind == "python":
        return {"python3"}
    lexer = shlex.shlex(step.command.replace("\\\n", " "), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    found = set()
    at_start = True
    for token in lexer:
        if token and set(token) <= set("|&;()<>"):
            at_start = "<" not in token and ">" not in token  # a redirection's file follows
            continue
        if at_start and not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", token):
            found.add(token)
            at_start = False
    return found


def needs_checkout(walkthrough: Walkthrough, build: Path):
    """Whether the walk-through calls more than ppb, the shell's everyday tools and, when the build
    tree has the Python module, python3."""
    allowed = set(BUILD_TREE_PROGRAMS)
    if any((build / "python" / "ppb").glob("_ppb*.so")):
        allowed.add("python3")
    return any(programs(step) - allowed for step in walkthrough.steps)


def run(walkthrough: Walkthrough, workdir: Path, home: Path, build: Path, log=print):
    """Runs a walk-through's steps in one bash process in workdir; raises Failure naming the step
    and what differs. build: the real path of the build tree the checkout's `build` is."""
    home.mkdir(parents=True, exist_ok=True)
    shell = subprocess.Popen(["bash", "--noprofile", "--norc"], cwd=workdir,
                             env=environment(home), stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    # No step may hang the run: the slowest documented step (building the plugin template) takes
    # about a minute on two cores.
    watchdog = threading.Timer(STEP_SECONDS * max(1, len(walkthrough.steps)), shell.kill)
    watchdog.start()
    real_build = str(build.resolve())
    real_home = str(home.resolve())
    try:
        shell.stdin.write("exec 2>&1\n__ppb_status=0\n")
        for number, step in enumerate(walkthrough.steps):
            if step.kind == "python":
                body = step.command
                python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else "python3"
                command = f"{python} - <<'PPB_PYTHON_EOF'\n{body}PPB_PYTHON_EOF"
            else:
                command = step.command
            # The status of the step before is $? when this one starts (`echo $?`); stdin is
            # /dev/null, so no command reads the rest of this script.
            shell.stdin.write(f"( exit $__ppb_status ); {{\n{command}\n}} < /dev/null\n"
                              f"__ppb_status=$?\n"
                              f"printf '{SEPARATOR}%d %d{SEPARATOR}\\n' {number} $__ppb_status\n")
            shell.stdin.flush()
            printed, status = _read_step(shell, number)
            printed = printed.replace(real_build, "build").replace(real_home, "~")
            shown = " ".join(step.command.split())
            if status != 0 and not step.status_shown:
                raise Failure(f"{step.where}: {shown[:300]}\nexited {status}:\n{printed}")
            if step.expected is not None and printed != step.expected:
                diff = difflib.unified_diff(step.expected.splitlines(), printed.splitlines(),
                                            "shown", "printed", lineterm="")
                raise Failure(f"{step.where}: {shown[:300]}\nprints other than shown:\n"
                              + "\n".join(diff))
            if step.expected_end is not None and not printed.endswith(step.expected_end):
                end = printed[-len(step.expected_end):] if step.expected_end else ""
                diff = difflib.unified_diff(step.expected_end.splitlines(), end.splitlines(),
                                            "shown", "printed", lineterm="")
                raise Failure(f"{step.where}: {shown[:300]}\nends other than shown:\n"
                              + "\n".join(diff))
        shell.stdin.close()
        shell.wait(timeout=60)
    finally:
        watchdog.cancel()
        if shell.poll() is None:
            shell.kill()
            shell.wait()


def _read_step(shell, number):
    printed = []
    while True:
        line = shell.stdout.readline()
        if line == "":
            raise Failure(f"the shell ended during step {number + 1}:\n" + "".join(printed))
        at = line.find(SEPARATOR)
        if at >= 0:
            marker = line[at + 1:].rstrip("\n").rstrip(SEPARATOR)
            got, status = marker.split()
            if int(got) != number:
                raise Failure(f"step {number + 1}: out of order output")
            printed.append(line[:at])
            return "".join(printed), int(status)
        printed.append(line)
