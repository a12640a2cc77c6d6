"""`ppb design` end to end: the designed dry runs identify every coefficient (a fit of measurements
made from known coefficients recovers them exactly), their standard errors and worst prediction
error agree with NumPy's computation from the runs themselves, every run obeys its recompute rule,
its Megatron flags import back to the same stages, a prior model keeps every stage under a limit,
and bad requests exit 2 or 4 with the reason."""

import itertools
import json
import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

KINDS = ["none", "select", "comm", "both", "full"]
TRUTH = {"const_mb": 900.0, "head_mb": 700.0, "tail_mb": 1100.0, "param_per_layer_mb": 350.0,
         "activation_mb.none": 80.0, "activation_mb.select": 41.0, "activation_mb.comm": 63.0,
         "activation_mb.both": 27.0, "activation_mb.full": 6.5}
SOURCE = Path(os.environ.get("PPB_SOURCE_DIR", Path(__file__).resolve().parents[2]))


def ppb(*args, expect=0):
    done = subprocess.run([os.environ["PPB_CLI"], *map(str, args)], capture_output=True,
                          text=True, check=False)
    assert done.returncode == expect, (args, done.returncode, done.stderr)
    return done


def design(*args):
    return json.loads(ppb("design", *args, "--json").stdout)


def row(doc, p, s, layers):
    m = doc["micro_batches"]
    f = min(p - s, m)
    x = [1.0, float(s == 0), float(s == p - 1), float(sum(layers.values()))]
    x += [layers.get(k, 0) * f for k in doc["kinds"]]
    return np.array(x)


def names(doc):
    return ["const_mb", "head_mb", "tail_mb", "param_per_layer_mb"] + [
        "activation_mb." + k for k in doc["kinds"]]


def design_matrix(doc):
    return np.array([row(doc, r["num_stages"], st["stage"], st["layers"])
                     for r in doc["runs"] for st in r["stages"]])


def measured(doc, x):
    return float(x @ np.array([TRUTH[n] for n in names(doc)]))


def dryrun_file(doc, directory):
    observations = []
    for r in doc["runs"]:
        for st in r["stages"]:
            x = row(doc, r["num_stages"], st["stage"], st["layers"])
            observations.append({"config": r["label"], "num_stages": r["num_stages"],
                                 "stage": st["stage"], "layers": st["layers"],
                                 "peak_memory_mb": measured(doc, x)})
    path = Path(directory) / "dryrun.json"
    path.write_text(json.dumps({"format": "ppb.dryrun/1", "micro_batches": doc["micro_batches"],
                                "observations": observations}))
    return path


def check_rule(doc, rule):
    L = doc["num_layers"]
    for r in doc["runs"]:
        counts = [sum(st["layers"].values()) for st in r["stages"]]
        assert sum(counts) == L and min(counts) >= 1 and len(counts) == r["num_stages"]
        for st in r["stages"]:
            assert set(st["layers"]) <= set(doc["kinds"]), st
            if rule == "mindformers":
                assert not (st["layers"].get("select") and st["layers"].get("comm")), st
        if rule in ("megatron", "torchtitan"):
            assert r["megatron"] is not None
        if rule == "torchtitan":  # one mode for every layer: no stage mixes kinds, all alike
            kinds = {k for st in r["stages"] for k, n in st["layers"].items() if n}
            assert len(kinds) == 1, r
        if rule in ("mindformers", "megatron", "torchtitan"):
            assert r["mindformers"] is not None


CASES = [
    ("4", 8, "none,full", "mindformers"),
    ("4", 12, "none,select,comm,both,full", "any"),
    ("4", 12, "none,select,comm,both,full", "mindformers"),
    ("4", 10, "none,select,full", "megatron"),
    ("2,3", 9, "none,select", "mindformers"),
    ("8", 16, "select,full", "megatron"),
    ("4", 12, "none,select,full", "torchtitan"),
]


