"""The Python document (host_api/docs/python.md, the README's Python reference) stays true: every
```python block in it runs (with paths from the repository root, as its set-up leaves the reader), and a
```text block right after one is exactly what it prints."""

import contextlib
import io
import re

import pytest

from conftest import SOURCE_DIR

DOCUMENT = SOURCE_DIR / "host_api" / "docs" / "python.md"


def readme_examples():
    section = DOCUMENT.read_text(encoding="utf-8")
    blocks = re.findall(r"```(python|text)\n(.*?)```", section, flags=re.S)
    examples = []
    for i, (kind, body) in enumerate(blocks):
        if kind != "python":
            continue
        following = blocks[i + 1] if i + 1 < len(blocks) else None
        output = following[1] if following and following[0] == "text" else None
        examples.append((body, output))
    return examples


def test_the_readme_has_python_examples():
    examples = readme_examples()
    assert len(examples) >= 2
    assert all(output is not None for _, output in examples)


@pytest.mark.parametrize("index", range(len(readme_examples())))
def test_readme_example_runs_and_prints_what_the_readme_shows(index, monkeypatch, tmp_path):
    code, output = readme_examples()[index]
    # Paths as from the repository root; what the example writes lands in tmp_path.
    (tmp_path / "samples").symlink_to(SOURCE_DIR / "samples")
    monkeypatch.chdir(tmp_path)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, f"host_api/docs/python.md python example {index + 1}", "exec"), {})
    if output is not None:
        assert printed.getvalue() == output
