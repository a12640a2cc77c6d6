#!/usr/bin/env python3
"""Writes the PyTorch memory snapshots of ppb's tests (tests/data/snapshots/) and expected.json,
their ground truth. Run it from anywhere: python3 make_snapshots.py [OUTPUT_DIR] (default: the
directory of this script). The files are committed; the test snapshot_fixtures_current checks
that this script still writes them byte for byte.

A snapshot is the dict torch.cuda.memory._snapshot() returns (pytorch/pytorch,
torch/csrc/cuda/memory_snapshot.cpp _memory_snapshot_pickled at commit
00067369c9339bed950762afec327514d6fa2566; the keys of torch/cuda/memory.py _snapshot): segments
with their blocks, one trace of allocator events per device, the allocator's settings. The dicts
here are plain Python data, pickled by the standard library's pickle at protocols 2 to 5 (Megatron
-LM's torch.cuda.memory._dump_snapshot pickles at Python's default protocol, torchtitan at 4).

The memory is made by a small allocator of our own, not PyTorch's: it hands out blocks rounded to
512 bytes from segments of at least 2 MiB, first fit, splits and merges blocks, and frees empty
segments when asked (as empty_cache does). That is enough for snapshots whose segments, blocks
and trace agree with each other, which is what the reader needs; PyTorch's own rules for which
block a request gets do not change what is allocated and reserved at each event. The ground truth
is the allocator's own bookkeeping from the start of the run, forward: each event's allocated
bytes (the sizes requested, from 'alloc' to 'free_requested') and reserved bytes (the segments),
and their peaks over the part of the run each trace keeps (the whole run, or the last
max_entries events of a ring buffer). ppb finds the same peaks the other way: back from the
snapshot's segments to the trace's start, then forward.
"""

import json
import os
import pickle
import sys

MIB = 1 << 20
BASE_TIME_US = 1_767_225_600_000_000  # 2026-01-01 00:00:00 UTC


