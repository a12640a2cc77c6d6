"""Shared fixtures: the repository, the ppb command built beside the module, and a runner that
returns what the command printed, so that tests compare the module's numbers with the CLI's."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SOURCE_DIR = Path(os.environ.get("PPB_SOURCE_DIR", Path(__file__).resolve().parents[2]))
DATA = SOURCE_DIR / "samples" / "data"
LLAMA_DRYRUN = DATA / "llama70b-pp8-dryrun.json"
LLAMA_LAYERS = DATA / "llama70b-layers.json"
MOE_DRYRUN = DATA / "moe" / "deepseek-like-pp4-dryrun.json"
MOE_LAYERS = DATA / "moe" / "deepseek-like-layers.json"


def cli_path():
    path = os.environ.get("PPB_CLI")
    if not path:
        pytest.fail("PPB_CLI is not set: run the tests through CTest (it names the ppb command)")
    return path


class Cli:
    """Runs the ppb command built with the module."""

    def run(self, *args, expect=0):
        done = subprocess.run([cli_path(), *map(str, args)], capture_output=True, text=True,
                              check=False)
        assert done.returncode == expect, (args, done.returncode, done.stderr)
        return done

    def json(self, *args):
        return json.loads(self.run(*args, "--json").stdout)


@pytest.fixture
def cli():
    return Cli()


@pytest.fixture
def ppb_module():
    import ppb

    return ppb


def error_message(stderr):
    """The message of the command's 'ppb: error: ...' line(s)."""
    assert stderr.startswith("ppb: error: "), stderr
    return stderr[len("ppb: error: "):].rstrip("\n")


sys.path.insert(0, str(Path(__file__).resolve().parent))
