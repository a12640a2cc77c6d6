"""The harness's schedule orders (samples/dryrun-harness/ppb_dryrun.py) hold, per chunk, exactly
the in-flight counts ppb models (host_api/docs/design.md, section 4: 1F1B min(P - s, M);
interleaved c < v - 1: P + clamp((v - 2c) P - 2s - 1, 0, P), c = v - 1: min(P, 2P - 2s - 1),
capped at M), so that a harness run is the placement ppb predicts; and its layout reader agrees
with Megatron-LM's grammar on the examples of Megatron-LM's documentation."""

import os
import sys
from pathlib import Path

import pytest

SOURCE = Path(os.environ.get("PPB_SOURCE_DIR", Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(SOURCE / "samples" / "dryrun-harness"))

import ppb_dryrun as h  # noqa: E402


@pytest.mark.parametrize("p", range(1, 8))
def test_one_f_one_b_holds_min_p_minus_s_m(p):
    for m in range(1, 2 * p + 3):
        for s in range(p):
            order = h.one_f_one_b_order(p, s, m)
            assert sorted(op for op in order if op[0] == "F") == [("F", i, 0) for i in range(m)]
            assert h.held_at_peak(order) == {0: min(p - s, m)}


@pytest.mark.parametrize("p", range(1, 7))
@pytest.mark.parametrize("v", range(2, 5))
def test_interleaved_holds_the_modelled_counts(p, v):
    for m in range(p, 4 * p + 1, p):
        for s in range(p):
            order = h.interleaved_order(p, s, m, v)
            # Every micro-batch through every chunk, forward before backward.
            assert len(order) == 2 * m * v
            seen = set()
            for op, mb, c in order:
                if op == "F":
                    seen.add((mb, c))
                else:
                    assert (mb, c) in seen
            held = h.held_at_peak(order)
            for c in range(v):
                f = p + min(max((v - 2 * c) * p - 2 * s - 1, 0), p) if c < v - 1 else min(
                    p, 2 * p - 2 * s - 1)
                assert held[c] == min(f, m), (p, v, m, s, c)


def test_interleaved_first_forwards_follow_megatron():
    # P = 2, v = 2: forwards run chunk 0 of micro-batches 0, 1, then chunk 1 of 0, 1, then 2, 3.
    order = h.interleaved_order(2, 0, 4, 2)
    forwards = [(mb, c) for op, mb, c in order if op == "F"]
    assert forwards == [(0, 0), (1, 0), (0, 1), (1, 1), (2, 0), (3, 0), (2, 1), (3, 1)]
    backwards = [(mb, c) for op, mb, c in order if op == "B"]
    assert backwards[:2] == [(0, 1), (1, 1)]
    with pytest.raises(ValueError, match="multiple"):
        h.interleaved_order(2, 0, 3, 2)


def test_layouts():
    assert h.parse_layout("Et*3|t|t*2|t*2L", 4) == [[3], [1], [2], [2]]
    # Megatron-LM's documentation example without the MTP layer: PP16 VPP2.
    counts = h.parse_layout("Et*3|(tt|)*29,|L", 16)
    assert counts[0] == [3, 2] and counts[15] == [2, 0] and sum(map(sum, counts)) == 61
    with pytest.raises(ValueError):
        h.parse_layout("Et*3|x|L", 3)
