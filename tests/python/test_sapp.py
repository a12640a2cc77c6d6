"""ppb.sapp.ComputeMemory with stand-in SAPP stage objects, on cases computed by hand."""

import enum
import json

import pytest

import ppb
from ppb.sapp import ComputeMemory, RecomputeType

# SAPP's own IntEnum, as toolkit/pipeline_balance/utils/recompute.py declares it (a stand-in:
# SAPP is not installed here).
SappType = enum.IntEnum("RecomputeType", ["NONE", "SLCT", "COMM", "BOTH", "FULL"], start=0)


class SappStage:
    """Stand-in for SAPP's Stage: the attributes its ComputeMemory reads."""

    def __init__(self, sid, nb_stage, nb_layer, nb_layer_rec, memory_usage):
        self.id_ = sid
        self.nb_stage_ = nb_stage
        self.nb_layer_ = nb_layer
        self.nb_layer_rec_ = nb_layer_rec
        self.memory_usage_ = memory_usage


# Known coefficients (MB) the stages are generated from.
C, H, T, P = 2000.0, 1500.0, 2500.0, 400.0
A = {SappType.NONE: 60.0, SappType.SLCT: 30.0, SappType.FULL: 5.0}


def memory(sid, p, rec):
    """SAPP's model: stage id of p holds p - id micro-batches in flight."""
    n = sum(rec.values())
    m = C + (H if sid == 0 else 0.0) + (T if sid == p - 1 else 0.0) + P * n
    return m + (p - sid) * sum(A[r] * k for r, k in rec.items())


def stage(sid, p, rec, **keys):
    return SappStage(sid, p, sum(rec.values()), dict(rec), memory(sid, p, rec), **keys)


def stages_a():
    p = 4
    mixes = [{SappType.SLCT: 3, SappType.FULL: 1}, {SappType.SLCT: 4, SappType.FULL: 1},
             {SappType.NONE: 1, SappType.SLCT: 4}, {SappType.NONE: 3, SappType.SLCT: 1}]
    return [stage(s, p, mixes[s]) for s in range(p)]


def stages_b():
    p = 4
    mixes = [{SappType.FULL: 4}, {SappType.NONE: 2, SappType.FULL: 4},
             {SappType.SLCT: 6}, {SappType.NONE: 5}]
    return [stage(s, p, mixes[s]) for s in range(p)]


def test_getters_recover_the_coefficients_with_sapps_conventions():
    cm = ComputeMemory(4, stages_a(), stages_b())
    assert cm.get_memory_parameter() == pytest.approx(P)
    assert cm.get_memory_activation(SappType.NONE) == pytest.approx(60.0)
    assert cm.get_memory_activation(SappType.SLCT) == pytest.approx(30.0)
    assert cm.get_memory_activation(SappType.FULL) == pytest.approx(5.0)
    assert cm.get_memory_const() == pytest.approx(C)
    # SAPP's head and tail hold the constant.
    assert cm.get_memory_head() == pytest.approx(C + H)
    assert cm.get_memory_tail() == pytest.approx(C + T)
    # Types no stage uses are None, never 0; ints and names work as SAPP's members do.
    assert cm.get_memory_activation(SappType.COMM) is None
    assert cm.get_memory_activation(3) is None
    assert cm.get_memory_activation("FULL") == cm.get_memory_activation(4)
    considered = cm.recompute_considered_
    assert considered[SappType.NONE] and considered[SappType.SLCT] and considered[SappType.FULL]
    assert not considered[SappType.COMM] and not considered[SappType.BOTH]
    assert considered[RecomputeType.FULL] is considered[SappType.FULL]
    assert cm.memory_activation_rec_[SappType.SLCT] == pytest.approx(30.0)
    assert cm.not_identifiable == []
    # Exactly determined data: no residual, every standard error 0 or none at all.
    assert all(abs(v) < 1e-6 for v in cm.std_errors.values())
    assert cm.report["format"] == "ppb.fit/1"


