"""The caching allocator replay (samples/dryrun-harness/caching_allocator.py) follows PyTorch's
rules, each case worked out here by hand from c10/cuda/CUDACachingAllocator.cpp (pytorch/pytorch
00067369c9339bed950762afec327514d6fa2566): rounding to 512 bytes, the small and large pools and
their segment sizes, best fit, when a block is split, merging on free, what empty_cache releases;
and its snapshot is what ppb import snapshot reads back, peaks included."""

import json
import os
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

SOURCE = Path(os.environ.get("PPB_SOURCE_DIR", Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(SOURCE / "samples" / "dryrun-harness"))

import caching_allocator as ca  # noqa: E402

MIB = ca.MIB


@pytest.mark.parametrize("size,rounded", [(1, 512), (512, 512), (513, 1024), (4000, 4096),
                                          (MIB + 1, MIB + 512)])
def test_requests_round_up_to_512_bytes(size, rounded):
    assert ca.round_size(size) == rounded


@pytest.mark.parametrize("size,segment", [(512, 2 * MIB), (MIB, 2 * MIB),
                                          (MIB + 512, 20 * MIB), (10 * MIB - 512, 20 * MIB),
                                          (10 * MIB, 10 * MIB), (11 * MIB, 12 * MIB),
                                          (21 * MIB + 512, 22 * MIB)])
def test_segment_sizes_by_pool(size, segment):
    a = ca.CachingAllocator()
    a.malloc(size)
    assert a.reserved == segment
    assert a.events[0]["action"] == "segment_alloc" and a.events[0]["size"] == segment


def test_small_requests_share_a_two_mib_segment_and_large_ones_a_twenty_mib_one():
    a = ca.CachingAllocator()
    x = a.malloc(300 * 1024)
    y = a.malloc(700 * 1024)
    assert a.reserved == 2 * MIB and y == x + 300 * 1024  # split, the rest after it
    z = a.malloc(3 * MIB)
    w = a.malloc(5 * MIB)
    assert a.reserved == 22 * MIB and w == z + 3 * MIB  # one 20 MiB segment of the large pool
    a.malloc(12 * MIB + 1)  # the 12 MiB left is smaller: a segment of its own, 14 MiB
    assert a.reserved == 36 * MIB


def test_the_large_pool_does_not_split_off_a_megabyte_or_less():
    a = ca.CachingAllocator()
    x = a.malloc(12 * MIB)
    a.free(x)
    y = a.malloc(11 * MIB + 512)  # 12 MiB block, 1 MiB - 512 left: not split
    assert y == x
    seg = a.snapshot()["segments"][0]
    assert [b["size"] for b in seg["blocks"]] == [12 * MIB]
    a.free(y)
    z = a.malloc(10 * MIB + 512)  # 2 MiB - 512 left: split
    seg = a.snapshot()["segments"][0]
    assert z == x and [b["size"] for b in seg["blocks"]] == [10 * MIB + 512, 2 * MIB - 512]


def test_best_fit_takes_the_smallest_free_block_that_holds_the_request():
    a = ca.CachingAllocator()
    big = a.malloc(16 * MIB)
    small = a.malloc(12 * MIB)
    a.free(big)
    a.free(small)
    assert a.malloc(11 * MIB) == small  # 12 MiB fits more tightly than 16 MiB
    assert a.malloc(11 * MIB) == big
    assert a.reserved == 28 * MIB  # no new segment


def test_freed_blocks_merge_with_free_neighbours_and_stay_reserved():
    a = ca.CachingAllocator()
    blocks = [a.malloc(2 * MIB) for _ in range(4)]  # one 20 MiB segment
    a.free(blocks[1])
    a.free(blocks[2])  # merges with 1: one 4 MiB hole
    sizes = [b["size"] for b in a.snapshot()["segments"][0]["blocks"]]
    assert sizes == [2 * MIB, 4 * MIB, 2 * MIB, 12 * MIB]
    assert a.allocated == 4 * MIB and a.reserved == 20 * MIB
    assert a.malloc(4 * MIB) == blocks[1]


def test_fragmentation_reserves_what_no_free_block_can_hold():
    # Two 12 MiB holes in separate segments cannot hold 20 MiB: a third segment, 44 MiB reserved
    # for 20 MiB allocated.
    a = ca.CachingAllocator()
    x, y = a.malloc(12 * MIB), a.malloc(12 * MIB)
    a.free(x)
    a.free(y)
    a.malloc(20 * MIB)
    assert a.allocated == 20 * MIB and a.reserved == 44 * MIB and a.peak_allocated == 24 * MIB


def test_empty_cache_releases_only_wholly_free_segments():
    a = ca.CachingAllocator()
    x = a.malloc(12 * MIB)
    y = a.malloc(100)
    a.malloc(200)
    a.free(x)
    a.free(y)
    a.empty_cache()
    assert a.reserved == 2 * MIB  # the small segment still holds a block
    assert a.events[-1]["action"] == "segment_free" and a.events[-1]["size"] == 12 * MIB
    with pytest.raises(ValueError):
        a.free(x)


def test_ppb_reads_the_replays_peaks_from_its_snapshot():
    a = ca.CachingAllocator()
    live = []
    for step in range(3):
        for m in range(4):
            live.append(a.malloc((3 + step + m) * MIB + 4096 * m))
            live.append(a.malloc(200 * 1024 + m))
        while live:
            a.free(live.pop(0))
    assert a.peak_reserved > a.peak_allocated
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "snapshot_0.pickle"
        path.write_bytes(pickle.dumps(a.snapshot(), protocol=4))
        done = subprocess.run([os.environ["PPB_CLI"], "import", "snapshot",
                               "--pipeline-model-parallel-size", "1", "--num-layers", "2",
                               "--world-size", "1", str(path)],
                              capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    o = json.loads(done.stdout)["observations"][0]
    assert o["peak_memory_mb"] == pytest.approx(a.peak_allocated / MIB, abs=1e-9)
    assert o["reserved_mb"] == pytest.approx(a.peak_reserved / MIB, abs=1e-9)