@pytest.mark.parametrize("stages,layers,kinds,rule", CASES)
def test_design_identifies_every_coefficient_and_the_fit_recovers_them(stages, layers, kinds, rule):
    doc = design("--stages", stages, "--num-layers", layers, "--kinds", kinds,
                 "--recompute-rule", rule, "--noise-mb", 2)
    assert doc["format"] == "ppb.design/1"
    check_rule(doc, rule)
    X = design_matrix(doc)
    u = len(names(doc))
    assert np.linalg.matrix_rank(X) == u
    # The fewest runs: one fewer cannot hold enough rows or was not found to identify.
    assert len(doc["runs"]) == doc["fewest_runs"]
    assert (len(doc["runs"]) - 1) * max(map(int, stages.split(","))) < u or len(doc["runs"]) >= 1
    # Standard errors: 2 MB x sqrt(diag((X^T X)^-1)), and the worst prediction over V.
    cov = np.linalg.inv(X.T @ X)
    for j, n in enumerate(names(doc)):
        assert doc["std_errors_mb"][n] == pytest.approx(2.0 * np.sqrt(cov[j, j]), rel=1e-6)
    worst = 0.0
    for p in map(int, stages.split(",")):
        for s in range(p):
            for n in (1, layers - p + 1):
                for k in doc["kinds"]:
                    x = row(doc, p, s, {k: n})
                    worst = max(worst, x @ cov @ x)
    assert doc["worst_prediction_std_error_mb"] == pytest.approx(2.0 * np.sqrt(worst), rel=1e-6)
    # Measurements from known coefficients: ppb fit recovers every one, none folded.
    with tempfile.TemporaryDirectory() as d:
        fit = json.loads(ppb("fit", dryrun_file(doc, d), "--json").stdout)
    assert fit["diagnostics"]["const_folded"] is False
    params = fit["parameters"]
    assert params["const_mb"] == pytest.approx(TRUTH["const_mb"], abs=1e-6)
    assert params["head_mb"] == pytest.approx(TRUTH["head_mb"], abs=1e-6)
    assert params["tail_mb"] == pytest.approx(TRUTH["tail_mb"], abs=1e-6)
    assert params["param_per_layer_mb"] == pytest.approx(TRUTH["param_per_layer_mb"], abs=1e-6)
    for k in doc["kinds"]:
        assert params["activation_mb"][k] == pytest.approx(TRUTH["activation_mb." + k], abs=1e-6)


def test_the_design_is_the_same_every_time_and_more_runs_cost_no_precision():
    args = ("--stages", "4", "--num-layers", "8", "--kinds", "none,full")
    assert design(*args) == design(*args)
    few = design(*args)
    more = design(*args, "--runs", len(few["runs"]) + 2)
    assert len(more["runs"]) == len(few["runs"]) + 2
    assert more["worst_prediction_std_error_mb"] <= few["worst_prediction_std_error_mb"] + 1e-9
    assert np.linalg.matrix_rank(design_matrix(more)) == 6


def test_megatron_flags_import_back_to_the_designed_stages():
    doc = design("--stages", "4", "--num-layers", "10", "--kinds", "none,full",
                 "--recompute-rule", "megatron")
    for r in doc["runs"]:
        with tempfile.TemporaryDirectory() as d:
            log = Path(d) / "run.log"
            log.write_text("".join(
                f"[Rank {s}] (after 2 iterations) memory (MB) | allocated: 100.0 | "
                f"max allocated: {1000.0 + s} | reserved: 2000.0 | max reserved: 2000.0\n"
                for s in range(r["num_stages"])))
            out = json.loads(ppb("import", "megatron", log, *r["megatron"]["args"],
                                 "--world-size", r["num_stages"], "--num-microbatches",
                                 doc["micro_batches"], "--label", r["label"]).stdout)
        got = sorted((o["stage"], o["layers"], o["config"]) for o in out["observations"])
        want = sorted((st["stage"], st["layers"], r["label"]) for st in r["stages"])
        assert [(s, {k: v for k, v in l.items() if v}, c) for s, l, c in got] == want


