#!/usr/bin/env python3
"""A real dry run on the CPU: one pipeline stage of a small GPT-style model, through autograd, in
its schedule's order, with Megatron-LM's recompute settings, Adam, and two iterations; its peak
memory is measured and printed as Megatron-LM's report_memory() lines, so that
`ppb import megatron` reads them unchanged.

What runs. Stage r of a P-stage pipeline holds its decoder layers (pre-LayerNorm attention and
MLP blocks); stage 0 also the token and position embeddings, the last stage the final LayerNorm,
the LM head and the cross-entropy loss. There is no communication: a stage that is not first gets
a random activation of the right shape for each micro-batch, and one that is not last a random
gradient for its output, which is what the neighbouring stages would send. As Megatron-LM does
(deallocate_output_tensor), a stage frees the data of each output it has sent and keeps only its
autograd graph, and runs the backward through the graph directly.

Order. Each stage runs its schedule's order of forwards and backwards (the rank's own program):
  1F1B:        P - r - 1 warm-up forwards (at most M), then one forward and one backward in
               turn, then the remaining backwards — so stage r holds min(P - r, M) micro-batches
               at its peak.
  interleaved: Megatron-LM's forward_backward_pipelining_with_interleaving
               (megatron/core/pipeline_parallel/schedules.py): (P - r - 1) * 2 + (v - 1) * P
               warm-up forwards (at most M v), then pairs, then the remaining backwards; forward
               k runs chunk (k // P) % v of micro-batch (k // (P v)) P + k % P, backward k the
               same micro-batch of chunk v - 1 - (k // P) % v. M must be a multiple of P.

Optimizer: Adam, updating in place in slices as a fused Adam kernel does (no temporary of a
parameter's size; torch.optim.Adam's would set the peak of a stage holding few activations).

Recompute (Megatron-LM's flags): none; selective (--recompute-granularity selective: the attention
core, softmax(Q K^T) V, is checkpointed in every layer); full with the uniform method (every layer
checkpointed whole) or the block method with --recompute-num-layers N (the first N layers of each
chunk checkpointed whole, keeping only their inputs). A plan (ppb.partition/1) may instead give
each stage its own layers per kind: its 'full' layers first, then 'select', then 'none'.

Measurement. The C heap in use, from glibc's mallinfo2() (uordblks + hblkhd: bytes in use in the
arenas plus mmapped blocks), sampled after every tensor operation through a TorchDispatchMode (the
forward, the backward and the recomputation run through the dispatcher, so every operation is
seen); "max allocated" is the largest sample over both iterations less the sample before the stage
is built, in MiB. PyTorch's CPU allocator takes every tensor from malloc, so this is the memory the
stage's tensors occupy plus a little bookkeeping; peaks inside one operation (its temporaries) are
not seen. "reserved" is the heap's size (arena + hblkhd). To be reproducible: one thread
(torch.set_num_threads(1)), fixed seeds, a fixed mmap threshold (mallopt), and each stage run in a
process of its own (forked from one that has imported torch but run nothing), so that no stage
inherits another's caches.

Memory snapshots (--record-memory-history, as Megatron-LM's flag). The run's tensor lifetimes are
recorded too: each tensor operation's outputs through the same TorchDispatchMode, a storage
allocated when a tensor first shows it and freed when the last tensor holding it dies (its
finalizer; PyTorch keeps a tensor's Python object alive while C++ holds it, so a tensor saved for
backward lives until its backward), the parameters from before the run, and the outputs whose
data is freed after sending (deallocate_output_tensor) released then. The lifetimes are replayed
through the rules of PyTorch's CUDA caching allocator (caching_allocator.py) and each rank's
snapshot is written as Megatron-LM names it, <--memory-snapshot-path stem>_<rank><ext> (or, with
torchtitan's --profiler.enable_memory_snapshot, as torchtitan does), with the
log line "memory snapshot: rank R ... peak allocated A MiB, peak reserved B MiB" (the replay's own
peaks): what `ppb import snapshot` reads, segments and reserved memory included, from real tensor
lifetimes.
"""

import argparse
import ctypes
import math
import os
import sys

MIB = 1024.0 * 1024.0
KINDS = ("none", "select", "comm", "both", "full")


class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


_libc = ctypes.CDLL("libc.so.6")
_libc.mallinfo2.restype = MallInfo2
_M_MMAP_THRESHOLD = -3


