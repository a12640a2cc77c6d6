"""The module against the ppb command on the bundled samples: the same numbers, documents and
messages, since both run the host library's code."""

import json
import math
import os
import stat

import pytest

import ppb
from conftest import DATA, LLAMA_DRYRUN, LLAMA_LAYERS, MOE_DRYRUN, MOE_LAYERS, error_message


def test_plugins_lists_the_built_plugins_as_the_command_does(cli):
    records = ppb.plugins()
    listed = cli.json("plugins")
    by_path = {r["path"]: r for r in records}
    assert {(p["name"], p["version"], p["verdict"]) for p in listed["plugins"]} == {
        (r["name"], r["version"], r["verdict"]) for r in records}
    lsq = [r for r in records if r["name"] == "dryrun-lsq"]
    assert len(lsq) == 1 and lsq[0]["verdict"] == "usable" and lsq[0]["api"] == "1.4"
    assert os.path.basename(lsq[0]["path"]) == f"ppb-dryrun-lsq-{lsq[0]['version']}.so"
    assert all(os.path.isabs(p) for p in by_path)


def test_fit_report_is_ppb_fit_json(cli):
    with ppb.load_model("dryrun-lsq@1") as model:
        model.fit(LLAMA_DRYRUN)
        assert model.report == cli.json("fit", LLAMA_DRYRUN)
        assert model.parameters == model.report["parameters"]
        assert model.groups == ["body"]
        assert model.name == "dryrun-lsq" and model.api == "1.4" and model.fitted


def test_predict_and_std_error_equal_ppb_predict(cli):
    model = ppb.load_model().fit(str(LLAMA_DRYRUN))
    for stage, layers, flags in [
        (3, {"select": 9, "full": 1}, []),
        (0, {"select": 5, "full": 4}, []),
        (7, {"none": 6, "select": 5}, []),
        (2, {"none": 4, "full": 6}, ["--in-flight", "3"]),
    ]:
        items = ",".join(f"{k}={n}" for k, n in layers.items())
        expected = cli.json("predict", LLAMA_DRYRUN, "--stage", stage, "--layers", items, *flags)
        in_flight = int(flags[1]) if flags else None
        assert model.predict(stage, layers, in_flight=in_flight) == expected["peak_memory_mb"]
        assert model.std_error(stage, layers, in_flight=in_flight) == expected["std_error_mb"]
        assert expected["std_error_mb"] is not None and expected["std_error_mb"] > 0
        # The whole document, from the library's prediction_document.
        assert model.prediction(stage, layers, in_flight=in_flight) == expected


