"""The README's Python section stays true: every ```python block in it runs (with paths from the
repository root, as the README's set-up leaves the reader), and a ```text block right after one is exactly
what it prints."""

import contextlib
import io
import re

import pytest

from conftest import SOURCE_DIR

SECTION = "## Python: `import ppb`"


def readme_examples():
    text = (SOURCE_DIR / "README.md").read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    section = text[start:end if end != -1 else len(text)]
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
        exec(compile(code, f"README.md python example {index + 1}", "exec"), {})
    if output is not None:
        assert printed.getvalue() == output