def heap_in_use():
    info = _libc.mallinfo2()
    return info.uordblks + info.hblkhd, info.arena + info.hblkhd


# ---------------------------------------------------------------------------------------------
# Schedules: each rank's program, a list of ("F" | "B", micro-batch, chunk).

def one_f_one_b_order(p, rank, m):
    warmup = min(p - rank - 1, m)
    order = [("F", i, 0) for i in range(warmup)]
    forwards, backwards = warmup, 0
    while forwards < m:
        order.append(("F", forwards, 0))
        forwards += 1
        order.append(("B", backwards, 0))
        backwards += 1
    order += [("B", i, 0) for i in range(backwards, m)]
    return order


def interleaved_order(p, rank, m, v):
    if m % p != 0:
        raise ValueError(f"the interleaved schedule needs micro-batches ({m}) a multiple of "
                         f"the pipeline degree ({p})")
    total = m * v
    warmup = min((p - rank - 1) * 2 + (v - 1) * p, total)

    def forward(k):
        return ("F", (k // (p * v)) * p + k % p, (k // p) % v)

    def backward(k):
        return ("B", (k // (p * v)) * p + k % p, v - 1 - (k // p) % v)

    order = [forward(k) for k in range(warmup)]
    for i in range(total - warmup):
        order.append(forward(warmup + i))
        order.append(backward(i))
    order += [backward(k) for k in range(total - warmup, total)]
    return order


def held_at_peak(order):
    """The most micro-batches each chunk holds (forward started, backward not finished)."""
    held, most = {}, {}
    for op, _, chunk in order:
        held[chunk] = held.get(chunk, 0) + (1 if op == "F" else -1)
        most[chunk] = max(most.get(chunk, 0), held[chunk])
    return most


# ---------------------------------------------------------------------------------------------
# The model.

def build_classes(torch):
    nn = torch.nn
    checkpoint = torch.utils.checkpoint.checkpoint

    def attention_core(q, k, v, scale):
        # `scale` is a tensor, not a Python number: torch 1.13's non-reentrant checkpoint packs
        # every saved value as a tensor.
        scores = torch.matmul(q, k.transpose(-2, -1)) * scale
        return torch.matmul(torch.softmax(scores, dim=-1), v)

    class Block(nn.Module):
        def __init__(self, hidden, heads, kind):
            super().__init__()
            self.heads, self.kind = heads, kind
            self.register_buffer("scale", torch.tensor(1.0 / math.sqrt(hidden // heads)),
                                 persistent=False)
            self.ln1 = nn.LayerNorm(hidden)
            self.qkv = nn.Linear(hidden, 3 * hidden)
            self.proj = nn.Linear(hidden, hidden)
            self.ln2 = nn.LayerNorm(hidden)
            self.fc1 = nn.Linear(hidden, 4 * hidden)
            self.fc2 = nn.Linear(4 * hidden, hidden)

        def body(self, x):
            b, s, h = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, self.heads, h // self.heads).permute(
                2, 0, 3, 1, 4).unbind(0)
            if self.kind == "select":
                a = checkpoint(attention_core, q, k, v, self.scale, use_reentrant=False)
            else:
                a = attention_core(q, k, v, self.scale)
            x = x + self.proj(a.transpose(1, 2).reshape(b, s, h))
            return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x))))

        def forward(self, x):
            if self.kind == "full":
                return checkpoint(self.body, x, use_reentrant=False)
            return self.body(x)

    class Chunk(nn.Module):
        """A stage's model chunk: its blocks, and the embedding or the LM head where it holds
        the model's ends."""

        def __init__(self, cfg, kinds, first, last):
            super().__init__()
            self.cfg, self.first, self.last = cfg, first, last
            if first:
                self.embed = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
                self.position = nn.Embedding(cfg.seq_length, cfg.hidden_size)
            self.blocks = nn.ModuleList(Block(cfg.hidden_size, cfg.num_attention_heads, k)
                                        for k in kinds)
            if last:
                self.ln = nn.LayerNorm(cfg.hidden_size)
                self.head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)

        def forward(self, x, labels=None):
            if self.first:
                positions = torch.arange(self.cfg.seq_length)
                x = self.embed(x) + self.position(positions)
            for block in self.blocks:
                x = block(x)
            if self.last:
                logits = self.head(self.ln(x))
                return torch.nn.functional.cross_entropy(
                    logits.view(-1, self.cfg.vocab_size), labels.view(-1))
            return x

    class Adam(torch.optim.Optimizer):
        """Adam (Kingma & Ba) updating in place, a slice of at most ADAM_SLICE elements at a time,
        as a fused Adam kernel (Megatron-LM's, apex's) does: no temporary of a parameter's size,
        so that the step's own buffers never set a stage's peak."""

        def __init__(self, params, lr=1e-4, betas=(0.9, 0.999), eps=1e-8):
            super().__init__(params, {"lr": lr, "betas": betas, "eps": eps})

        @torch.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                b1, b2 = group["betas"]
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self.state[p]
                    if not state:
                        state["step"] = 0
                        state["exp_avg"] = torch.zeros_like(p)
                        state["exp_avg_sq"] = torch.zeros_like(p)
                    state["step"] += 1
                    t = state["step"]
                    step_size = group["lr"] / (1.0 - b1 ** t)
                    root = math.sqrt(1.0 - b2 ** t)
                    tensors = [x.view(-1) for x in (p, p.grad, state["exp_avg"],
                                                     state["exp_avg_sq"])]
                    for i in range(0, tensors[0].numel(), ADAM_SLICE):
                        w, g, m, v = (x[i:i + ADAM_SLICE] for x in tensors)
                        m.mul_(b1).add_(g, alpha=1.0 - b1)
                        v.mul_(b2).addcmul_(g, g, value=1.0 - b2)
                        w.addcdiv_(m, v.sqrt().div_(root).add_(group["eps"]), value=-step_size)

    return Chunk, Adam


