"""ppb.design(): the dict `ppb design --json` prints, from the same library; a prior Model keeps
every stage under the limit; bad requests raise the package's errors."""

import json

import numpy as np
import pytest

import ppb


def test_design_is_the_command_s_document(cli):
    doc = ppb.design(stages=4, num_layers=8, kinds=["none", "full"], recompute_rule="megatron")
    assert doc == cli.json("design", "--stages", "4", "--num-layers", "8", "--kinds",
                           "none,full", "--recompute-rule", "megatron")
    assert doc["format"] == "ppb.design/1"
    rows = []
    for run in doc["runs"]:
        p = run["num_stages"]
        for st in run["stages"]:
            f = min(p - st["stage"], doc["micro_batches"])
            layers = st["layers"]
            rows.append([1, st["stage"] == 0, st["stage"] == p - 1, sum(layers.values()),
                         layers.get("none", 0) * f, layers.get("full", 0) * f])
    assert np.linalg.matrix_rank(np.array(rows, float)) == 6


def test_several_degrees_and_more_runs(cli):
    doc = ppb.design(stages=[2, 3], num_layers=9, kinds="none", runs=4, noise_mb=5.0)
    assert len(doc["runs"]) == 4 and doc["noise_mb"] == 5.0
    assert {r["num_stages"] for r in doc["runs"]} <= {2, 3}


def test_a_prior_model_keeps_every_stage_under_the_limit(tmp_path):
    layers = {"stage_const_mem": 900, "layers_description": [
        {"name": "e", "type": "HEAD", "nb_layer": 1, "time": 1, "memory_parameter": 700},
        {"name": "b", "type": "BODY", "nb_layer": 8, "time": 1, "memory_parameter": 350,
         "memory_activation": 80, "memory_recompute": 6.5},
        {"name": "h", "type": "TAIL", "nb_layer": 1, "time": 1, "memory_parameter": 1100}]}
    with ppb.load_model("table", layers) as prior:
        doc = ppb.design(stages=4, num_layers=8, kinds=["none", "full"], memory_limit_mb=3200,
                         prior=prior)
        assert max(st["prior_memory_mb"] for r in doc["runs"] for st in r["stages"]) <= 3200
        with pytest.raises(ppb.Infeasible) as low:
            ppb.design(stages=4, num_layers=8, kinds="none", memory_limit_mb=2700, prior=prior)
        assert low.value.smallest_feasible_limit_mb > 2700


def test_bad_requests():
    with pytest.raises(ppb.Infeasible, match="degree of 3 or more") as few:
        ppb.design(stages=2, num_layers=4)
    # The library's words name Python's keywords, never the command's flags.
    assert "add a pipeline degree of 3 or more to stages" in str(few.value)
    assert "--" not in str(few.value)
    with pytest.raises(ppb.Infeasible, match="use micro_batches 2 or more"):
        ppb.design(stages=4, num_layers=8, micro_batches=1)
    for kwargs, field, words in [
            (dict(stages=4, num_layers=3), "num_layers",
             "num_layers: 3 is fewer than the 4 stages of the largest degree"),
            (dict(stages=[4, 0], num_layers=8), "stages", "stages: 0 is out of range (1 to 1024"),
            (dict(stages=4, num_layers=8, kinds="comm", recompute_rule="megatron"), "kinds",
             "kinds: comm: Megatron-LM has no communication recompute; under recompute_rule "
             "megatron"),
            (dict(stages=4, num_layers=8, noise_mb=-1.0), "noise_mb",
             "noise_mb: -1 must be a positive number of MB"),
            (dict(stages=4, num_layers=8, runs=1), None, "runs 1: 1 dry runs cannot identify")]:
        with pytest.raises((ppb.InvalidInput, ppb.Infeasible)) as bad:
            ppb.design(**kwargs)
        assert words in str(bad.value), str(bad.value)
        assert "--" not in str(bad.value)
        if field is not None:
            assert bad.value.field == field
    with pytest.raises(ppb.InvalidInput, match="recompute_rule"):
        ppb.design(stages=4, num_layers=8, recompute_rule="sometimes")
    with pytest.raises(ppb.InvalidInput, match="kinds"):
        ppb.design(stages=4, num_layers=8, kinds=["most"])
    with pytest.raises(ppb.InvalidInput, match="prior"):
        ppb.design(stages=4, num_layers=8, memory_limit_mb=1000)
    with pytest.raises(TypeError):
        ppb.design(stages=4, num_layers=8, prior="table")


SEARCH = dict(model="analytic", devices=64, global_batch=128, memory_limit_mb=80000,
              recompute=["any"], schedules=["1f1b"])


