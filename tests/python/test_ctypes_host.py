"""samples/python/ctypes_host.py, the ctypes example for hosts that cannot use the module: it
finds the entry point the plugin really exports and predicts what ppb predicts."""

import re
import subprocess
import sys

import ppb
from conftest import LLAMA_DRYRUN, SOURCE_DIR


def test_ctypes_host_predicts_what_ppb_predicts(cli):
    plugin = next(r for r in ppb.plugins() if r["name"] == "dryrun-lsq")
    done = subprocess.run(
        [sys.executable, str(SOURCE_DIR / "samples" / "python" / "ctypes_host.py"),
         plugin["path"], str(LLAMA_DRYRUN), "3", "select=9,full=1"],
        capture_output=True, text=True, check=True)
    expected = cli.json("predict", LLAMA_DRYRUN, "--stage", 3, "--layers", "select=9,full=1")
    assert done.stdout == (f"dryrun-lsq {plugin['version']} (plugin API {plugin['api']}): "
                           f"stage 3 of 8: {expected['peak_memory_mb']!r} MB\n")


def test_every_ctypes_hint_names_a_symbol_the_plugins_export():
    exported = set()
    for plugin in (r for r in ppb.plugins() if r["verdict"] == "usable"):
        done = subprocess.run(["nm", "-D", "--defined-only", plugin["path"]],
                              capture_output=True, text=True, check=True)
        symbols = [line.split() for line in done.stdout.splitlines() if line.strip()]
        # One exported object each: the variable holding the table's address.
        assert [(kind, name) for _, kind, name in symbols] == [("V", "ppb_memory_model_v1_4")]
        exported.update(name for _, _, name in symbols)
    hints = []
    for path in ["README.md", "host_api/docs/python.md", "host_api/docs/plugin-guide.md",
                 "host_api/docs/design.md",
                 "host_api/plugin_api/include/ppb/abi.h"]:
        text = (SOURCE_DIR / path).read_text(encoding="utf-8")
        hints += re.findall(r'in_dll\(lib, "([^"]+)"\)', text)
    assert len(hints) >= 3
    assert set(hints) <= exported