def test_older_names_and_none_completion():
    a = stages_a()
    # SAPP's Stage completes a missing NONE count as nb_layer minus the others.
    a[2].nb_layer_rec_ = {SappType.SLCT: 4}
    a[2].nb_layer_ = 5
    cm = ComputeMemory(number_of_stage=4, stages_A=a, stages_B=stages_b())
    assert cm.stages_A is cm.stages_a
    assert cm.get_memory_parameter() == pytest.approx(P)
    assert cm.observations["observations"][2]["layers"] == {"none": 1, "select": 4}
    assert cm.observations["observations"][2]["in_flight"] == 2


def test_undetermined_values_are_none():
    # No stage 0 and no last stage: neither head nor tail is determined.
    body = [s for s in stages_a() + stages_b() if s.id_ in (1, 2)]
    cm = ComputeMemory(4, body)
    assert cm.get_memory_head() is None
    assert cm.get_memory_tail() is None
    params = cm.report["parameters"]
    assert params["head_mb"] is None and params["tail_mb"] is None
    reasons = {e["parameter"]: e["reason"] for e in cm.not_identifiable}
    assert "no observation of stage 0" in reasons["head_mb"]


def test_folded_constant_is_none_and_the_ends_hold_it():
    # One configuration whose two body stages hold 4 layers each: the constant cannot be told
    # from the per-layer memory (SAPP's case without a constant component: 1 recompute type + 3
    # stages), so the fit folds it. By hand, with C spread over the 4 layers of a body stage:
    # P' = P + C/4 = 900; head = H + C - 3 C/4 = 2000 (3 layers on stage 0); tail = T + C - 5 C/4
    # = 2000 (5 layers on stage 3); the activation is untouched.
    p = 4
    counts = [3, 4, 4, 5]
    stages = [stage(s, p, {SappType.NONE: counts[s]}) for s in range(p)]
    cm = ComputeMemory(p, stages)
    assert cm.get_memory_const() is None
    assert cm.report["diagnostics"]["const_folded"] is True
    assert cm.get_memory_parameter() == pytest.approx(P + C / 4)
    assert cm.get_memory_activation(SappType.NONE) == pytest.approx(60.0)
    assert cm.get_memory_head() == pytest.approx(2000.0)
    assert cm.get_memory_tail() == pytest.approx(2000.0)
    # SAPP's own formulas then give back every measured stage: head + layers with p in flight.
    head, tail = stages[0], stages[-1]
    assert cm.get_memory_head() + head.nb_layer_ * cm.get_memory_parameter() + p * 3 * 60.0 == \
        pytest.approx(head.memory_usage_)
    assert cm.get_memory_tail() + tail.nb_layer_ * cm.get_memory_parameter() + 1 * 5 * 60.0 == \
        pytest.approx(tail.memory_usage_)


def test_bad_stages_are_invalid_input():
    bad = stages_a()
    bad[2].nb_layer_ = 9  # its nb_layer_rec_ gives NONE: 1, SLCT: 4
    with pytest.raises(ppb.InvalidInput, match=r"stages_a\[2\]: nb_layer_ is 9"):
        ComputeMemory(4, bad).get_memory_parameter()
    with pytest.raises(ppb.InvalidInput, match="unknown recompute type 7"):
        ComputeMemory(4, [SappStage(0, 4, 1, {7: 1}, 100.0)]).get_memory_parameter()


def test_layer_file_is_ppb_fit_export_sapp(cli, tmp_path):
    cm = ComputeMemory(4, stages_a(), stages_b())
    dryrun = tmp_path / "sapp.json"
    dryrun.write_text(json.dumps(cm.observations))
    exported = tmp_path / "cli-layers.json"
    cli.run("fit", dryrun, "--export-sapp", exported)
    written = tmp_path / "layers.json"
    text = cm.write_layer_file(written, name="sapp")
    assert json.loads(text) == json.loads(exported.read_text())
    layers = json.loads(written.read_text())
    body = next(e for e in layers["layers_description"] if e["type"] == "BODY")
    assert body["memory_parameter"] == pytest.approx(P)
    assert layers["stage_const_mem"] == pytest.approx(C)