def test_search_is_the_command_s_document(cli):
    from conftest import DATA

    shape = DATA / "llama70b-shape.json"
    doc = ppb.search(DATA / "llama70b-layers.json", model_options=shape, **SEARCH)
    assert doc["format"] == "ppb.search/1"
    assert doc == cli.json("search", "--model-desc", DATA / "llama70b-layers.json", "--model",
                           "analytic", "--model-options", shape, "--devices", 64,
                           "--global-batch", 128, "--memory-limit-mb", 80000, "--recompute",
                           "any", "--schedules", "1f1b", "--progress", "never")
    # Options as a dict are the same options.
    assert ppb.search(DATA / "llama70b-layers.json",
                      model_options=json.loads(shape.read_text()), **SEARCH)["ranking"] == \
        doc["ranking"]


def test_search_takes_the_data_parallel_sharding(cli):
    from conftest import DATA

    shape = DATA / "llama70b-shape.json"
    doc = ppb.search(model_options=shape, data_parallel_sharding=["optim", "optim_grads_params"],
                     **SEARCH)
    assert doc["search"]["data_parallel_sharding"] == ["optim", "optim_grads_params"]
    assert {e["data_parallel_sharding"] for e in doc["ranking"]} == {"optim",
                                                                     "optim_grads_params"}
    assert doc == cli.json("search", "--model", "analytic", "--model-options", shape,
                           "--devices", 64, "--global-batch", 128, "--memory-limit-mb", 80000,
                           "--recompute", "any", "--schedules", "1f1b",
                           "--data-parallel-sharding", "optim,optim_grads_params",
                           "--progress", "never")
    with pytest.raises(ppb.InvalidInput, match="zero3"):
        ppb.search(model_options=shape, data_parallel_sharding="zero3", **SEARCH)


def test_search_on_a_cluster_is_the_command_s_document(cli, tmp_path):
    from conftest import DATA

    shape = DATA / "llama70b-shape.json"
    on_h100 = dict(model="analytic", model_options=shape, devices=64, global_batch=128,
                   tensor_parallel=[4, 8], schedules=["1f1b", "interleaved"], chunks=[2],
                   recompute=["any"], tp_comm_overlap=True, overlap_grad_reduce=True,
                   overlap_param_gather=True, fast=True)
    doc = ppb.search(device="H100", **on_h100)
    flags = ["--model", "analytic", "--model-options", shape, "--devices", 64,
             "--global-batch", 128, "--tensor-parallel", "4,8", "--schedules",
             "1f1b,interleaved", "--chunks", 2, "--recompute", "any", "--tp-comm-overlap",
             "--overlap-grad-reduce", "--overlap-param-gather", "--fast", "--progress", "never"]
    assert doc == cli.json("search", "--device", "H100", *flags)
    # What an H100's allocator can reserve is the limit (its 79.11 GiB as the runtime reports it,
    # less 1229 MB kept outside the allocator); each entry is timed on the cluster, in seconds and
    # tokens.
    assert doc["search"]["memory_limit_mb"] == pytest.approx(79.11 * 1024 - 1229)
    best = doc["ranking"][0]
    assert best["tensor_parallel"] in (4, 8) and best["tokens_per_second_per_device"] > 0
    # A cluster as a dict is the same cluster as its file.
    cluster = json.loads((DATA / "h100-cluster.json").read_text())
    assert ppb.search(cluster=cluster, **on_h100) == cli.json(
        "search", "--cluster", DATA / "h100-cluster.json", *flags)
    with pytest.raises(ppb.InvalidInput, match="device and cluster: give one of them") as both:
        ppb.search(device="H100", cluster=cluster, **on_h100)
    assert both.value.field == "device"
    with pytest.raises(ppb.InvalidInput, match="unknown device 'TPU-v9'") as unknown:
        ppb.search(device="TPU-v9", **on_h100)
    assert "H100" in str(unknown.value) and "--help" not in str(unknown.value)


def test_search_s_default_schedules_are_the_command_s(cli):
    from conftest import DATA

    # An MoE shape on a cluster: the combined 1F1B by default in both (one owner of the default).
    shape = DATA / "moe" / "deepseek-v3-shape.json"
    doc = ppb.search(model="analytic", model_options=shape, devices=256, pipeline_degrees=[8],
                     global_batch=1024, device="B200", recompute=["none"], expert_parallel=[16],
                     fast=True)
    assert {s["schedule"] for s in doc["search"]["schedules"]} == {
        "1f1b", "interleaved", "dualpipe-v", "combined-1f1b"}
    assert doc == cli.json("search", "--model", "analytic", "--model-options", shape,
                           "--devices", 256, "--pipeline-degrees", 8, "--global-batch", 1024,
                           "--device", "B200", "--recompute", "none", "--expert-parallel", 16,
                           "--fast", "--progress", "never")


