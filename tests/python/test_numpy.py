"""predict_batch over NumPy arrays: one call into the plugin, equal to predict() row by row."""

import pytest

np = pytest.importorskip("numpy")

import ppb  # noqa: E402
from conftest import LLAMA_DRYRUN, MOE_DRYRUN  # noqa: E402


def test_batch_equals_single_predictions():
    model = ppb.load_model().fit(LLAMA_DRYRUN)
    rng = np.random.default_rng(7)
    n = 200
    stage = rng.integers(0, 8, n)
    layers = np.zeros((n, 5), dtype=np.int64)
    layers[:, 1] = rng.integers(0, 12, n)  # select
    layers[:, 4] = rng.integers(0, 6, n)  # full
    layers[:, 0] = rng.integers(0, 3, n)  # none
    batch = model.predict_batch(stage, layers)
    assert batch.shape == (n,) and batch.dtype == np.float64
    for i in range(n):
        counts = {k: int(c) for k, c in zip(ppb.KINDS, layers[i]) if c}
        assert batch[i] == model.predict(int(stage[i]), counts)
    # Explicit in-flight counts and pipeline degrees, and plain lists.
    in_flight = rng.integers(1, 9, n)
    batch = model.predict_batch(stage, layers, in_flight=in_flight, num_stages=8)
    for i in range(0, n, 17):
        counts = {k: int(c) for k, c in zip(ppb.KINDS, layers[i]) if c}
        assert batch[i] == model.predict(int(stage[i]), counts, in_flight=int(in_flight[i]))
    listed = model.predict_batch([3, 0], [[0, 9, 0, 0, 1], [0, 5, 0, 0, 4]])
    assert listed.tolist() == [model.predict(3, {"select": 9, "full": 1}),
                               model.predict(0, {"select": 5, "full": 4})]


def test_grouped_batch_equals_single_predictions():
    model = ppb.load_model().fit(MOE_DRYRUN)
    layers = np.zeros((3, 2, 5), dtype=np.int64)
    layers[0, 0, 0], layers[0, 1, 0] = 3, 1  # stage 0: 3 dense, 1 MoE
    layers[1, 1, 0], layers[1, 1, 4] = 2, 2  # stage 1: MoE 2 none, 2 full
    layers[2, 1, 0] = 5  # stage 3: 5 MoE
    batch = model.predict_batch([0, 1, 3], layers)
    assert batch.tolist() == [
        model.predict(0, {"dense": {"none": 3}, "moe": {"none": 1}}),
        model.predict(1, {"moe": {"none": 2, "full": 2}}),
        model.predict(3, {"moe": {"none": 5}}),
    ]
    with pytest.raises(ppb.InvalidInput, match=r"shape \(n, 2, 5\)"):
        model.predict_batch([0], [[3, 0, 0, 0, 0]])


def test_batch_errors_name_the_row():
    model = ppb.load_model().fit(LLAMA_DRYRUN)
    with pytest.raises(ppb.InvalidInput, match=r"placement 1: stage 9 is not a stage"):
        model.predict_batch([1, 9], [[0, 7, 0, 0, 3], [0, 7, 0, 0, 3]])
    with pytest.raises(ppb.InvalidInput, match=r"layers\[0\]: -1 is out of range"):
        model.predict_batch([1], [[0, -1, 0, 0, 3]])
