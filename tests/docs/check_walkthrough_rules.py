"""The walk-through rules (walkthroughs.py) do what they say, on documents made here with the
shell's own commands: a walk-through that prints what it shows passes, and each way of not doing so
fails naming the step. A checker that passes everything would leave every document unchecked.

Usage: check_walkthrough_rules.py; exits 1 naming the first rule that does not hold."""

import sys
import tempfile
from pathlib import Path

import walkthroughs

GOOD = """# A document

```console
$ echo hello
hello

$ false
$ echo $?
1
```

<!-- not run: a synopsis, not a command -->
```sh
ppb simulate PLAN.json [--json]
```

```sh
export X=41
printf 'a\\nb\\n' > f.txt
cat f.txt
```

ends with

```text
b
```

```python
import os
print(int(os.environ["X"]) + 1, open("f.txt").read().split())
```

```text
42 ['a', 'b']
```

<!-- release build only: a slow command -->
```console
$ echo slow
slow
```

```yaml
not: run
```
"""

# (what is wrong, the document's text after the change, what the failure must say)
BAD = [
    ("output other than shown", GOOD.replace("$ echo hello\nhello\n", "$ echo hello\nhallo\n"),
     "doc.md:4: echo hello\nprints other than shown"),
    ("a failing command without its status shown", GOOD.replace("$ false\n$ echo $?\n1\n", "$ false\n"),
     "doc.md:7: false\nexited 1"),
    ("a status other than shown", GOOD.replace("$ echo $?\n1\n", "$ echo $?\n0\n"),
     "doc.md:8: echo $?\nprints other than shown"),
    ("a failing ```sh command", GOOD.replace("export X=41\n", "export X=41\nexit_status_3() { return 3; }; exit_status_3\n"),
     "exited 3"),
    ("an end other than shown", GOOD.replace("ends with\n\n```text\nb\n", "ends with\n\n```text\nc\n"),
     "cat f.txt\nends other than shown"),
    ("a Python block printing other than shown", GOOD.replace("42 ['a', 'b']", "43 ['a', 'b']"),
     "prints other than shown"),
    ("a release-only block printing other than shown", GOOD.replace("$ echo slow\nslow\n", "$ echo slow\nslaw\n"),
     "echo slow\nprints other than shown"),
    ("a Python block that raises", GOOD.replace("import os\n", "import os\nraise SystemExit(5)\n"),
     "exited 5"),
]


def run(text, scratch, name):
    root = Path(scratch) / name
    root.mkdir()
    (root / "doc.md").write_text(text, encoding="utf-8")
    found = walkthroughs.read_walkthroughs(root, "doc.md")
    assert len(found) == 1, found
    walkthroughs.run(found[0], root, root / "home", root)
    return found[0]


def main():
    with tempfile.TemporaryDirectory(prefix="ppb-rules-") as scratch:
        good = run(GOOD, scratch, "good")
        kinds = [step.kind for step in good.steps]
        if kinds != ["console"] * 3 + ["sh"] * 3 + ["python"] + ["console"]:
            print(f"steps read as {kinds}")
            return 1
        if good.not_run != ["doc.md:13: a synopsis, not a command"]:
            print(f"blocks not run: {good.not_run}")
            return 1
        marked = [step.release_only for step in good.steps]
        if marked != [None] * 7 + ["a slow command"]:
            print(f"release-only steps read as {marked}")
            return 1
        for number, (what, text, expected) in enumerate(BAD):
            try:
                run(text, scratch, f"bad{number}")
            except walkthroughs.Failure as failure:
                if expected not in str(failure):
                    print(f"{what}: the failure says\n{failure}\nnot {expected!r}")
                    return 1
                continue
            print(f"{what}: not caught")
            return 1
    print(f"the walk-through rules hold: 1 document passes, {len(BAD)} broken ones fail as they should")
    return 0


if __name__ == "__main__":
    sys.exit(main())
