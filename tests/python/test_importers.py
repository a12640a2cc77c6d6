"""The analytic model's options from a framework's own files, from Python: ppb.import_*_options
run the importers `ppb import megatron-options`, `mindformers-options` and `torchtitan-options`
run, in this process, and give what the command writes (the options) and what it says on stderr
(the stages, micro-batches, schedule) as a dict; what the command refuses they raise as
InvalidInput with its message."""

import json
import re
import warnings

import pytest

import ppb
from conftest import DATA, SOURCE_DIR, error_message

TESTS = SOURCE_DIR / "tests" / "data"
MODEL_CONFIG = TESTS / "megatron" / "moe-offload-model-config.yaml"

# A small GPT run's arguments, as a launcher passes them.
GPT = ["--num-layers", "8", "--hidden-size", "1024", "--num-attention-heads", "16",
       "--seq-length", "2048", "--max-position-embeddings", "2048", "--micro-batch-size", "2",
       "--global-batch-size", "64", "--vocab-size", "32000", "--bf16",
       "--tensor-model-parallel-size", "2", "--pipeline-model-parallel-size", "2",
       "--use-distributed-optimizer", "--use-flash-attn"]


def options_of(cli, *args):
    """What the command writes, and the stderr line its plan note is on."""
    done = cli.run("import", *args)
    return json.loads(done.stdout), done.stderr


def test_megatron_arguments_give_the_command_s_options(cli):
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        run = ppb.import_megatron_options(GPT, world_size=16, megatron_version="core_r0.12.0")
    options, stderr = options_of(cli, "megatron-options", "--world-size", 16,
                                 "--megatron-version", "core_r0.12.0", "--", *GPT)
    assert run["options"] == options
    # 16 ranks of t 2 x p 2: 4 replicas, 64 / (2 x 4) = 8 micro-batches, as the command's note.
    assert (run["stages"], run["data_parallel"], run["micro_batches"]) == (2, 4, 8)
    assert "plan with --stages 2 --micro-batches 8" in stderr
    assert run["release"].startswith("0.12")
    assert [str(w.message) for w in said] == run["warnings"]
    # The options plan as the command's file does.
    plan = ppb.partition(model="analytic", model_options=run["options"], stages=run["stages"],
                         micro_batches=run["micro_batches"], device="H100")
    assert len(plan["stages"]) == 2


def test_a_run_configuration_is_read_as_megatron_launches_it(cli, tmp_path):
    run = ppb.import_megatron_options(model_config=MODEL_CONFIG, world_size=16)
    options, _ = options_of(cli, "megatron-options", "--model-config", MODEL_CONFIG,
                            "--world-size", 16)
    assert run["options"] == options
    # Arguments after the configuration's, as its launcher appends them: the last value wins.
    later = ppb.import_megatron_options(["--micro-batch-size", "2"], model_config=MODEL_CONFIG,
                                        world_size=16)
    assert later["options"]["micro_batch_size"] == 2
    assert later["options"] == options_of(cli, "megatron-options", "--model-config",
                                          MODEL_CONFIG, "--world-size", 16, "--",
                                          "--micro-batch-size", "2")[0]


def test_mindformers_and_torchtitan_files_give_the_command_s_options(cli):
    yaml = TESTS / "mindformers" / "qwen3_30b_a3b_mcore.yaml"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = ppb.import_mindformers_options(yaml)
    options, stderr = options_of(cli, "mindformers-options", yaml)
    assert run["options"] == options
    note = re.search(r"plan with --stages (\d+) --micro-batches (\d+)", stderr)
    assert (run["stages"], run["micro_batches"]) == (int(note[1]), int(note[2]))
    assert run["options"]["moe"]["num_experts"] == 128

    toml = TESTS / "torchtitan" / "deepseek_v3_16b.toml"
    titan = ppb.import_torchtitan_options(toml, world_size=8)
    options, stderr = options_of(cli, "torchtitan-options", toml, "--world-size", 8)
    assert titan["options"] == options
    note = re.search(r"plan with --stages (\d+) --micro-batches (\d+)", stderr)
    assert (titan["stages"], titan["micro_batches"]) == (int(note[1]), int(note[2]))
    assert f"every layer '{titan['layer_kind']}'" in stderr
    assert titan["options"]["moe"]["expert_parallel"] == 8


