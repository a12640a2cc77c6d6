"""ppb.sapp.ComputeMemory gives what SAPP's own tests assert of its ComputeMemory.

The reference: mindspore-ai/hyper-parallel, tests/ut/auto_parallel/sapp_ppb/test_compute_memory.py
at commit 44995b4b557ae6cfd3dd74a6ed7b6bbb44ed750f (test_compute_memory,
test_compute_memory_with_const, test_compute_memory_pp4, test_compute_memory_lstsq), which
asserts int() of each getter. Its inputs mem.yaml, mem_pp4.yaml and mem_lstsq.yaml are in
tests/data/sapp (each names its source and commit); they are read with 'ppb import sapp', whose
stages are SAPP's memory_parser's (same layers and recompute kinds per stage, same memories).
"""

import json

import pytest

from conftest import SOURCE_DIR
from ppb.sapp import ComputeMemory, Stage, TYPE

SAPP_DATA = SOURCE_DIR / "tests" / "data" / "sapp"
KIND_TYPE = {"none": TYPE.NONE, "select": TYPE.SLCT, "comm": TYPE.COMM, "both": TYPE.BOTH,
             "full": TYPE.FULL}


def stages_of(cli, name):
    """The stages SAPP's memory_parser builds from a -init YAML, via 'ppb import sapp'."""
    document = json.loads(cli.run("import", "sapp", SAPP_DATA / name).stdout)
    stages = []
    for o in document["observations"]:
        rec = {KIND_TYPE[kind]: n for kind, n in o["layers"].items()}
        stages.append(Stage(o["stage"], document["num_stages"], sum(rec.values()), rec,
                            o["peak_memory_mb"]))
    return document["num_stages"], stages


def getters(cm, types):
    return {"head": int(cm.get_memory_head()), "parameter": int(cm.get_memory_parameter()),
            "tail": int(cm.get_memory_tail()),
            **{t.name: int(cm.get_memory_activation(t)) for t in types}}


def test_six_hand_made_stages():
    # test_compute_memory: 16 stages of 6 layers, communication and full recompute.
    def stage(sid, comm, full, memory):
        return Stage(sid, 16, 6, {TYPE.COMM: comm, TYPE.FULL: full}, memory)

    stages_a = [stage(1, 0, 1, 71519), stage(2, 0, 1, 67376), stage(3, 0, 2, 52962),
                stage(9, 2, 0, 39373), stage(0, 1, 1, 80267), stage(15, 0, 1, 16386)]
    cm = ComputeMemory(number_of_stage=16, stages_a=stages_a)
    assert getters(cm, [TYPE.NONE, TYPE.COMM, TYPE.FULL]) == {
        "head": 9785, "parameter": 1562, "tail": 2868, "NONE": 822, "COMM": 498, "FULL": 32}


def test_mem_yaml_with_its_constant(cli):
    number, stages = stages_of(cli, "mem.yaml")
    cm = ComputeMemory(number_of_stage=number, stages_a=stages)
    assert getters(cm, [TYPE.NONE, TYPE.SLCT, TYPE.COMM, TYPE.BOTH]) == {
        "head": 4245, "parameter": 2141, "tail": 1203, "NONE": 852, "SLCT": 767, "COMM": 535,
        "BOTH": 511}
    assert int(cm.get_memory_const()) == -1896


def test_mem_pp4_yaml_two_dry_runs(cli):
    number, stages = stages_of(cli, "mem_pp4.yaml")
    cm = ComputeMemory(number_of_stage=number, stages_a=stages)
    assert getters(cm, [TYPE.NONE, TYPE.FULL]) == {
        "head": 1459, "parameter": 400, "tail": 3329, "NONE": 743, "FULL": 131}


def test_mem_lstsq_yaml_more_stages_than_unknowns(cli):
    number, stages = stages_of(cli, "mem_lstsq.yaml")
    cm = ComputeMemory(number_of_stage=number, stages_a=stages)
    assert getters(cm, [TYPE.NONE, TYPE.SLCT, TYPE.COMM, TYPE.BOTH]) == {
        "head": 4614, "parameter": 2217, "tail": 5885, "NONE": 1002, "SLCT": 783, "COMM": 695,
        "BOTH": 423}
    # Least squares: residuals left, so every fitted value has a standard error.
    assert cm.std_errors["param_per_layer_mb"] > 0


def test_hyper_parallels_import_path_is_named():
    import ppb.sapp
    assert "hyper_parallel.auto_parallel.sapp_ppb.utils.compute_memory" in ppb.sapp.__doc__
