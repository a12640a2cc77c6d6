"""samples/python/ctypes_host.py, the ctypes example for hosts that cannot use the module: it
finds the entry point the plugin really exports and predicts what ppb predicts."""

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


def test_the_hint_names_the_exported_symbol():
    plugin = next(r for r in ppb.plugins() if r["name"] == "dryrun-lsq")
    done = subprocess.run(["nm", "-D", "--defined-only", plugin["path"]], capture_output=True,
                          text=True, check=True)
    exported = sorted(line.split()[-1] for line in done.stdout.splitlines() if line.strip())
    assert exported == ["ppb_memory_model_v1_3"]
    abi = (SOURCE_DIR / "host_api" / "plugin_api" / "include" / "ppb" / "abi.h").read_text()
    assert 'ctypes.c_void_p.in_dll(lib, "ppb_memory_model_v1_3")' in abi