class Lcg:
    """A small deterministic generator (the same numbers on every Python)."""

    def __init__(self, seed):
        self.state = seed

    def below(self, n):
        self.state = (self.state * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        return (self.state >> 33) % n


# Stack frames as PyTorch records them, shared between events (the pickle's memo refers to one
# list many times, as PyTorch's own snapshots do).
FRAMES = [
    [{"filename": "megatron/core/transformer/transformer_layer.py", "line": 412, "name": "forward"}],
    [{"filename": "megatron/core/optimizer/distrib_optimizer.py", "line": 88, "name": "__init__"},
     {"filename": "megatron/training/training.py", "line": 1204, "name": "setup_model_and_optimizer"}],
]


class Allocator:
    """Segments of blocks, every change recorded as a trace event and its ground truth."""

    def __init__(self, device=0, base=0x7F3A00000000, expandable=False):
        self.device = device
        self.next_segment = base
        self.segments = []  # [address, size, [[address, size, requested, state], ...]]
        self.events = []
        self.truth = []  # (allocated, reserved) after each event
        self.allocated = 0
        self.reserved = 0
        self.time_us = BASE_TIME_US
        self.expandable = expandable

    def record(self, action, addr, size, frames=None):
        self.time_us += 1000 + 37 * (len(self.events) % 11)
        event = {"action": action, "addr": addr, "size": size, "stream": 0,
                 "time_us": self.time_us}
        if frames is not None:
            event["frames"] = frames
        self.events.append(event)
        self.truth.append((self.allocated, self.reserved))

    def alloc(self, requested, frames=None):
        rounded = max(512, (requested + 511) // 512 * 512)
        for segment in self.segments:
            blocks = segment[2]
            for i, block in enumerate(blocks):
                if block[3] != "inactive" or block[1] < rounded:
                    continue
                if block[1] - rounded >= 512:
                    blocks.insert(i + 1, [block[0] + rounded, block[1] - rounded, 0, "inactive"])
                    block[1] = rounded
                block[2] = requested
                block[3] = "active_allocated"
                self.allocated += requested
                self.record("alloc", block[0], requested, frames)
                return block[0]
        size = max(2 * MIB, (rounded + 2 * MIB - 1) // (2 * MIB) * (2 * MIB))
        address = self.next_segment
        self.next_segment += 1 << 32
        self.segments.append([address, size, [[address, size, 0, "inactive"]]])
        self.reserved += size
        self.record("segment_map" if self.expandable else "segment_alloc", address, size)
        return self.alloc(requested, frames)

    def free(self, address):
        for segment in self.segments:
            blocks = segment[2]
            for i, block in enumerate(blocks):
                if block[0] != address or block[3] != "active_allocated":
                    continue
                requested = block[2]
                self.allocated -= requested
                self.record("free_requested", address, requested)
                block[3] = "inactive"
                block[2] = 0
                self.record("free_completed", address, requested)
                # Merge with free neighbours.
                if i + 1 < len(blocks) and blocks[i + 1][3] == "inactive":
                    block[1] += blocks[i + 1][1]
                    del blocks[i + 1]
                if i > 0 and blocks[i - 1][3] == "inactive":
                    blocks[i - 1][1] += block[1]
                    del blocks[i]
                return
        raise ValueError(f"free of unknown block {address:#x}")

    def empty_cache(self):
        kept = []
        for segment in self.segments:
            if all(b[3] == "inactive" for b in segment[2]):
                self.reserved -= segment[1]
                self.record("segment_unmap" if self.expandable else "segment_free", segment[0],
                            segment[1])
            else:
                kept.append(segment)
        self.segments = kept

    def oom(self, requested, device_free):
        self.time_us += 500
        self.events.append({"action": "oom", "device_free": device_free, "size": requested,
                            "stream": 0, "time_us": self.time_us})
        self.truth.append((self.allocated, self.reserved))

    def user_annotation(self, name):
        self.time_us += 10
        self.events.append({"action": "user_defined", "addr": 0, "size": 0, "stream": 0,
                            "time_us": self.time_us, "name": name})
        self.truth.append((self.allocated, self.reserved))

    def snapshot(self, max_entries=None, devices=1, legacy=False, settings=True, trace=True):
        """The snapshot dict, and the ground truth over the trace it keeps."""
        self.time_us += 50
        self.events.append({"action": "snapshot", "addr": 0, "size": 0, "stream": 0,
                            "time_us": self.time_us})
        self.truth.append((self.allocated, self.reserved))
        first = 0 if max_entries is None else max(0, len(self.events) - max_entries)
        kept = self.events[first:]
        segments = []
        for address, size, blocks in self.segments:
            allocated = sum(b[1] for b in blocks if b[3] == "active_allocated")
            out_blocks = []
            for b in blocks:
                block = {"size": b[1], "state": b[3]}
                if not legacy:
                    block = {"address": b[0], "size": b[1], "requested_size": b[2],
                             "state": b[3], "frames": FRAMES[0] if b[3] != "inactive" else []}
                else:
                    block["history"] = [{"addr": b[0], "real_size": b[2]}] if b[2] else []
                out_blocks.append(block)
            segment = {"device": self.device, "address": address, "total_size": size,
                       "allocated_size": allocated, "active_size": allocated,
                       "requested_size": sum(b[2] for b in blocks), "stream": 0,
                       "segment_type": "large", "segment_pool_id": (0, 0),
                       "blocks": out_blocks}
            if not legacy:
                segment["is_expandable"] = self.expandable
                segment["frames"] = []
            segments.append(segment)
        events = kept
        if legacy:
            events = [{k: v for k, v in e.items() if k != "time_us"} for e in kept]
        traces = [[] for _ in range(devices)]
        if trace:
            traces[self.device] = events
        snapshot = {"segments": segments, "device_traces": traces}
        if settings and not legacy:
            snapshot["allocator_settings"] = {
                "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True" if self.expandable else "",
                "max_split_size": -1,
                "garbage_collection_threshold": 0.0,
                "expandable_segments": self.expandable,
                "pinned_num_register_threads": 1,
                "release_lock_on_cudamalloc": False,
                "pinned_use_cuda_host_register": False,
                "roundup_power2_divisions": {"1": 0, "2": 0},
            }
        return snapshot, self.expected(first, trace, legacy)

    def expected(self, first, trace, legacy=False):
        """Peaks over the events kept from `first` on, from the state before the first."""
        if not trace:
            allocated, reserved = self.truth[-1]
            return {"allocated_peak": allocated, "reserved_peak": reserved,
                    "allocated_event": None, "reserved_event": None, "events": 0,
                    "allocated_at_start": allocated}
        start = self.truth[first - 1] if first > 0 else (0, 0)
        out = {"events": len(self.events) - first, "allocated_at_start": start[0]}
        for what, k in (("allocated", 0), ("reserved", 1)):
            peak, at = start[k], None
            for i in range(first, len(self.events)):
                if self.truth[i][k] > peak:
                    peak, at = self.truth[i][k], i - first
            out[f"{what}_peak"] = peak
            out[f"{what}_event"] = at
            out[f"{what}_time_us"] = (None if at is None or legacy
                                      else self.events[first + at]["time_us"])
        return out


def training_run(rank, scale, steps=2, micro_batches=4, in_flight=None, seed=1, **kwargs):
    """A pipeline stage's memory: parameters and optimizer state, then micro-batches whose
    activations live from their forward to their backward, at most `in_flight` at a time."""
    rng = Lcg(seed * 1000 + rank)
    a = Allocator(**kwargs)
    for _ in range(6):  # parameters, gradients, optimizer state
        a.alloc(int(scale * (40 + rng.below(20)) * MIB) + rng.below(4096), FRAMES[1])
    in_flight = in_flight or micro_batches
    for _ in range(steps):
        live = []
        for m in range(micro_batches):
            activations = [a.alloc(int(scale * (6 + rng.below(6)) * MIB) + rng.below(512),
                                   FRAMES[0]) for _ in range(4)]
            workspace = a.alloc(int(scale * 3 * MIB))
            a.free(workspace)
            live.append(activations)
            if len(live) >= in_flight or m == micro_batches - 1:
                while live:
                    for address in reversed(live.pop(0)):
                        a.free(address)
        a.empty_cache()
    return a


def write(out_dir, relative, value, protocol):
    path = os.path.join(out_dir, relative)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        pickle.dump(value, f, protocol=protocol)
    return relative


class Evil:
    """What a malicious pickle holds: unpickling it would run a shell command."""

    def __reduce__(self):
        return (os.system, ("echo this must never run",))


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    expected = {}

    def snapshot_file(relative, allocator, protocol, rank, **kwargs):
        snapshot, truth = allocator.snapshot(**kwargs)
        write(out_dir, relative, snapshot, protocol)
        truth.update({"rank": rank, "protocol": protocol})
        expected[relative] = truth
        return snapshot

    # Megatron-LM: <base>_<rank>.pickle, one rank per stage of a 4-stage pipeline (stage s holds
    # 4 - s micro-batches in flight under 1F1B), at every protocol.
    for rank, protocol in zip(range(4), (2, 3, 4, 5)):
        run = training_run(rank, 1.0 + 0.1 * rank, in_flight=4 - rank)
        snapshot_file(f"megatron/snapshot_{rank}.pickle", run, protocol, rank)
    # The dump of an out-of-memory error (<base>_oom_rank_<rank>.pickle).
    run = training_run(3, 1.3, in_flight=1, seed=2)
    run.alloc(64 * MIB)
    run.oom(80 * 1024 * MIB, 512 * MIB)
    snapshot_file("oom/snapshot_oom_rank_3.pickle", run, 4, 3)

    # torchtitan: step_<12 digits>/<6-digit rank>_step_<step>.pickle, protocol 4, one snapshot per
    # step of ranks 0 and 1; the later snapshot's ring buffer no longer holds the first step.
    for rank in (0, 1):
        for step, steps in ((10, 1), (20, 2)):
            run = training_run(rank, 0.5 + 0.2 * rank, steps=steps, seed=3 + step)
            snapshot_file(f"torchtitan/step_{step:012d}/{rank:06d}_step_{step}.pickle", run, 4,
                          rank, max_entries=None if step == 10 else 120)

    # A ring buffer that dropped the run's first events, some of whose blocks the trace frees.
    run = training_run(2, 1.0, steps=3, seed=5)
    snapshot_file("special/ring-buffer_2.pickle", run, 4, 2, max_entries=90)
    # History not recorded: no trace, the peaks are the memory at the snapshot.
    run = training_run(1, 1.0, steps=1, seed=6)
    for address in [b[0] for s in run.segments for b in s[2] if b[3] == "active_allocated"][:2]:
        run.free(address)
    snapshot_file("special/no-trace_1.pickle", run, 4, 1, trace=False)
    # PyTorch 2.0's format: blocks without address or requested_size, events without time_us.
    run = training_run(0, 0.8, steps=1, seed=7)
    snapshot_file("special/legacy_0.pickle", run, 2, 0, legacy=True)
    # Expandable segments: segment_map and segment_unmap.
    run = training_run(0, 0.9, steps=2, seed=8, expandable=True)
    snapshot_file("special/expandable_0.pickle", run, 5, 0)
    # Events of an action ppb does not know (PyTorch's user annotations), passed over.
    run = training_run(0, 0.7, steps=1, seed=9)
    run.user_annotation("optimizer_step")
    snapshot_file("special/annotated_0.pickle", run, 4, 0)
    # Two devices in one snapshot.
    run = training_run(0, 0.5, steps=1, seed=10)
    other = training_run(0, 0.5, steps=1, seed=11, device=1, base=0x7F5000000000)
    snapshot, _ = run.snapshot(devices=2)
    snapshot["segments"] += other.snapshot(devices=2)[0]["segments"]
    write(out_dir, "bad/two-devices_0.pickle", snapshot, 4)

    # Refused: pickles that would run code, at the protocols that import with GLOBAL (2) and
    # STACK_GLOBAL (4); one inside an otherwise plain snapshot.
    write(out_dir, "bad/global-os-system.pickle", Evil(), 2)
    write(out_dir, "bad/stack-global-os-system.pickle", Evil(), 4)
    run = training_run(0, 0.5, steps=1, seed=12)
    snapshot, _ = run.snapshot()
    snapshot["device_traces"][0][3]["frames"] = Evil()
    write(out_dir, "bad/evil-frame_0.pickle", snapshot, 4)
    # Cut short: the first half of a snapshot.
    with open(os.path.join(out_dir, "megatron/snapshot_3.pickle"), "rb") as f:
        whole = f.read()
    with open(os.path.join(out_dir, "bad/truncated_3.pickle"), "wb") as f:
        f.write(whole[: len(whole) // 2])
    # A pickle that is not a snapshot.
    write(out_dir, "bad/not-a-snapshot_0.pickle", [1, 2, 3], 4)
    # A trace that contradicts the segments: an allocation neither freed later nor held.
    run = training_run(0, 0.5, steps=1, seed=13)
    snapshot, _ = run.snapshot()
    snapshot["device_traces"][0].insert(5, {"action": "alloc", "addr": 0x1000, "size": 4096,
                                            "stream": 0, "time_us": BASE_TIME_US})
    write(out_dir, "bad/contradiction_0.pickle", snapshot, 4)

    # Plain data at each protocol, for the reader's own tests (tests/import/test_plain_pickle.cpp
    # states the same values): the integer opcodes at their edges, floats, strings, tuples, one
    # list referred to twice (the memo), bytes from protocol 3 on (protocol 2 pickles bytes with
    # a GLOBAL) and a bytearray at protocol 5 (BYTEARRAY8; earlier ones need a GLOBAL too).
    shared = [7]
    for protocol in (2, 3, 4, 5):
        values = {"a": 5,
                  "numbers": [1, -1, 255, 256, 65535, 65536, -2**31, 2**31 - 1, 2**31,
                              -2**63, 2**63 - 1, 2**63, -2**64, 1.5, -0.25],
                  "others": [True, False, None, "caf\u00e9", "", (1, 2), (), (1,), (1, 2, 3),
                             (1, 2, 3, 4)],
                  "s1": shared, "s2": shared}
        if protocol >= 3:
            values["bytes"] = b"xy"
        if protocol >= 5:
            values["bytearray"] = bytearray(b"z")
        write(out_dir, f"plain/values-p{protocol}.pickle", values, protocol)
    itself = []
    itself.append(itself)
    write(out_dir, "plain/self-reference.pickle", itself, 4)
    write(out_dir, "plain/set.pickle", {1, 2}, 4)
    write(out_dir, "plain/frozenset.pickle", frozenset({1}), 4)

    with open(os.path.join(out_dir, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