def test_search_s_expert_tensor_parallel_degrees_are_the_command_s(cli):
    from conftest import DATA

    # Each ETP with each EP, as the command searches them; every framework's settings as sized.
    shape = DATA / "moe" / "mixtral-8x7b-shape.json"
    doc = ppb.search(model="analytic", model_options=shape, devices=32, global_batch=128,
                     device="H100", schedules=["1f1b"], expert_parallel=[4, 8],
                     expert_tensor_parallel=[1, 2], fast=True)
    assert doc["search"]["expert_tensor_parallel"] == [1, 2]
    assert {v["expert_tensor_parallel"] for v in doc["ranking"]} == {1, 2}
    for v in doc["ranking"]:
        flags = v["megatron_parallelism"]
        etp = flags[flags.index("--expert-tensor-parallel-size") + 1]
        assert int(etp) == v["expert_tensor_parallel"]
        titan = v["torchtitan_parallelism"]
        assert titan["parallelism.expert_parallel_degree"] == v["expert_parallel"]
        assert titan["parallelism.expert_tensor_parallel_degree"] == v["expert_tensor_parallel"]
    assert doc == cli.json("search", "--model", "analytic", "--model-options", shape,
                           "--devices", 32, "--global-batch", 128, "--device", "H100",
                           "--schedules", "1f1b", "--expert-parallel", "4,8",
                           "--expert-tensor-parallel", "1,2", "--fast", "--progress", "never")


def test_search_errors():
    from conftest import DATA

    shape = DATA / "llama70b-shape.json"
    low = dict(SEARCH, memory_limit_mb=1000)
    with pytest.raises(ppb.Infeasible) as e:
        ppb.search(DATA / "llama70b-layers.json", model_options=shape, **low)
    assert e.value.smallest_feasible_limit_mb > 1000
    with pytest.raises(ppb.InvalidInput, match="schedule"):
        ppb.search(DATA / "llama70b-layers.json", model_options=shape,
                   **dict(SEARCH, schedules=["sideways"]))
    # The search runs in this process (the library's, as the command's): its errors name the
    # keywords typed, never a flag, and carry the keyword as InvalidInput.field.
    assert "Infeasible" not in str(e.value) and "--memory-limit-mb" not in str(e.value)
    assert str(e.value).startswith("no configuration fits memory_limit_mb 1000.0")
    refusals = [
        (dict(schedules=["sideways"]), "schedules",
         "schedules: unknown value 'sideways' (expected 1f1b, "),
        (dict(chunks=[1]), "chunks", "chunks: 1 is out of range"),
        (dict(recompute=["half"]), "recompute", "recompute: "),
        (dict(devices=None), "devices", "give devices or pipeline_degrees (or both)"),
        (dict(data_parallel=4), "data_parallel",
         "data_parallel: with devices every pipeline degree P has its own"),
        (dict(memory_margin_mb=80000), "memory_margin_mb",
         "memory_margin_mb: expected at least 0 and less than memory_limit_mb"),
        (dict(tensor_parallel=[4, 8]), "tensor_parallel",
         "tensor_parallel: several values need a model shape's layers (model_options without "
         "model_desc)"),
        (dict(overlap_grad_reduce=True), "overlap_grad_reduce",
         "overlap_grad_reduce: the data-parallel synchronisation is timed on a cluster's links "
         "only"),
        (dict(expert_parallel=[8]), "expert_parallel",
         "expert_parallel: the experts' degree changes the memory"),
        (dict(expert_tensor_parallel=[1]), "expert_tensor_parallel",
         "expert_tensor_parallel: the experts' degree changes the memory"),
    ]
    for change, field, start in refusals:
        with pytest.raises(ppb.InvalidInput) as refused:
            ppb.search(DATA / "llama70b-layers.json", model_options=shape,
                       **dict(SEARCH, **change))
        assert refused.value.field == field, change
        assert str(refused.value).startswith(start), str(refused.value)
        assert "--" not in str(refused.value).split(":")[0]
    # A model that needs a fit, without a dry run to fit it to.
    with pytest.raises(ppb.InvalidInput) as refused:
        ppb.search(DATA / "llama70b-layers.json", **dict(SEARCH, model="dryrun-lsq"))
    assert refused.value.field == "dryrun"