ADAM_SLICE = 4096


# ---------------------------------------------------------------------------------------------
# Layouts: which layers and kinds each (stage, chunk) holds.

def parse_layout(text, p):
    """Megatron-LM's --pipeline-model-parallel-layout: [stage][chunk] decoder layers."""
    import re
    s = text.replace(",", "")
    s = re.sub(r"\(([^)]+)\)\*(\d+)", lambda x: x.group(1) * int(x.group(2)), s)
    s = re.sub(r"(.)\*(\d+)", lambda x: x.group(1) * int(x.group(2)), s)
    stages = s.split("|")
    if len(stages) % p != 0:
        raise ValueError(f"layout {text!r}: {len(stages)} virtual stages for {p} stages")
    for c in s:
        if c not in "Et|L":
            raise ValueError(f"layout {text!r}: '{c}' is not E, t, L or |")
    v = len(stages) // p
    return [[stages[c * p + r].count("t") for c in range(v)] for r in range(p)]


def megatron_kinds(args, layers):
    """Each chunk's layer kinds under Megatron-LM's recompute flags (block: per chunk)."""
    if args.recompute_granularity is None:
        return ["none"] * layers
    if args.recompute_granularity == "selective":
        return ["select"] * layers
    if args.recompute_method == "uniform":
        return ["full"] * layers
    n = min(args.recompute_num_layers, layers)
    return ["full"] * n + ["none"] * (layers - n)