def test_what_the_command_refuses_is_refused_with_its_words(cli, tmp_path):
    # A flag Megatron-LM does not have: the command's message, word for word.
    bad = GPT + ["--num-layer", "8"]
    with pytest.raises(ppb.InvalidInput) as refused:
        ppb.import_megatron_options(bad, world_size=16)
    done = cli.run("import", "megatron-options", "--world-size", 16, "--", *bad, expect=2)
    assert str(refused.value) == error_message(done.stderr)
    # Nothing to read, one string for the list, a count out of range: named by keyword.
    for call, field in [
        (lambda: ppb.import_megatron_options(), "arguments"),
        (lambda: ppb.import_megatron_options(" ".join(GPT)), "arguments"),
        (lambda: ppb.import_megatron_options(GPT, world_size=0), "world_size"),
        (lambda: ppb.import_megatron_options(GPT, tokenizer_size=-1), "tokenizer_size"),
        (lambda: ppb.import_torchtitan_options(TESTS / "torchtitan" / "llama3_70b.toml",
                                               world_size=True), "world_size"),
    ]:
        with pytest.raises(ppb.InvalidInput) as refused:
            call()
        assert refused.value.field == field, str(refused.value)
    # A file that is not there, or not the framework's: the path named.
    missing = tmp_path / "nowhere.yaml"
    with pytest.raises(ppb.InvalidInput, match="nowhere.yaml"):
        ppb.import_mindformers_options(missing)
    with pytest.raises(ppb.InvalidInput, match="nowhere.yaml"):
        ppb.import_megatron_options(model_config=missing)
    not_toml = tmp_path / "run.toml"
    not_toml.write_text("[parallelism\n")
    with pytest.raises(ppb.InvalidInput, match="run.toml"):
        ppb.import_torchtitan_options(not_toml)
    # A degree of -1 needs the world size: named by its keyword, never a flag typed nowhere.
    with pytest.raises(ppb.InvalidInput) as refused:
        ppb.import_torchtitan_options(TESTS / "torchtitan" / "llama3_70b.toml")
    assert str(refused.value).endswith("give the number of GPUs with world_size")
    with pytest.raises(ppb.InvalidInput) as refused:
        ppb.import_megatron_options(GPT, world_size=6)
    assert str(refused.value) == ("world_size 6 is not a multiple of tensor x pipeline parallel "
                                  "= 2 x 2")
    with pytest.raises(ppb.InvalidInput) as refused:
        ppb.import_megatron_options(GPT, megatron_version="0.99x")
    assert str(refused.value).startswith("megatron_version '0.99x': ")
    with pytest.raises(ppb.InvalidInput) as refused:
        ppb.import_megatron_options(GPT + ["--frobnicate", "3"])
    assert 'declare it: megatron_flags=["frobnicate[:VALUES]"]' in str(refused.value)
    with pytest.raises(ppb.InvalidInput) as refused:
        ppb.import_megatron_options(GPT, megatron_flags=["bad name:2"])
    assert str(refused.value).startswith("megatron_flags 'bad name:2': expected a flag's name")
    # A release's defaults differ among those the flags fit: give it by its keyword.
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        ppb.import_megatron_options(GPT)
    assert any("give megatron_version with the run's release" in str(w.message) for w in said)
    # Declared, the flag is read.
    frob = ppb.import_megatron_options(GPT + ["--frobnicate", "3"], megatron_flags=["frobnicate"],
                                       world_size=16)
    assert frob["options"] == ppb.import_megatron_options(GPT, world_size=16)["options"]


def test_the_devices_are_the_command_s(cli):
    table = ppb.devices()
    assert table == cli.json("devices")
    h100 = next(d for d in table["devices"] if d["name"] == "H100")
    assert (h100["memory_gib"], h100["runtime_memory_gib"]) == (80, 79.11)
    # Each name is a device the other functions take.
    plan = ppb.partition(model="analytic", model_options=DATA / "llama70b-shape.json", stages=8,
                         micro_batches=32, device=table["devices"][1]["name"])
    assert plan["memory_limit_mb"] == pytest.approx(79.11 * 1024 - 1229)