def test_sapp_skeleton_filled_in_imports_as_the_designed_run():
    doc = design("--stages", "4", "--num-layers", "8", "--kinds", "none,select,full")
    r = doc["runs"][0]
    lines = r["sapp_init"].splitlines()
    body = [line for line in lines if not line.lstrip().startswith("#")]
    assert sum(line.count("null") for line in body) == r["num_stages"]
    filled = "\n".join(line if line.lstrip().startswith("#") else line.replace("null", "1000")
                       for line in lines)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "init.yaml"
        path.write_text(filled)
        out = json.loads(ppb("import", "sapp", path, "--label", r["label"]).stdout)
    got = sorted((o["stage"], {k: v for k, v in o["layers"].items() if v})
                 for o in out["observations"])
    assert got == sorted((st["stage"], st["layers"]) for st in r["stages"])


def table_options(d):
    """The table model as a prior: a SAPP layer file of known coefficients."""
    layer_file = {
        "name": "prior", "stage_const_mem": 900,
        "layers_description": [
            {"name": "embedding", "type": "HEAD", "model_name": "m", "nb_layer": 1, "time": 1,
             "memory_parameter": 700},
            {"name": "block", "type": "BODY", "model_name": "m", "nb_layer": 8, "time": 1,
             "memory_parameter": 350, "memory_activation": 80, "memory_recompute": 6.5},
            {"name": "head", "type": "TAIL", "model_name": "m", "nb_layer": 1, "time": 1,
             "memory_parameter": 1100}]}
    path = Path(d) / "layers.json"
    path.write_text(json.dumps(layer_file))
    return path


def test_a_prior_and_a_limit_keep_every_stage_under_it_or_say_what_limit_would_do():
    with tempfile.TemporaryDirectory() as d:
        prior = ("--model", "table", "--model-options", table_options(d))
        base = ("--stages", "4", "--num-layers", "8", "--kinds", "none,full")
        free = design(*base, *prior)
        peak = max(st["prior_memory_mb"] for r in free["runs"] for st in r["stages"])
        limit = peak - 200.0
        doc = design(*base, *prior, "--memory-limit-mb", limit)
        assert np.linalg.matrix_rank(design_matrix(doc)) == 6
        for r in doc["runs"]:
            for st in r["stages"]:
                x = row(doc, r["num_stages"], st["stage"], st["layers"])
                assert st["prior_memory_mb"] == pytest.approx(measured(doc, x))
                assert st["prior_memory_mb"] <= limit
        # Too low for 'none' layers to vary: the only run that fits is 1, 3, 3, 1 layers, which
        # cannot identify everything. The message names what is missing and a limit that would do.
        tight = ("--stages", "4", "--num-layers", "8", "--kinds", "none", *prior)
        low = ppb("design", *tight, "--memory-limit-mb", 2700, expect=4)
        assert low.stdout == ""
        assert "within --memory-limit-mb 2700.0 no design" in low.stderr, low.stderr
        named = low.stderr.split(" identifies ")[1].split(";")[0]
        assert any(n in named for n in ("const_mb", "param_per_layer_mb", "activation_mb.none",
                                        "head_mb", "tail_mb")), low.stderr
        would = float(low.stderr.split("a limit of ")[1].split(" MB")[0])
        assert would > 2700.0
        ok = design(*tight, "--memory-limit-mb", would + 0.1)
        assert np.linalg.matrix_rank(design_matrix(ok)) == 5
        assert max(st["prior_memory_mb"] for r in ok["runs"] for st in r["stages"]) <= would + 0.1


@pytest.mark.parametrize("args,status,words", [
    (("--stages", "1", "--num-layers", "4"), 4, ["const_mb", "degree of 3 or more"]),
    (("--stages", "2", "--num-layers", "4"), 4, ["const_mb", "degree of 3 or more"]),
    (("--stages", "4", "--num-layers", "8", "--micro-batches", "1"), 4, ["--micro-batches 2"]),
    (("--stages", "4", "--num-layers", "3"), 2, ["--num-layers: 3 is fewer than the 4 stages"]),
    (("--stages", "4", "--num-layers", "8", "--kinds", "comm", "--recompute-rule", "megatron"), 2,
     ["communication recompute"]),
    (("--stages", "4", "--num-layers", "8", "--kinds", "both", "--recompute-rule", "torchtitan"),
     2, ["torchtitan has no communication recompute"]),
    (("--stages", "4", "--num-layers", "8", "--memory-limit-mb", "1000"), 2, ["prior model"]),
    (("--stages", "4", "--num-layers", "8", "--kinds", "nothing"), 2, ["--kinds"]),
    (("--stages", "0", "--num-layers", "8"), 2, ["--stages"]),
    (("--stages", "4", "--num-layers", "8", "--runs", "1"), 4, ["--runs 1", "fewest"]),
])
def test_bad_requests(args, status, words):
    done = ppb("design", *args, expect=status)
    assert done.stdout == ""
    for w in words:
        assert w in done.stderr, done.stderr


