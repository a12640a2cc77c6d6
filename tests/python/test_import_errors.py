"""`import ppb` where the extension is missing or built for another Python says which, and how to
get it (the package's Python files are copied when CMake configures, the extension only when it
is built: a set-up that skipped it once gave Python's misleading "circular import" message)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path


def package_without_extension(tmp_path, extra=None):
    installed = Path(__import__("ppb").__file__).parent
    copy = tmp_path / "ppb"
    copy.mkdir()
    for file in installed.glob("*.py"):
        shutil.copy(file, copy / file.name)
    if extra:
        (copy / extra).write_bytes(b"not this interpreter's extension")
    return tmp_path


def import_in(path):
    env = dict(os.environ, PYTHONPATH=str(path))
    return subprocess.run([sys.executable, "-c", "import ppb"], env=env, capture_output=True,
                          text=True)


def test_a_missing_extension_says_how_to_build_it(tmp_path):
    done = import_in(package_without_extension(tmp_path))
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: ppb: the extension module _ppb is not built in "), last
    assert "samples/scripts/run-sample.sh" in last and "--target ppb_python" in last, last
    assert "circular import" not in last.split("(", 1)[0], last


def test_an_extension_for_another_python_is_named(tmp_path):
    done = import_in(package_without_extension(tmp_path, "_ppb.cpython-299-x86_64-linux-gnu.so"))
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    version = f"Python {sys.version_info.major}.{sys.version_info.minor}"
    assert "_ppb.cpython-299-x86_64-linux-gnu.so" in last and "was built for another Python" in last
    assert version in last, last
