"""Imports ppb in whatever interpreter runs this (CTest runs it with the python3 first on PATH,
which may lack NumPy and pytest): lists the plugins, fits the sample, and predicts what the ppb
command predicts. Exits non-zero with a message on any difference."""

import json
import os
import subprocess
import sys

import ppb

source = os.environ["PPB_SOURCE_DIR"]
dryrun = os.path.join(source, "samples", "data", "llama70b-pp8-dryrun.json")
records = ppb.plugins()
assert any(r["name"] == "dryrun-lsq" and r["verdict"] == "usable" for r in records), records
with ppb.load_model("dryrun-lsq@1") as model:
    model.fit(dryrun)
    got = model.predict(3, {"select": 9, "full": 1})
done = subprocess.run([os.environ["PPB_CLI"], "predict", dryrun, "--stage", "3", "--layers",
                       "select=9,full=1", "--json"], capture_output=True, text=True, check=True)
expected = json.loads(done.stdout)["peak_memory_mb"]
assert got == expected, (got, expected)
print(f"ppb imported in Python {sys.version.split()[0]} ({sys.executable}): {got} MB")