def test_human_output_names_every_run_with_its_flags_and_the_errors():
    doc = design("--stages", "4", "--num-layers", "8", "--kinds", "none,full")
    text = ppb("design", "--stages", "4", "--num-layers", "8", "--kinds", "none,full").stdout
    for r in doc["runs"]:
        assert f"{r['label']}: 4 stages" in text
        if r["megatron"] is None:
            assert "Megatron-LM: none (its one recompute setting per run" in text
        else:
            assert " ".join(a if "|" not in a else f"'{a}'"
                            for a in r["megatron"]["args"]) in text
        assert "offset: " + json.dumps(r["mindformers"]["offset"]).replace(" ", "") in text
    for n, se in doc["std_errors_mb"].items():
        assert f"{n}" in text and f"{se:.3f} MB" in text


def plan_of(doc, train, directory):
    """A 1F1B plan of 8 layers on 4 stages under 3000 MB, fitted to `train`; and its file."""
    layers = Path(directory) / "layers.json"
    layers.write_text(json.dumps({"layers_description": [
        {"name": "e", "type": "HEAD", "nb_layer": 1, "time": 2.0},
        {"name": "b", "type": "BODY", "nb_layer": 8, "time": 6.0},
        {"name": "h", "type": "TAIL", "nb_layer": 1, "time": 3.0}]}))
    plan = json.loads(ppb("partition", "--model-desc", layers, "--dryrun", train, "--stages",
                          4, "--micro-batches", doc["micro_batches"], "--memory-limit-mb",
                          3000, "--kinds", "none,full", "--json").stdout)
    plan_file = Path(directory) / "plan.json"
    plan_file.write_text(json.dumps(plan))
    return plan, plan_file


def test_compare_puts_a_plan_s_measured_stages_beside_its_predictions():
    doc = design("--stages", "4", "--num-layers", "8", "--kinds", "none,full", "--runs", 3)
    with tempfile.TemporaryDirectory() as d:
        train = dryrun_file(doc, d)
        plan, plan_file = plan_of(doc, train, d)
        # The plan's run measured 10 MB above the truth on every stage but the last, which the
        # run did not report.
        observations = []
        for st in plan["stages"][:-1]:
            layers_ = {k: n for k, n in st["layers"].items() if n}
            x = row(doc, 4, st["stage"], layers_)
            observations.append({"config": "plan-run", "num_stages": 4, "stage": st["stage"],
                                 "layers": layers_, "peak_memory_mb": measured(doc, x) + 10.0})
        run = Path(d) / "plan-run.json"
        run.write_text(json.dumps({"format": "ppb.dryrun/1", "micro_batches": doc["micro_batches"],
                                   "observations": observations}))
        done = ppb("compare", train, "--model", "dryrun-lsq", "--partition", plan_file,
                   "--measured", run, "--json")
        out = json.loads(done.stdout)
        text = ppb("compare", train, "--model", "dryrun-lsq", "--partition", plan_file,
                   "--measured", run).stdout
    rows = [r for r in out["placements"] if r["label"].startswith("plan")]
    assert len(rows) == 4
    for r in rows[:-1]:
        assert r["label"] == "plan (plan-run)"
        assert r["predictions"][0]["error_mb"] == pytest.approx(-10.0, abs=1e-6)
    assert rows[-1]["measured_mb"] is None
    assert "holds no observation of the plan's stage 3" in done.stderr
    assert "plan (plan-run)" in text
    bad = ppb("compare", "--model", "dryrun-lsq", "--measured", "x.json", expect=2)
    assert "--partition" in bad.stderr and bad.stdout == ""