def megatron_interleaved_states(p, v, m, rank):
    """Every in-flight vector rank `rank` passes through under Megatron-LM's interleaved order
    (NVIDIA/Megatron-LM megatron/core/pipeline_parallel/schedules.py at 00611e6e:
    get_pp_rank_microbatches' (P - r - 1) * 2 + (v - 1) * P warm-up forwards, then one forward and
    one backward in turn; forward k runs chunk (k // P) % v, backward k chunk v - 1 - (k // P) % v),
    counts of 0 included: dryrun-lsq is linear, so ppb evaluates it there exactly."""
    total = m * v
    warm_up = min(total, (p - rank - 1) * 2 + (v - 1) * p)
    held = [0] * v
    states = []

    def step(chunk, delta):
        held[chunk] += delta
        states.append(tuple(held))

    for k in range(warm_up):
        step((k // p) % v, 1)
    for k in range(total - warm_up):
        step(((k + warm_up) // p) % v, 1)
        step(v - 1 - (k // p) % v, -1)
    for k in range(total - warm_up, total):
        step(v - 1 - (k // p) % v, -1)
    return states


def test_chunked_predict_is_the_largest_row_over_the_order_and_equals_ppb_predict(cli):
    model = ppb.load_model().fit(str(LLAMA_DRYRUN))
    params = model.parameters
    kinds = ["none", "select", "comm", "both", "full"]
    activation = {k: params["activation_mb"][k] or 0.0 for k in kinds}
    chunks = [{"none": 4}, {"full": 4}]
    for stage in range(4):
        base = params["const_mb"] + (params["head_mb"] if stage == 0 else 0.0) + (
            params["tail_mb"] if stage == 3 else 0.0) + 8 * params["param_per_layer_mb"]
        weights = [sum(activation[k] * n for k, n in c.items()) for c in chunks]
        expected = base + max(sum(w * f for w, f in zip(weights, state))
                              for state in megatron_interleaved_states(4, 2, 8, stage))
        got = model.predict(stage, chunks=chunks, num_stages=4, micro_batches=8,
                            schedule="interleaved")
        assert got == pytest.approx(expected, rel=1e-12)
        command = cli.json("predict", LLAMA_DRYRUN, "--stage", stage, "--stages", 4,
                           "--micro-batches", 8, "--schedule", "interleaved", "--chunk", "none=4",
                           "--chunk", "full=4")
        assert got == command["peak_memory_mb"]
        assert model.std_error(stage, chunks=chunks, num_stages=4, micro_batches=8,
                               schedule="interleaved") == command["std_error_mb"]
        # With its in-flight profile: every vector and the prediction at each.
        document = model.prediction(stage, chunks=chunks, num_stages=4, micro_batches=8,
                                    schedule="interleaved")
        assert document == command
        assert len(document["placement"]["in_flight_profile"]) >= 1
        assert max(v["peak_memory_mb"] for v in document["placement"]["in_flight_profile"]) == \
            document["peak_memory_mb"]


def test_fit_accepts_a_dict_and_a_dryrun_object():
    with open(LLAMA_DRYRUN, encoding="utf-8") as f:
        document = json.load(f)
    dryrun = ppb.read_dryrun(LLAMA_DRYRUN)
    assert len(dryrun) == len(document["observations"]) == 13
    assert dryrun.num_stages == 8 and dryrun.micro_batches == 32 and dryrun.schedule == "1f1b"
    first = dryrun.observations[0]
    assert first["stage"] == 0 and first["peak_memory_mb"] == 29874.2
    # The reader fills in 1F1B's in-flight count, min(P - s, M).
    assert first["chunks"] == [{"layers": {"select": 6, "full": 3}, "in_flight": 8}]
    a = ppb.load_model().fit(document)
    b = ppb.load_model().fit(dryrun)
    assert a.parameters == b.parameters
    assert a.predict(4, {"select": 10}) == b.predict(4, {"select": 10})


def test_partition_is_ppb_partition_json(cli):
    expected = cli.json("partition", "--model-desc", LLAMA_LAYERS, "--dryrun", LLAMA_DRYRUN,
                        "--stages", 8, "--memory-limit-mb", 30000)
    plan = ppb.partition(LLAMA_LAYERS, dryrun=LLAMA_DRYRUN, stages=8, memory_limit_mb=30000)
    assert plan == expected
    assert plan["format"] == "ppb.partition/1" and len(plan["stages"]) == 8
    # With a model already fitted, and a schedule with chunks (the objective chosen by simulation).
    model = ppb.load_model().fit(LLAMA_DRYRUN)
    expected = cli.json("partition", "--model-desc", LLAMA_LAYERS, "--dryrun", LLAMA_DRYRUN,
                        "--stages", 4, "--memory-limit-mb", 60000, "--schedule", "interleaved",
                        "--micro-batches", 16)
    plan = ppb.partition(LLAMA_LAYERS, model=model, stages=4, memory_limit_mb=60000,
                         schedule="interleaved", micro_batches=16)
    assert plan == expected
    # The default plan's lower bound and gap; fast=True is --fast (the exact optimum alone).
    simulated = plan["simulated"]
    assert 0 < simulated["lower_bound"] <= simulated["makespan"]
    assert simulated["gap"] == (simulated["makespan"] - simulated["lower_bound"]) / simulated["makespan"]
    fast = ppb.partition(LLAMA_LAYERS, model=model, stages=4, memory_limit_mb=60000,
                         schedule="interleaved", micro_batches=16, fast=True)
    assert fast == cli.json("partition", "--model-desc", LLAMA_LAYERS, "--dryrun", LLAMA_DRYRUN,
                            "--stages", 4, "--memory-limit-mb", 60000, "--schedule",
                            "interleaved", "--micro-batches", 16, "--fast")
    assert fast["simulated"]["makespan"] >= simulated["makespan"]
    assert ppb.partition(LLAMA_LAYERS, dryrun=LLAMA_DRYRUN, stages=8,
                         memory_limit_mb=30000)["simulated"]["lower_bound"] is None


def test_partition_takes_communication_and_the_weight_split(cli):
    # comm_time is --comm-time (one value, or one per boundary), weight_grad_share is
    # --weight-grad-share: the same plans as the command's, a zero-bubble one included.
    model = ppb.load_model().fit(LLAMA_DRYRUN)
    common = ("partition", "--model-desc", LLAMA_LAYERS, "--dryrun", LLAMA_DRYRUN, "--stages", 8,
              "--memory-limit-mb", 40000)
    plan = ppb.partition(LLAMA_LAYERS, model=model, stages=8, memory_limit_mb=40000, comm_time=2)
    assert plan == cli.json(*common, "--comm-time", 2)
    assert plan["comm_time"] == [2.0] * 7
    parts = plan["iteration_breakdown"]
    assert parts["communication"] > 0
    per_boundary = [1, 2, 3, 4, 5, 6, 7]
    plan = ppb.partition(LLAMA_LAYERS, model=model, stages=8, memory_limit_mb=40000,
                         comm_time=per_boundary, schedule="zb-h1", weight_grad_share=0.3)
    assert plan == cli.json(*common, "--comm-time", "1,2,3,4,5,6,7", "--schedule", "zb-h1",
                            "--weight-grad-share", 0.3)
    chunk = plan["stages"][3]["chunks"][0]
    assert chunk["weight_time"] == pytest.approx(
        0.3 * (chunk["backward_time"] - chunk["recompute_time"]))
    with pytest.raises(ppb.InvalidInput, match="comm_time: "):
        ppb.partition(LLAMA_LAYERS, model=model, stages=8, memory_limit_mb=40000,
                      comm_time=[1, 2])
    # The command's words, with the keyword for the flag (one owner: ppb/partition/request.hpp).
    with pytest.raises(ppb.InvalidInput) as refused:
        ppb.partition(LLAMA_LAYERS, model=model, stages=8, memory_limit_mb=40000,
                      weight_grad_share=1.5)
    assert str(refused.value) == "weight_grad_share: 1.5 is not a share: give a number from 0 to 1"
    assert refused.value.field == "weight_grad_share"
    with pytest.raises(ppb.InvalidInput) as refused:
        ppb.partition(LLAMA_LAYERS, model=model, stages=8, memory_limit_mb=40000,
                      memory_margin_mb=40000)
    assert refused.value.field == "memory_margin_mb"
    assert str(refused.value) == ("memory_margin_mb: expected at least 0 and less than "
                                  "memory_limit_mb")
    with pytest.raises(ppb.InvalidInput) as refused:
        ppb.partition(LLAMA_LAYERS, model=model, stages=8, memory_limit_mb=40000,
                      schedule="1f1b", refine=True)
    assert refused.value.field == "refine"
    # An error of a file, not of a keyword, has none.
    with pytest.raises(ppb.InvalidInput) as refused:
        ppb.partition(LLAMA_DRYRUN, model=model, stages=8, memory_limit_mb=40000)
    assert refused.value.field is None
    flagged = cli.run(*common, "--weight-grad-share", "1.5", expect=2)
    assert "--weight-grad-share: 1.5 is not a share: give a number from 0 to 1" in flagged.stderr


def test_grouped_dense_and_moe_prediction_equals_the_command(cli):
    model = ppb.load_model().fit(MOE_DRYRUN)
    assert model.groups == ["dense", "moe"]
    expected = cli.json("predict", MOE_DRYRUN, "--stage", 1,
                        "--layers", "dense.none=1,moe.none=2,moe.full=1")
    got = model.predict(1, {"dense": {"none": 1}, "moe": {"none": 2, "full": 1}})
    assert got == expected["peak_memory_mb"]
    assert model.prediction(1, {"dense": {"none": 1}, "moe": {"none": 2, "full": 1}}) == expected
    assert expected["placement"]["layers"] == {"dense": {"none": 1}, "moe": {"none": 2, "full": 1}}
    # The sample's comment gives the coefficients it was generated from: const 3100, dense
    # P 1210 and A_none 702, MoE P 8640, A_none 1530, A_full 60; stage 1 of 4 holds 3 in flight.
    assert got == pytest.approx(3100 + 1210 + 3 * 702 + 3 * 8640 + 3 * (2 * 1530 + 60))
    groups = model.parameters["groups"]
    assert groups["moe"]["param_per_layer_mb"] == pytest.approx(8640)
    assert groups["dense"]["activation_mb"]["none"] == pytest.approx(702)
    with pytest.raises(ppb.InvalidInput, match="does not say its group"):
        model.predict(1, {"none": 3})
    plan = ppb.partition(MOE_LAYERS, model=model, stages=4, memory_limit_mb=120000)
    assert plan == cli.json("partition", "--model-desc", MOE_LAYERS, "--dryrun", MOE_DRYRUN,
                            "--stages", 4, "--memory-limit-mb", 120000)
    assert [g["name"] for g in plan["groups"]] == ["dense", "moe"]


def test_bad_json_is_invalid_input_with_the_commands_message(cli, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "ppb.dryrun/1", "observations": [}')
    message = error_message(cli.run("fit", bad, expect=2).stderr)
    with pytest.raises(ppb.InvalidInput) as caught:
        ppb.read_dryrun(bad)
    assert str(caught.value) == message
    assert str(bad) in message
    with pytest.raises(ValueError):  # InvalidInput is a ValueError too
        ppb.load_model().fit(bad)


def test_unknown_plugin_is_plugin_error_with_the_commands_message(cli):
    message = error_message(cli.run("fit", LLAMA_DRYRUN, "--model", "no-such-model",
                                    expect=3).stderr)
    with pytest.raises(ppb.PluginError) as caught:
        ppb.load_model("no-such-model")
    assert str(caught.value) == message
    assert "no-such-model" in message
    with pytest.raises(ppb.PluginError, match="dryrun-lsq"):
        ppb.load_model("dryrun-lsq@9")
    with pytest.raises(ppb.InvalidInput):
        ppb.load_model("dryrun-lsq@x.y")


def test_infeasible_carries_the_smallest_feasible_limit(cli):
    done = cli.run("partition", "--model-desc", LLAMA_LAYERS, "--dryrun", LLAMA_DRYRUN,
                   "--stages", 8, "--memory-limit-mb", 20000, expect=4)
    message = error_message(done.stderr)
    with pytest.raises(ppb.Infeasible) as caught:
        ppb.partition(LLAMA_LAYERS, dryrun=LLAMA_DRYRUN, stages=8, memory_limit_mb=20000)
    assert str(caught.value) == message
    limit = caught.value.smallest_feasible_limit_mb
    assert isinstance(limit, float) and limit > 20000
    assert f"{limit:.1f}" in message
    # The limit it names is feasible, and it is the least: a little less is not.
    plan = ppb.partition(LLAMA_LAYERS, dryrun=LLAMA_DRYRUN, stages=8, memory_limit_mb=limit)
    assert max(s["memory_mb"] for s in plan["stages"]) <= limit + 1e-6
    with pytest.raises(ppb.Infeasible):
        ppb.partition(LLAMA_LAYERS, dryrun=LLAMA_DRYRUN, stages=8, memory_limit_mb=limit - 1.0)


def test_not_estimable_prediction_is_invalid_input(cli, tmp_path):
    # Only body stages observed: the head is not determined.
    with open(LLAMA_DRYRUN, encoding="utf-8") as f:
        document = json.load(f)
    document["observations"] = [o for o in document["observations"] if o["stage"] != 0]
    path = tmp_path / "no-head.json"
    path.write_text(json.dumps(document))
    message = error_message(cli.run("predict", path, "--stage", 0, "--layers", "select=9",
                                    expect=2).stderr)
    model = ppb.load_model().fit(path)
    with pytest.raises(ppb.InvalidInput) as caught:
        model.predict(0, {"select": 9})
    assert str(caught.value) == message
    assert model.parameters["head_mb"] is None


def test_unsafe_plugin_directory_is_refused(tmp_path):
    unsafe = tmp_path / "plugins"
    unsafe.mkdir()
    source = next(r["path"] for r in ppb.plugins() if r["name"] == "table")
    copy = unsafe / os.path.basename(source)
    copy.write_bytes(open(source, "rb").read())
    os.chmod(copy, 0o666)
    os.chmod(unsafe, 0o755)
    record = next(r for r in ppb.plugins(plugin_path=unsafe) if r["path"] == str(copy))
    assert record["verdict"] == "refused"
    assert "writable" in record["reason"]


def test_missing_plugin_path_entry_warns(tmp_path):
    with pytest.warns(UserWarning, match="does not exist"):
        ppb.plugins(plugin_path=tmp_path / "absent")


def test_model_as_context_manager_closes():
    with ppb.load_model() as model:
        model.fit(LLAMA_DRYRUN)
        assert not model.closed
    assert model.closed
    with pytest.raises(ValueError, match="closed"):
        model.predict(1, {"select": 7, "full": 3})


def test_groups_with_chunks_plan_as_the_command_and_say_their_smallest_limit(cli):
    # DeepSeek-V3's dense + MoE layers under DualPipe-V: each chunk its range and groups.
    layers = DATA / "moe" / "deepseek-v3-layers.json"
    shape = DATA / "moe" / "deepseek-v3-shape.json"
    with open(shape, encoding="utf-8") as f:
        options = json.load(f)
    args = ("partition", "--model-desc", layers, "--model", "analytic", "--model-options", shape,
            "--stages", 16, "--micro-batches", 64, "--schedule", "dualpipe-v")

    def plan(limit):
        return ppb.partition(layers, model="analytic", model_options=options, stages=16,
                             micro_batches=64, memory_limit_mb=limit, schedule="dualpipe-v")

    got = plan(76000)
    assert got == cli.json(*args, "--memory-limit-mb", 76000)
    chunk = got["stages"][1]["chunks"][0]
    assert sum(sum(kinds.values()) for kinds in chunk["groups"].values()) == \
        chunk["last_layer"] - chunk["first_layer"] + 1
    # Too little memory: the exception carries the smallest limit, which fits; 0.1 MB less fails.
    message = error_message(cli.run(*args, "--memory-limit-mb", 21000, expect=4).stderr)
    with pytest.raises(ppb.Infeasible) as caught:
        plan(21000)
    assert str(caught.value) == message
    limit = caught.value.smallest_feasible_limit_mb
    assert f"{math.ceil(limit * 10) / 10:.1f} MB" in message
    assert max(s["memory_mb"] for s in plan(limit)["stages"]) <= limit + 1e-6
    with pytest.raises(ppb.Infeasible):
        plan(limit - 0.1)


def test_groups_with_four_chunks_are_bounded_as_the_command_bounds_them(cli):
    # More chunks than the exact grouped planner carries: the plan of one group that bounds the
    # groups, the same as the command's, not exact, with its proven bound.
    layers = DATA / "moe" / "deepseek-v3-layers.json"
    shape = DATA / "moe" / "deepseek-v3-shape.json"
    with open(shape, encoding="utf-8") as f:
        options = json.load(f)
    got = ppb.partition(layers, model="analytic", model_options=options, stages=8,
                        micro_batches=64, memory_limit_mb=76000, schedule="interleaved",
                        chunks=4)
    assert got == cli.json("partition", "--model-desc", layers, "--model", "analytic",
                           "--model-options", shape, "--stages", 8, "--micro-batches", 64,
                           "--memory-limit-mb", 76000, "--schedule", "interleaved", "--chunks", 4)
    assert got["num_chunks"] == 4 and not got["exact"]
    assert "planned through one group that bounds them" in got["not_exact_because"]
    simulated = got["simulated"]
    assert 0 < simulated["lower_bound"] <= simulated["makespan"]
    assert max(s["memory_mb"] for s in got["stages"]) <= 76000


def test_configured_models_and_options(cli):
    # The table model, configured by its options (a SAPP layer file), needs no fit.
    with open(LLAMA_LAYERS, encoding="utf-8") as f:
        options = json.load(f)
    table = ppb.load_model("table", options)
    assert not table.needs_fit
    expected = cli.json("predict", "--model", "table", "--model-options", LLAMA_LAYERS,
                        "--stages", 8, "--stage", 2, "--layers", "none=4,full=6")
    assert table.predict(2, {"none": 4, "full": 6}, num_stages=8) == expected["peak_memory_mb"]
    with pytest.raises(ppb.InvalidInput, match="rank_tolerance"):
        ppb.load_model("dryrun-lsq", {"rank_tolerance": 2})


def test_argument_errors_name_the_argument():
    model = ppb.load_model().fit(LLAMA_DRYRUN)
    with pytest.raises(ppb.InvalidInput, match="unknown recompute kind 'partial'"):
        model.predict(1, {"partial": 3})
    with pytest.raises(ppb.InvalidInput) as refused:
        model.predict(8, {"none": 3})
    assert str(refused.value) == "stage 8 is not a stage of an 8-stage pipeline (expected 0..7)"
    assert refused.value.field == "stage"
    # The pipeline around a stage is completed by the library's rule, as for `ppb predict`: the
    # same words, each naming the keyword (prediction_request.hpp).
    chunks = [{"none": 4}, {"full": 4}]
    for keywords, field, words in [
        ({"chunks": chunks}, "schedule", "two chunks: give schedule (interleaved, "
                                         "interleaved-less-memory, dualpipe-v, zb-v or combined-1f1b)"),
        ({"chunks": chunks, "schedule": "interleaved", "in_flight": 3}, "in_flight",
         "in_flight is for one chunk; with chunks the schedule's counts are used"),
        ({"layers": {"none": 4}, "schedule": "interleaved"}, "schedule",
         "schedule interleaved: "),
    ]:
        with pytest.raises(ppb.InvalidInput) as refused:
            model.predict(1, **keywords)
        assert refused.value.field == field and str(refused.value).startswith(words), \
            str(refused.value)
    with pytest.raises(ppb.InvalidInput) as refused:
        ppb.load_model("table", LLAMA_LAYERS).predict(0, {"none": 4})
    assert str(refused.value) == "missing num_stages" and refused.value.field == "num_stages"
    with pytest.raises(ppb.InvalidInput, match="memory_limit_mb: expected a positive number"):
        ppb.partition(LLAMA_LAYERS, model=model, stages=8, memory_limit_mb=-1)
    # The micro-batches' one owner (request.hpp), and the planner's own refusals: each carries
    # its field, and names no flag.
    table = ppb.load_model("table", LLAMA_LAYERS)
    for keywords, field, words in [
        ({"model": table}, "micro_batches",
         "micro_batches: missing: give the micro-batches per iteration (a dry run would give "
         "them)"),
        ({"model": model, "schedule": "interleaved", "memory_margin_sigma": 2},
         "memory_margin_sigma",
         "a margin of standard errors is not supported yet with several chunks per stage or a "
         "schedule other than 1f1b; give the margin in MB instead"),
        ({"model": table, "micro_batches": 32, "memory_margin_sigma": 2}, "memory_margin_sigma",
         "the memory model 'table' 1.0.0 has no uncertainty estimate for a margin of standard "
         "errors"),
    ]:
        with pytest.raises(ppb.InvalidInput) as refused:
            ppb.partition(LLAMA_LAYERS, stages=8, memory_limit_mb=60000, **keywords)
        assert refused.value.field == field and str(refused.value).startswith(words), \
            str(refused.value)
        assert "--" not in str(refused.value)


def test_reserved_memory_is_what_the_command_says(cli, tmp_path):
    """Observations with reserved_mb: the fit's allocator reserve, predictions and plans on
    reserved memory equal `ppb fit`, `ppb predict` and `ppb partition` for the same file."""
    doc = json.loads(LLAMA_DRYRUN.read_text())
    for i, o in enumerate(doc["observations"]):
        o["reserved_mb"] = o["peak_memory_mb"] + 400.0 + 37.0 * (i % 5) + 0.002 * o["peak_memory_mb"] * i
    file = tmp_path / "reserved.json"
    file.write_text(json.dumps(doc))
    model = ppb.load_model().fit(file)
    assert model.report == cli.json("fit", file)
    assert model.allocator_reserve == model.report["allocator_reserve"]
    assert model.allocator_reserve["observations"] == len(doc["observations"])
    assert model.memory == "allocated"
    expected = cli.json("predict", file, "--stage", 2, "--layers", "select=7,full=3")
    assert model.predict(2, {"select": 7, "full": 3}) == expected["peak_memory_mb"]
    model.memory = "reserved"
    assert model.predict(2, {"select": 7, "full": 3}) == expected["reserved_memory_mb"]
    assert model.std_error(2, {"select": 7, "full": 3}) == expected["reserved_std_error_mb"]
    # The document has both memories whichever the model answers in, and leaves it so.
    assert model.prediction(2, {"select": 7, "full": 3}) == expected
    assert model.memory == "reserved"
    assert expected["allocator_reserve"] == model.allocator_reserve
    model.memory = "allocated"
    # Plans: on reserved memory by default, as the command; allocated on request.
    args = ["partition", "--model-desc", LLAMA_LAYERS, "--dryrun", file, "--stages", 8,
            "--memory-limit-mb", 30000]
    plan = ppb.partition(LLAMA_LAYERS, dryrun=file, stages=8, memory_limit_mb=30000)
    assert plan == cli.json(*args) and plan["memory"] == "reserved"
    allocated = ppb.partition(LLAMA_LAYERS, model=model, stages=8, memory_limit_mb=30000,
                              memory="allocated")
    assert allocated == cli.json(*args, "--memory", "allocated")
    assert allocated["memory"] == "allocated" and model.memory == "allocated"
    # What cannot be asked.
    with pytest.raises(ppb.InvalidInput) as bad:
        model.memory = "segments"
    assert "expected 'allocated' or 'reserved'" in str(bad.value)
    plain = ppb.load_model().fit(LLAMA_DRYRUN)
    assert plain.allocator_reserve is None
    with pytest.raises(ppb.InvalidInput) as none:
        plain.memory = "reserved"
    assert "reserved_mb" in str(none.value)
    with pytest.raises(ppb.InvalidInput):
        ppb.partition(LLAMA_LAYERS, model=plain, stages=8, memory_limit_mb=30000,
                      memory="reserved")


def test_schedule_refusals_name_every_schedule_that_fits():
    model = ppb.load_model().fit(str(LLAMA_DRYRUN))
    chunks = [{"none": 4}, {"full": 4}]
    with pytest.raises(ppb.InvalidInput) as refused:
        model.predict(0, chunks=chunks, num_stages=4, micro_batches=8, schedule="zigzag")
    assert ("unknown schedule 'zigzag' (expected 1f1b, interleaved, interleaved-less-memory, "
            "dualpipe-v, zb-h1, zb-v or combined-1f1b)") in str(refused.value)
    # Two chunks without a schedule: the schedules that run two chunks, zb-v among them.
    with pytest.raises(ppb.InvalidInput) as refused:
        model.predict(0, chunks=chunks, num_stages=4, micro_batches=8)
    assert ("two chunks: give schedule (interleaved, interleaved-less-memory, dualpipe-v, zb-v "
            "or combined-1f1b)") in str(refused.value)


LLAMA_SHAPE = DATA / "llama70b-shape.json"


def test_the_combined_schedule_is_planned_as_the_command_plans_it(cli, tmp_path):
    # Megatron-LM's combined 1F1B (--overlap-moe-expert-parallel-comm): the command's plan, the
    # flag at the end of Megatron-LM's; a shape without expert parallelism is refused by keyword.
    shape = DATA / "moe" / "deepseek-v3-shape.json"
    plan = ppb.partition(model="analytic", model_options=shape, stages=8, micro_batches=32,
                         schedule="combined-1f1b", device="B200", recompute_rule="megatron")
    assert plan == cli.json("partition", "--model", "analytic", "--model-options", shape,
                            "--stages", 8, "--micro-batches", 32, "--schedule", "combined-1f1b",
                            "--device", "B200", "--recompute-rule", "megatron")
    assert plan["schedule"] == "combined-1f1b" and plan["num_chunks"] == 2
    assert plan["megatron"]["args"][-3:] == ["--moe-token-dispatcher-type", "alltoall",
                                             "--overlap-moe-expert-parallel-comm"]
    interleaved = ppb.partition(model="analytic", model_options=shape, stages=8,
                                micro_batches=32, schedule="interleaved", device="B200",
                                recompute_rule="megatron")
    assert "--overlap-moe-expert-parallel-comm" not in interleaved["megatron"]["args"]
    dense = json.loads(shape.read_text())
    dense["moe"]["expert_parallel"] = 1
    with pytest.raises(ppb.InvalidInput) as refused:
        ppb.partition(model="analytic", model_options=dense, stages=8, micro_batches=32,
                      schedule="combined-1f1b", device="B200")
    assert refused.value.field == "schedule"
    assert "with expert parallelism only, and moe.expert_parallel is 1" in str(refused.value)


def test_a_shape_that_offloads_layers_is_planned_with_the_kind_none(cli):
    # Megatron-LM's layer-level CPU offloading runs on one stage without recomputation: the
    # default kinds are narrowed to none with a warning (the command's plan), several stages are
    # refused by keyword.
    shape = json.loads(LLAMA_SHAPE.read_text())
    shape["cpu_offloading_num_layers"] = 40
    shape["data_parallel_sharding"] = "optim_grads_params"
    with pytest.warns(UserWarning, match="planned with the kind none only"):
        plan = ppb.partition(model="analytic", model_options=shape, stages=1, micro_batches=16,
                             device="H100")
    assert plan["stages"][0]["layers"]["none"] == 80
    with pytest.raises(ppb.InvalidInput) as refused:
        ppb.partition(model="analytic", model_options=shape, stages=2, micro_batches=16,
                      device="H100")
    assert refused.value.field == "stages"
    assert "cpu_offloading_num_layers" in str(refused.value)
    assert "give 1 stage, not 2" in str(refused.value)
    # The search: one stage, the kind none, and a warning saying so.
    with pytest.warns(UserWarning, match="searched on one stage with the kind none only"):
        found = ppb.search(model="analytic", model_options=shape, devices=64, global_batch=128,
                           device="H100", tensor_parallel=[8])
    assert [entry["pipeline_parallel"] for entry in found["ranking"]] == [1]
    assert found["ranking"][0]["recompute_kinds"] == ["none"]


def test_partition_times_a_shape_on_a_device_as_the_command_does(cli, tmp_path):
    # Without a layer file the shape's FLOPs time the layers, on a device of the table or a
    # cluster description, its memory the limit: the command's plan, with the data-parallel
    # synchronisation after the iteration (the library's request: ppb/partition/request.hpp).
    common = ("partition", "--model", "analytic", "--model-options", LLAMA_SHAPE, "--stages", 8,
              "--micro-batches", 32, "--schedule", "interleaved")
    plan = ppb.partition(model="analytic", model_options=LLAMA_SHAPE, stages=8, micro_batches=32,
                         schedule="interleaved", device="H100", overlap_grad_reduce=True)
    expected = cli.json(*common, "--device", "H100", "--overlap-grad-reduce")
    assert plan == expected
    assert plan["time_unit"] == "ms"
    # What the allocator can reserve: the H100's 79.11 GiB as the runtime reports it, less the
    # 1229 MB a process keeps outside it (host_api/docs/cluster.md, "Memory").
    assert plan["memory_limit_mb"] == pytest.approx(79.11 * 1024 - 1229)
    assert plan["data_parallel_replicas"] == 4
    assert plan["data_parallel_sync_time"] > 0
    # Each boundary's transfer timed on the device's links (no comm_time given).
    assert len(plan["comm_time"]) == 8 and min(plan["comm_time"]) > 0
    # The shape as a dict, as JSON text and as a path are one shape; a cluster as a dict or a
    # file is its description.
    with open(LLAMA_SHAPE, encoding="utf-8") as f:
        shape_text = f.read()
    cluster = {"format": "ppb.cluster/1", "device": "H100", "devices_per_node": 8}
    cluster_file = tmp_path / "cluster.json"
    cluster_file.write_text(json.dumps(cluster))
    for shape in (json.loads(shape_text), shape_text, str(LLAMA_SHAPE)):
        for where in (cluster, cluster_file):
            assert ppb.partition(model="analytic", model_options=shape, stages=8,
                                 micro_batches=32, schedule="interleaved", cluster=where,
                                 memory_limit_mb=60000) == \
                cli.json(*common, "--cluster", cluster_file, "--memory-limit-mb", 60000)
    # At a rate, without a cluster: no transfers, no synchronisation.
    at_rate = ppb.partition(model="analytic", model_options=LLAMA_SHAPE, stages=8,
                            micro_batches=32, memory_limit_mb=60000, device_tflops=500)
    assert at_rate == cli.json(*common[:-2], "--device-tflops", 500, "--memory-limit-mb", 60000)
    assert "data_parallel_sync_time" not in at_rate


def test_simulate_is_the_command_s_simulation(cli, tmp_path):
    # A plan from ppb.partition, simulated in process, is the command's simulation of the same
    # plan saved to a file (the library's simulate_saved_plan), with and without overrides; only
    # "plan", the source's name, differs.
    plan = ppb.partition(LLAMA_LAYERS, dryrun=LLAMA_DRYRUN, stages=4, memory_limit_mb=60000,
                         micro_batches=8, schedule="interleaved", fast=True)
    saved = tmp_path / "plan.json"
    saved.write_text(json.dumps(plan))
    for keywords, flags in [
        ({}, []),
        ({"micro_batches": 12}, ["--micro-batches", 12]),
        ({"comm_time": 0.5}, ["--comm-time", 0.5]),
        ({"comm_time": [0.1, 0.2, 0.3, 0.4]}, ["--comm-time", "0.1,0.2,0.3,0.4"]),
        ({"schedule": "interleaved-less-memory"}, ["--schedule", "interleaved-less-memory"]),
    ]:
        expected = cli.json("simulate", saved, *flags)
        for given, source in ((plan, "plan"), (json.dumps(plan), "plan"), (saved, str(saved))):
            simulated = ppb.simulate(given, **keywords)
            assert simulated["plan"] == source
            assert {**simulated, "plan": expected["plan"]} == expected, keywords
    simulated = ppb.simulate(plan)
    assert simulated["format"] == "ppb.simulation/1"
    assert simulated["schedule"] == "interleaved" and simulated["num_chunks"] == 2
    assert len(simulated["stages"]) == 4 and simulated["makespan"] > 0
    # The plan carries memory: each stage's simulated peak beside the planned one.
    for stage, planned in zip(simulated["stages"], plan["stages"]):
        assert stage["planned_memory_mb"] == planned["memory_mb"]
        assert stage["peak_memory_mb"] <= planned["memory_mb"] * (1 + 1e-9)
    # The timeline is the command's picture.
    ppb.simulate(plan, timeline=tmp_path / "module.svg")
    cli.run("simulate", saved, "--timeline", tmp_path / "command.svg")
    assert (tmp_path / "module.svg").read_text() == (tmp_path / "command.svg").read_text()
    assert "<svg" in (tmp_path / "module.svg").read_text()


def test_simulate_refuses_by_keyword_and_json_path(cli, tmp_path):
    plan = ppb.partition(LLAMA_LAYERS, dryrun=LLAMA_DRYRUN, stages=4, memory_limit_mb=60000,
                         micro_batches=8, schedule="dualpipe-v", fast=True)
    saved = tmp_path / "plan.json"
    saved.write_text(json.dumps(plan))
    for keywords, field, flags, words in [
        ({"micro_batches": 7}, "micro_batches", ["--micro-batches", 7], "got 7"),
        ({"schedule": "1f1b"}, "schedule", ["--schedule", "1f1b"],
         "1f1b runs one chunk per stage, got 2"),
        ({"schedule": "dualpipe"}, "schedule", ["--schedule", "dualpipe"],
         "unknown schedule 'dualpipe' (did you mean 'dualpipe-v'?"),
        ({"comm_time": [0.1, 0.2]}, "comm_time", ["--comm-time", "0.1,0.2"], "2"),
        ({"micro_batches": 0}, "micro_batches", ["--micro-batches", 0], "out of range"),
    ]:
        with pytest.raises(ppb.InvalidInput) as refused:
            ppb.simulate(plan, **keywords)
        message = str(refused.value)
        assert refused.value.field == field, (keywords, message)
        assert message.startswith(f"{field}: ") and words in message, message
        assert "--" not in message, message
        command = error_message(cli.run("simulate", saved, *flags, expect=2).stderr)
        assert words in command and "--" + field.replace("_", "-") in command, command
    with pytest.raises(ppb.InvalidInput) as refused:
        ppb.simulate(plan, comm_time=-1)
    assert str(refused.value) == \
        "comm_time: communication time 1 is -1: it must be a finite number, at least 0"
    assert refused.value.field == "comm_time"
    # What is wrong in the plan is named by its JSON path, as the command names it.
    broken = json.loads(json.dumps(plan))
    del broken["stages"][1]["chunks"][0]["backward_time"]
    with pytest.raises(ppb.InvalidInput) as refused:
        ppb.simulate(broken)
    assert str(refused.value) == \
        "plan: stages[1].chunks[0]: missing required field 'backward_time'"
    assert refused.value.field is None
    saved.write_text(json.dumps(broken))
    assert error_message(cli.run("simulate", saved, expect=2).stderr) == \
        f"{saved}: stages[1].chunks[0]: missing required field 'backward_time'"
    with pytest.raises(ppb.InvalidInput, match=r"plan: format: expected \"ppb.partition/1\""):
        ppb.simulate({"format": "ppb.search/1"})
    with pytest.raises(ppb.InvalidInput, match="plan: '.*' is neither a JSON object"):
        ppb.simulate(tmp_path / "missing.json")


def test_compare_is_the_command_s_comparison(cli, tmp_path):
    # Models compared in process give the command's ppb.compare/1 document (the library's
    # model_comparison), fitted, configured and cross-validated, on a dry run and on a plan
    # measured by a run of it.
    table = f"table={LLAMA_LAYERS}"
    for keywords, flags in [({}, []), ({"cross_validate": True}, ["--cross-validate"])]:
        expected = cli.json("compare", LLAMA_DRYRUN, "--model", "dryrun-lsq", "--model", table,
                            *flags)
        with open(LLAMA_LAYERS, encoding="utf-8") as f:
            layers = json.load(f)
        for models in (["dryrun-lsq", table], ["dryrun-lsq@1", ("table", layers)],
                       ["dryrun-lsq", ("table", str(LLAMA_LAYERS))]):
            compared = ppb.compare(models, str(LLAMA_DRYRUN), **keywords)
            assert compared == expected, (models, keywords)
    # Cross-validated, dryrun-lsq cannot predict a config from the other one alone: each cell says
    # why; the configured table predicts all 13.
    assert expected["cross_validated"]
    assert [m["count"] for m in expected["summary"]] == [0, 13]
    reasons = [p["predictions"][0]["reason"] for p in expected["placements"]]
    assert all(reasons) and any(r.startswith("fitted without config 'A'") for r in reasons)
    # A plan, measured by a dry run of it that misses stage 3: each stage's error, and a warning
    # for the stage without a measurement.
    plan = ppb.partition(LLAMA_LAYERS, dryrun=LLAMA_DRYRUN, stages=8, memory_limit_mb=40000)
    run = {"format": "ppb.dryrun/1", "num_stages": 8, "micro_batches": plan["micro_batches"],
           "observations": [{"config": "R", "stage": st["stage"],
                             "layers": {k: n for k, n in st["layers"].items() if n},
                             "peak_memory_mb": round(st["memory_mb"] + 100.0, 1)}
                            for st in plan["stages"] if st["stage"] != 3]}
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    (tmp_path / "run.json").write_text(json.dumps(run))
    with pytest.warns(UserWarning, match="holds no observation of the plan's stage 3"):
        compared = ppb.compare(["dryrun-lsq"], LLAMA_DRYRUN, partition=plan,
                               measured=tmp_path / "run.json")
    expected = cli.json("compare", LLAMA_DRYRUN, "--model", "dryrun-lsq", "--partition",
                        tmp_path / "plan.json", "--measured", tmp_path / "run.json")
    assert compared == expected
    planned = [p for p in compared["placements"] if p["label"].startswith("plan")]
    assert len(planned) == 8
    assert [p["measured_mb"] is None for p in planned] == [s == 3 for s in range(8)]
    assert planned[0]["label"] == "plan (R)"
    # A configured model alone needs no dry run.
    alone = ppb.compare(table, partition=plan)
    assert alone == cli.json("compare", "--model", table, "--partition", tmp_path / "plan.json")
    assert all(p["predictions"][0]["memory_mb"] > 0 for p in alone["placements"])


def test_compare_refuses_by_keyword(cli):
    table = f"table={LLAMA_LAYERS}"
    for call, field, words in [
        (lambda: ppb.compare(["dryrun-lsq"], partition=None), "dryrun",
         "give dryrun and/or partition"),
        (lambda: ppb.compare([], LLAMA_DRYRUN), "models", "at least one model"),
        (lambda: ppb.compare(["dryrun-lsq"], measured=LLAMA_DRYRUN, dryrun=LLAMA_DRYRUN),
         "measured", "give partition"),
        (lambda: ppb.compare([table], partition=_plan_of_llama(), cross_validate=True),
         "cross_validate", "cross_validate needs dryrun"),
        (lambda: ppb.compare(["dryrun-lsq"], partition=_plan_of_llama()), "dryrun",
         "memory model 'dryrun-lsq' is fitted to dry-run observations: give dryrun"),
    ]:
        with pytest.raises(ppb.InvalidInput) as refused:
            call()
        assert refused.value.field == field, str(refused.value)
        assert words in str(refused.value)
        assert "--" not in str(refused.value)
    single = {"format": "ppb.dryrun/1", "num_stages": 2, "micro_batches": 4, "observations": [
        {"config": "A", "stage": 0, "layers": {"none": 2}, "peak_memory_mb": 1000.0},
        {"config": "A", "stage": 1, "layers": {"none": 2}, "peak_memory_mb": 900.0}]}
    with pytest.raises(ppb.InvalidInput, match="cross_validate needs observations of at least "
                                               "two configs in <observations>"):
        ppb.compare(["dryrun-lsq"], single, cross_validate=True)
    with pytest.raises(ppb.PluginError):
        ppb.compare(["no-such-model"], LLAMA_DRYRUN)


def _plan_of_llama():
    return ppb.partition(LLAMA_LAYERS, dryrun=LLAMA_DRYRUN, stages=8, memory_limit_mb=40000)


def test_partition_without_times_or_devices_is_refused_by_keyword(cli):
    cases = [
        # (keyword arguments, the field, the message's start)
        (dict(model="analytic", model_options=LLAMA_SHAPE, memory_limit_mb=60000,
              device_tflops=400, device="H100"),
         "device_tflops", "device_tflops: the device's rate comes from device or cluster"),
        (dict(model="analytic", model_options=LLAMA_SHAPE), "memory_limit_mb",
         "memory_limit_mb is required (or device or cluster, whose device memory gives it)"),
        (dict(model="analytic", model_options=LLAMA_SHAPE, memory_limit_mb=60000,
              tp_comm_overlap=True), "tp_comm_overlap",
         "tp_comm_overlap: the layers' collectives are timed on a cluster's links only: give "
         "device or cluster"),
        (dict(model="analytic", model_options=LLAMA_SHAPE, memory_limit_mb=60000,
              overlap_grad_reduce=True), "overlap_grad_reduce",
         "overlap_grad_reduce: the data-parallel synchronisation is timed for a model shape's "
         "layers only: give model_options without model_desc, on a cluster (device or cluster)"),
        (dict(model="analytic", model_options=LLAMA_SHAPE, device="H101"), "device",
         "device: unknown device 'H101'"),
        (dict(model="analytic", model_options=LLAMA_SHAPE, device="H100", cluster={}), "device",
         "device and cluster: give one of them"),
    ]
    for kwargs, field, start in cases:
        with pytest.raises(ppb.InvalidInput) as refused:
            ppb.partition(stages=8, micro_batches=32, **kwargs)
        assert refused.value.field == field, kwargs
        assert str(refused.value).startswith(start), str(refused.value)
    # A model loaded without a shape to time: the layers' times are asked for by keyword.
    model = ppb.load_model().fit(LLAMA_DRYRUN)
    with pytest.raises(ppb.InvalidInput) as refused:
        ppb.partition(model=model, stages=8, memory_limit_mb=60000)
    assert refused.value.field == "model_desc"
    assert str(refused.value) == (
        "the layers' times are needed: give model_desc (a SAPP layer file), or a model shape as "
        "model_options (the analytic model's options: its FLOPs time the layers)")
    # Options that are neither JSON nor a readable file.
    with pytest.raises(ppb.InvalidInput, match="model_options: 'no-such-shape.json' is neither "
                                               "a JSON object nor a readable file"):
        ppb.partition(model=model, model_options="no-such-shape.json", stages=8,
                      memory_limit_mb=60000)
    with pytest.raises(ppb.InvalidInput, match="options: .* is a directory"):
        ppb.load_model("analytic", DATA)