def megatron_stage_kinds(args):
    p = args.pipeline_model_parallel_size
    if args.pipeline_model_parallel_layout:
        counts = parse_layout(args.pipeline_model_parallel_layout, p)
    else:
        v = args.num_virtual_stages_per_pipeline_rank or 1
        if args.num_layers % (p * v) != 0:
            raise ValueError("--num-layers must divide into P x v chunks without a layout")
        counts = [[args.num_layers // (p * v)] * v for _ in range(p)]
    if sum(map(sum, counts)) != args.num_layers:
        raise ValueError(f"the layout holds {sum(map(sum, counts))} layers, --num-layers is "
                         f"{args.num_layers}")
    return [[megatron_kinds(args, n) for n in stage] for stage in counts]


def plan_stage_kinds(plan):
    """A ppb.partition/1 plan's chunks: 'full' layers first, then 'select', then 'none'."""
    out = []
    for stage in plan["stages"]:
        chunks = []
        for chunk in stage.get("chunks") or [{"layers": stage["layers"]}]:
            layers = chunk["layers"]
            for kind in ("comm", "both"):
                if layers.get(kind):
                    raise ValueError(f"the harness runs none, select and full layers, not {kind}")
            chunks.append(["full"] * layers.get("full", 0) + ["select"] * layers.get("select", 0)
                          + ["none"] * layers.get("none", 0))
        out.append(chunks)
    return out


# ---------------------------------------------------------------------------------------------
# Tensor lifetimes, for memory snapshots.

class LifetimeRecorder:
    """Storages allocated and freed as the run's tensors show and release them, replayed through
    the caching allocator (module documentation, "Memory snapshots")."""

    def __init__(self):
        import weakref
        here = os.path.dirname(os.path.abspath(__file__))
        if here not in sys.path:
            sys.path.insert(0, here)
        from caching_allocator import CachingAllocator
        self.allocator = CachingAllocator()
        self._live = {}  # storage data pointer -> [allocator address, tensors holding it]
        # id(tensor) -> [its storage data pointer], while the tensor lives (its finalizer takes
        # it out, before the id can be reused); by identity, as tensors compare elementwise.
        self._cells = {}
        self._weakref = weakref

    @staticmethod
    def _storage(t):
        s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage().untyped()
        return s.data_ptr(), s.nbytes()

    def track(self, t):
        """A tensor seen: its storage is allocated if new; freed when its last tensor dies."""
        if id(t) in self._cells:
            return
        ptr, nbytes = self._storage(t)
        if ptr == 0 or nbytes == 0:
            return
        entry = self._live.get(ptr)
        if entry is None:
            entry = self._live[ptr] = [self.allocator.malloc(nbytes), 0]
        entry[1] += 1
        cell = [ptr]
        self._cells[id(t)] = cell
        self._weakref.finalize(t, self._dead, id(t), cell)

    def _dead(self, key, cell):
        if self._cells.get(key) is cell:
            del self._cells[key]
        self._release(cell)

    def _release(self, cell):
        ptr = cell[0]
        if ptr is None:
            return
        cell[0] = None
        entry = self._live[ptr]
        entry[1] -= 1
        if entry[1] == 0:
            del self._live[ptr]
            self.allocator.free(entry[0])

    def rebind(self, t):
        """`t`'s data was replaced (t.data = ...): its old storage loses it, its new one gains it."""
        cell = self._cells.pop(id(t), None)
        if cell is not None:
            self._release(cell)
        self.track(t)


# ---------------------------------------------------------------------------------------------
# One stage.

def run_stage(torch, cfg, stage_kinds, p, rank, m, schedule, recorder=None):
    """Runs rank `rank`'s program for two iterations; returns (in use, peak, reserved) in MiB
    after each iteration, measured from before the stage was built (reserved: the whole heap).
    With a LifetimeRecorder, every tensor's lifetime is recorded too."""
    from torch.utils._python_dispatch import TorchDispatchMode

    Chunk, Adam = build_classes(torch)
    v = len(stage_kinds[rank])
    base, _ = heap_in_use()
    samples = {"peak": base}

    class Sampler(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if recorder is not None:
                for t in (out if isinstance(out, (tuple, list)) else (out,)):
                    if isinstance(t, torch.Tensor):
                        recorder.track(t)
            used, _ = heap_in_use()
            if used > samples["peak"]:
                samples["peak"] = used
            return out

    torch.manual_seed(1234 + rank)
    chunks = [Chunk(cfg, stage_kinds[rank][c], rank == 0 and c == 0,
                    rank == p - 1 and c == v - 1) for c in range(v)]
    params = [q for c in chunks for q in c.parameters()]
    if recorder is not None:
        for q in params:  # allocated before the run
            recorder.track(q)
    optimizer = Adam(params, lr=1e-4)
    order = one_f_one_b_order(p, rank, m) if schedule == "1f1b" else interleaved_order(
        p, rank, m, v)
    shape = (cfg.micro_batch_size, cfg.seq_length, cfg.hidden_size)
    tokens = (cfg.micro_batch_size, cfg.seq_length)
    readings = []
    with Sampler():
        for iteration in range(2):
            gen = torch.Generator().manual_seed(99 + iteration)
            held = {}
            for op, mb, c in order:
                chunk = chunks[c]
                if op == "F":
                    x = (torch.randint(cfg.vocab_size, tokens, generator=gen) if chunk.first
                         else torch.randn(shape, generator=gen).requires_grad_())
                    labels = (torch.randint(cfg.vocab_size, tokens, generator=gen)
                              if chunk.last else None)
                    out = chunk(x, labels)
                    if not chunk.last:
                        # Megatron-LM's deallocate_output_tensor: the output is sent, its data
                        # freed; the graph stays for the backward.
                        out.data = torch.empty((1,), dtype=out.dtype)
                        if recorder is not None:
                            recorder.rebind(out)
                    held[(mb, c)] = (x, out)
                else:
                    x, out = held.pop((mb, c))
                    if chunk.last:
                        out.backward()
                    else:
                        # The output's data is gone: the engine directly, as Megatron-LM's
                        # custom_backward, with the gradient the next stage would send.
                        grad = torch.randn(shape, generator=gen)
                        torch.autograd.Variable._execution_engine.run_backward(
                            (out,), (grad,), False, False, (), True, True)
                        del grad
                    del x, out
            optimizer.step()
            optimizer.zero_grad(set_to_none=False)
            used, reserved = heap_in_use()
            readings.append(((used - base) / MIB, (samples["peak"] - base) / MIB,
                             reserved / MIB))
    return readings


def report_memory_line(rank, iteration, allocated, max_allocated, reserved):
    """Megatron-LM's report_memory (megatron/training/utils.py), as a rank prints it."""
    return (f"[Rank {rank}] (after {iteration} iterations) memory (MB) | allocated: "
            f"{allocated} | max allocated: {max_allocated} | reserved: {reserved} | "
            f"max reserved: {reserved}")


def snapshot_file(path, rank):
    """Megatron-LM's name of rank `rank`'s snapshot: <stem>_<rank><ext> of --memory-snapshot-path
    (megatron/training/training.py)."""
    stem, ext = os.path.splitext(path)
    return f"{stem}_{rank}{ext}"


def torchtitan_snapshot_file(folder, rank, step=2):
    """torchtitan's name of rank `rank`'s snapshot after step `step`:
    <folder>/step_<12 digits>/<rank:06d>_step_<step>.pickle (torchtitan/tools/profiler.py,
    MEMORY_STEP_DIR and MEMORY_FILE); the harness's two iterations end at step 2."""
    directory = os.path.join(folder, f"step_{step:012d}")
    os.makedirs(directory, exist_ok=True)
    return os.path.join(directory, f"{rank:06d}_step_{step}.pickle")


def run_pipeline(cfg, stage_kinds, m, schedule, ranks=None, out=sys.stdout, snapshot_path=None):
    """Every rank (or `ranks`) in a forked process of its own; prints each rank's lines in rank
    order, as one combined log of all ranks. With `snapshot_path` (Megatron-LM's
    --memory-snapshot-path, or a function of the rank giving the file), each rank also writes its
    memory snapshot (module documentation, "Memory snapshots")."""
    import torch
    import torch.utils.checkpoint  # noqa: F401 (torch.utils.checkpoint.checkpoint)
    torch.set_num_threads(1)
    p = len(stage_kinds)
    out.write(f"using world size: {p}, data-parallel size: 1, context-parallel size: 1, "
              f"tensor-model-parallel size: 1, pipeline-model-parallel size: {p}\n")
    for rank in (range(p) if ranks is None else ranks):
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_end)
            status = 0
            try:
                _libc.mallopt(_M_MMAP_THRESHOLD, 64 * 1024)
                recorder = LifetimeRecorder() if snapshot_path else None
                readings = run_stage(torch, cfg, stage_kinds, p, rank, m, schedule, recorder)
                text = "".join(report_memory_line(rank, i + 1, round(used, 3), round(peak, 3),
                                                  round(res, 3)) + "\n"
                               for i, (used, peak, res) in enumerate(readings))
                if recorder is not None:
                    import pickle
                    name = (snapshot_path(rank) if callable(snapshot_path)
                            else snapshot_file(snapshot_path, rank))
                    with open(name, "wb") as f:
                        pickle.dump(recorder.allocator.snapshot(), f, protocol=4)
                    a = recorder.allocator
                    text += (f"memory snapshot: rank {rank} wrote {name}: peak allocated "
                             f"{a.peak_allocated / MIB:.6f} MiB, peak reserved "
                             f"{a.peak_reserved / MIB:.6f} MiB\n")
                os.write(write_end, text.encode())
            except BaseException as e:  # the child must never return into the parent's code
                os.write(write_end, f"error: rank {rank}: {e!r}\n".encode())
                status = 1
            finally:
                os._exit(status)
        os.close(write_end)
        chunks = []
        while True:
            data = os.read(read_end, 65536)
            if not data:
                break
            chunks.append(data)
        os.close(read_end)
        _, status = os.waitpid(pid, 0)
        text = b"".join(chunks).decode()
        if status != 0:
            raise RuntimeError(text.strip() or f"rank {rank} failed")
        out.write(text)
    out.flush()


class ModelConfig(argparse.Namespace):
    pass


def add_model_arguments(parser):
    g = parser.add_argument_group("model (Megatron-LM's flags)")
    g.add_argument("--hidden-size", type=int, default=64)
    g.add_argument("--num-attention-heads", type=int, default=4)
    g.add_argument("--seq-length", type=int, default=64)
    g.add_argument("--micro-batch-size", type=int, default=2)
    g.add_argument("--vocab-size", type=int, default=512)


def build_parser():
    parser = argparse.ArgumentParser(
        description="Dry-run a small GPT-style model's pipeline stages on the CPU and print "
                    "Megatron-LM's report_memory lines (see the module's documentation).")
    add_model_arguments(parser)
    g = parser.add_argument_group("pipeline (Megatron-LM's flags)")
    g.add_argument("--pipeline-model-parallel-size", type=int)
    g.add_argument("--num-layers", type=int)
    g.add_argument("--pipeline-model-parallel-layout")
    g.add_argument("--num-virtual-stages-per-pipeline-rank", type=int)
    g.add_argument("--recompute-granularity", choices=("full", "selective"))
    g.add_argument("--recompute-method", choices=("uniform", "block"))
    g.add_argument("--recompute-num-layers", type=int, default=1)
    g.add_argument("--num-microbatches", type=int)
    g = parser.add_argument_group("memory snapshots (Megatron-LM's flags)")
    g.add_argument("--record-memory-history", action="store_true",
                   help="also write each rank's memory snapshot, replayed through PyTorch's "
                        "caching allocator's rules")
    g.add_argument("--memory-snapshot-path", default="snapshot.pickle",
                   help="rank R's snapshot is <stem>_R<ext> (default snapshot.pickle)")
    g.add_argument("--profiler.enable_memory_snapshot", dest="torchtitan_snapshot",
                   action="store_true",
                   help="torchtitan's flag: write each rank's snapshot as torchtitan names it")
    g.add_argument("--profiler.save_memory_snapshot_folder", dest="torchtitan_snapshot_folder",
                   default="profiling/memory_snapshot",
                   help="torchtitan's folder: <folder>/step_000000000002/<rank:06d>_step_2.pickle")
    parser.add_argument("--plan", help="run a ppb.partition/1 plan's stages instead of the flags")
    parser.add_argument("--rank", type=int, action="append",
                        help="run only this rank (repeatable; default every rank)")
    return parser


def megatron_run(argv):
    """The model configuration and each stage's chunks' kinds from Megatron-LM's flags (as
    `ppb design` prints them)."""
    args = build_parser().parse_args(argv)
    return args, megatron_stage_kinds(args)


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.num_microbatches is None:
        parser.error("give --num-microbatches M")
    if args.plan:
        import json
        with open(args.plan, encoding="utf-8") as f:
            plan = json.load(f)
        stage_kinds = plan_stage_kinds(plan)
        schedule = plan.get("schedule", "1f1b")
    else:
        if not args.pipeline_model_parallel_size or not args.num_layers:
            parser.error("give --pipeline-model-parallel-size and --num-layers, or --plan")
        stage_kinds = megatron_stage_kinds(args)
        schedule = "interleaved" if len(stage_kinds[0]) > 1 else "1f1b"
    if schedule not in ("1f1b", "interleaved"):
        parser.error(f"the harness runs 1f1b and interleaved plans, not {schedule}")
    if args.recompute_granularity == "full" and args.recompute_method is None:
        parser.error("--recompute-granularity full needs --recompute-method uniform or block")
    if args.record_memory_history and args.torchtitan_snapshot:
        parser.error("--record-memory-history (Megatron-LM's names) or "
                     "--profiler.enable_memory_snapshot (torchtitan's), not both")
    snapshot_path = None
    if args.record_memory_history:
        snapshot_path = args.memory_snapshot_path
    elif args.torchtitan_snapshot:
        folder = args.torchtitan_snapshot_folder
        snapshot_path = lambda rank: torchtitan_snapshot_file(folder, rank)  # noqa: E731
    run_pipeline(args, stage_kinds, args.num_microbatches, schedule, args.rank,
                 snapshot_path=snapshot_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