def test_one_gpu_per_rank_commands_import_back_their_snapshots():
    """`--world-size`: each run's commands for one GPU per rank (Megatron-LM's fake process group,
    torchtitan's fake backend) name the rank that holds each stage, and the snapshots they write,
    imported with the printed `ppb import snapshot` arguments, come back as the designed stages
    with their memory. The snapshots are made by tests/data/snapshots' allocator: a stage's weights
    once, then one block of activations per micro-batch in flight."""
    import pickle
    import sys
    sys.path.insert(0, str(SOURCE / "tests/data/snapshots"))
    import make_snapshots  # noqa: E402 (the fixtures' own allocator)

    doc = design("--stages", "4", "--num-layers", "16", "--kinds", "none,full",
                 "--recompute-rule", "torchtitan", "--world-size", "8")
    mib = make_snapshots.MIB
    with tempfile.TemporaryDirectory() as t:
        out = Path(t) / "dryruns.json"
        expected = []
        for i, r in enumerate(doc["runs"]):
            one = r["one_gpu"]
            assert one["world_size"] == 8 and one["ranks"] == [0, 2, 4, 6]
            assert one["megatron"]["args"][-4:] == [
                "--fake-process-group", "--record-memory-history", "--memory-snapshot-path",
                f"{r['label']}.pickle"]
            parts = one["torchtitan"]["module_fqns_per_model_part"]
            assert [sum(n.startswith("layers.") for n in p) for p in parts] == [
                sum(st["layers"].values()) for st in r["stages"]]
            assert parts[0][0] == "tok_embeddings" and parts[-1][-2:] == ["norm", "output"]
            kinds = {k for st in r["stages"] for k in st["layers"]}
            assert len(kinds) == 1  # torchtitan: one mode per run
            assert one["torchtitan"]["activation_checkpoint"]["mode"] == kinds.pop()
            assert "--profiler.enable_memory_snapshot" in one["torchtitan"]["args"]
            files = []
            for st, rank in zip(r["stages"], one["ranks"]):
                p, s = r["num_stages"], st["stage"]
                f = min(p - s, doc["micro_batches"])
                x = row(doc, p, s, st["layers"])
                static = float(x[:4] @ np.array([TRUTH[n] for n in names(doc)[:4]]))
                activation = sum(TRUTH["activation_mb." + k] * n for k, n in st["layers"].items())
                allocator = make_snapshots.Allocator()
                allocator.alloc(int(static * mib))
                live = [allocator.alloc(int(activation * mib)) for _ in range(f)]
                for block in live:
                    allocator.free(block)
                snapshot, truth = allocator.snapshot()
                path = Path(t) / f"{r['label']}_{rank}.pickle"  # Megatron-LM's name for the rank
                path.write_bytes(pickle.dumps(snapshot, protocol=4))
                files.append(path)
                expected.append((r["label"], p, s, st["layers"], truth["allocated_peak"] / mib))
            ppb("import", "snapshot", *one["import_args"], *files,
                *(["-o", out] if i == 0 else ["--append", out]))
        observations = json.loads(out.read_text())["observations"]
        got = {(o["config"], o.get("num_stages", 4), o["stage"]): o for o in observations}
        assert len(got) == len(expected)
        for label, p, s, layers, peak in expected:
            o = got[(label, p, s)]
            assert {k: v for k, v in o["layers"].items() if v} == layers
            assert o["peak_memory_mb"] == pytest.approx(peak, abs=1e-3)
    text = ppb("design", "--stages", "4", "--num-layers", "16", "--kinds", "none,full",
               "--recompute-rule", "torchtitan", "--world-size", "8").stdout
    assert "RANK=$RANK WORLD_SIZE=8 LOCAL_RANK=0 python pretrain_gpt.py YOUR_ARGS" in text
    assert "NGPU=8 RANK=$RANK COMM_MODE=fake_backend ./run_train.sh YOUR_ARGS" in text
    assert "for RANK in 0 2 4 6:" in text
    bad = ppb("design", "--stages", "4", "--num-layers", "16", "--world-size", "6", expect=2)
    assert "--world-size 6" in bad.stderr and "not a multiple of 4" in bad.stderr
    assert bad.stdout == ""


def test_compare_takes_the_plan_s_own_snapshots_and_torchtitan_logs():
    """`ppb compare --partition PLAN --measured` with the run's memory snapshots (a directory, as
    torchtitan writes them) or torchtitan's logs: each rank placed by the plan (rank r of N runs
    stage r / (N / P)), each stage's measured peak beside the predictions."""
    import pickle
    import sys
    sys.path.insert(0, str(SOURCE / "tests/data/snapshots"))
    import make_snapshots  # noqa: E402 (the fixtures' own allocator)

    doc = design("--stages", "4", "--num-layers", "8", "--kinds", "none,full", "--runs", 3)
    mib = make_snapshots.MIB
    with tempfile.TemporaryDirectory() as d:
        train = dryrun_file(doc, d)
        plan, plan_file = plan_of(doc, train, d)
        # 8 ranks, 2 per stage; torchtitan's names: step_<12 digits>/<6-digit rank>_step_1.pickle.
        step = Path(d) / "outputs" / "run" / "step_000000000001"
        step.mkdir(parents=True)
        logs = Path(d) / "logs"
        logs.mkdir()
        truth = {}
        for st in plan["stages"]:
            layers_ = {k: n for k, n in st["layers"].items() if n}
            peak = measured(doc, row(doc, 4, st["stage"], layers_)) + 10.0
            for rank in (2 * st["stage"], 2 * st["stage"] + 1):
                allocator = make_snapshots.Allocator()
                allocator.alloc(int(peak * mib))
                snapshot, expected = allocator.snapshot()
                (step / f"{rank:06d}_step_1.pickle").write_bytes(
                    pickle.dumps(snapshot, protocol=4))
                truth[st["stage"]] = expected["allocated_peak"] / mib
                gib = peak * 1.25 / 1024  # the reserved memory torchtitan logs, in GiB
                (logs / f"rank_{rank}.log").write_text(
                    f"[rank{rank}]:[titan] 2026-12-01 10:00:00,000 - root - INFO - step:  1  "
                    f"loss: 10.8  grad_norm:  1.2  memory: {gib:.2f}GiB(50.00%)  tps: 1,000  "
                    f"tflops: 10.00  mfu: 1.00%\n")
        out = json.loads(ppb("compare", train, "--model", "dryrun-lsq", "--partition", plan_file,
                             "--measured", Path(d) / "outputs", "--world-size", 8,
                             "--json").stdout)
        rows = [r for r in out["placements"] if r["label"].startswith("plan")]
        assert [r["label"] for r in rows] == ["plan (measured)"] * 4
        for st, r in zip(plan["stages"], rows):
            assert r["measured_mb"] == pytest.approx(truth[st["stage"]], abs=1e-3)
            assert r["predictions"][0]["error_mb"] == pytest.approx(
                r["predictions"][0]["memory_mb"] - truth[st["stage"]], abs=1e-6)
        from_logs = ppb("compare", train, "--model", "dryrun-lsq", "--partition", plan_file,
                        "--measured", logs, "--world-size", 8, "--json")
        assert "peak reserved memory" in from_logs.stderr
        rows = [r for r in json.loads(from_logs.stdout)["placements"]
                if r["label"].startswith("plan")]
        for st, r in zip(plan["stages"], rows):
            layers_ = {k: n for k, n in st["layers"].items() if n}
            gib = (measured(doc, row(doc, 4, st["stage"], layers_)) + 10.0) * 1.25 / 1024
            assert r["measured_mb"] == pytest.approx(round(gib, 2) * 1024, abs=1e-6)
        # A world size the plan's stages do not divide, and --world-size without --measured.
        bad = ppb("compare", train, "--model", "dryrun-lsq", "--partition", plan_file,
                  "--measured", Path(d) / "outputs", "--world-size", 6, expect=2)
        assert "6" in bad.stderr and bad.stdout == ""
        ppb("compare", train, "--model", "dryrun-lsq", "--partition", plan_file,
            "--world-size", 8, expect=2)
