"""The whole loop on real execution (PyTorch on the CPU, samples/dryrun-harness):

  ppb design -> the harness runs the designed dry runs -> ppb import megatron -> ppb fit
  -> the same runs' memory snapshots (real tensor lifetimes through the caching allocator's
     rules), imported with the arguments ppb design prints, read back exactly, reserved included
  -> held-out placements (one of another pipeline degree) predicted within 3 % and 3 standard
     errors of what the harness measures
  -> ppb partition under a limit -> the harness runs the plan: every stage's measured peak under
     the limit and within the predicted +-3 sigma
  -> interleaved stages (Megatron-LM's order, P = 4, v = 2, M = 8, chunks of unequal mixes) run for
     real and predicted from the same 1F1B fit by `ppb predict --schedule interleaved --chunk ...`
     within 1.5 %, the largest weighted in-flight sum over the stage's profile (at least two of
     them peak at a moment a chunk holds no micro-batch, evaluated exactly by the linear model);
     the older count, each chunk's own maximum added, is further off (its worst error larger, and
     over 1.5 %).

"Standard error" is that of the difference between a new measurement and its prediction:
sqrt(se^2 + sigma^2), se the fit's standard error of the predicted mean (ppb predict) and sigma^2
the fit's residual variance (a new run scatters around the mean as the fitted runs did).

A plain script, not pytest: it must fail, never skip, when torch is missing. It prints every
figure it checks (the measured errors of host_api/docs/dryrun-loop.md come from this output)."""

import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SOURCE = Path(os.environ.get("PPB_SOURCE_DIR", Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(SOURCE / "samples" / "dryrun-harness"))

import torch  # noqa: E402,F401  (missing torch fails the test here: install python3-torch)

import ppb_dryrun  # noqa: E402

# Small enough to run in seconds; wide enough (h = 256 against 16 tokens) that what the linear
# model leaves out — one layer's recomputed activations at the first backward of a stage with
# full recompute, the loss's buffers on the last stage — stays within a few hundred KB of
# stages of 10 to 60 MB.
MODEL = ["--hidden-size", "256", "--num-attention-heads", "4", "--seq-length", "16",
         "--micro-batch-size", "1", "--vocab-size", "256"]
LAYERS, STAGES, MICRO = 8, 4, 4
failures = []


def ppb(*args):
    done = subprocess.run([os.environ["PPB_CLI"], *map(str, args)], capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"ppb {' '.join(map(str, args))} failed ({done.returncode}):\n{done.stderr}")
    return done.stdout


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def run_megatron(args, log, snapshot_path=None):
    cfg, kinds = ppb_dryrun.megatron_run(MODEL + list(args))
    with open(log, "w", encoding="utf-8") as out:
        ppb_dryrun.run_pipeline(cfg, kinds, MICRO, "1f1b", out=out, snapshot_path=snapshot_path)


def snapshot_peaks(text):
    """{rank: (peak allocated, peak reserved) MiB} of the harness's "memory snapshot:" lines."""
    out = {}
    for line in text.splitlines():
        if line.startswith("memory snapshot: rank "):
            rank = int(line.split()[3])
            allocated = float(line.split("peak allocated ")[1].split(" MiB")[0])
            reserved = float(line.split("peak reserved ")[1].split(" MiB")[0])
            out[rank] = (allocated, reserved)
    return out


def snapshot_check(design, work, logs):
    """The design's runs as one GPU per rank would make them (ppb design --world-size): their
    memory snapshots, written by the harness from the run's real tensor lifetimes replayed through
    the caching allocator's rules, imported with the arguments `ppb design` prints, give every
    stage's peaks exactly; fitted, they carry the allocator's reserve, and a plan is on reserved
    memory."""
    snapshots = work / "snapshots.json"
    for i, run in enumerate(design["runs"]):
        one = run["one_gpu"]
        files = sorted(work.glob(one["megatron"]["snapshots"]))
        check(len(files) == STAGES, f"{run['label']}: {len(files)} snapshots, one per rank")
        where = ["--append", snapshots] if i > 0 else ["-o", snapshots]
        ppb("import", "snapshot", *one["import_args"], *files, *where)
        peaks = snapshot_peaks(logs[run["label"]])
        observed = [o for o in json.loads(snapshots.read_text())["observations"]
                    if o["config"] == run["label"]]
        for o in observed:
            allocated, reserved = peaks[one["ranks"][o["stage"]]]
            check(abs(o["peak_memory_mb"] - allocated) < 1e-5
                  and abs(o["reserved_mb"] - reserved) < 1e-5,
                  f"{run['label']} stage {o['stage']}: snapshot read as {o['peak_memory_mb']:.3f} "
                  f"MB allocated, {o['reserved_mb']:.3f} MB reserved, the replay's "
                  f"{allocated:.3f} / {reserved:.3f}")
    fit = json.loads(ppb("fit", snapshots, "--json"))
    reserve = fit.get("allocator_reserve")
    check(reserve is not None and reserve["observations"] == STAGES * len(design["runs"]),
          f"the snapshots' fit carries the allocator's reserve: {json.dumps(reserve)}")
    return snapshots


def import_run(log, args, label, file, append):
    p = args[args.index("--pipeline-model-parallel-size") + 1]
    where = ["--append", file] if append else ["-o", file]
    ppb("import", "megatron", log, *args, "--world-size", p, "--num-microbatches", MICRO,
        "--label", label, *where)


def predict(train, p, s, layers):
    items = ",".join(f"{k}={n}" for k, n in layers.items() if n)
    out = json.loads(ppb("predict", train, "--stages", p, "--stage", s, "--layers", items,
                         "--micro-batches", MICRO, "--json"))
    return out


def measured_peaks(text):
    """{rank: max allocated MB} of the last iteration's report_memory lines."""
    out = {}
    for line in text.splitlines():
        if line.startswith("[Rank"):
            rank = int(line.split("]")[0][6:])
            out[rank] = float(line.split("max allocated: ")[1].split(" |")[0])
    return out


# Interleaved stages: P = 4, v = 2, M = 8, one layer per chunk. Each case is (rank, chunk 0's kind,
# chunk 1's kind). Ranks 0-2 with unequal chunks peak at different moments of the order (in-flight
# (7, 4), (8, 1), (4, 3)); rank 1 with two heavy chunks is where the per-chunk maxima, (8, 4),
# over-count most: three micro-batches of chunk 1 more than any moment of the order holds. Ranks 2
# and 3 with two heavy chunks peak at a moment chunk 1 holds no micro-batch, (7, 0) and (5, 0):
# the linear model is evaluated there exactly, not at (7, 1) and (5, 1) as plugins are asked.
IL_STAGES, IL_CHUNKS, IL_MICRO = 4, 2, 8
IL_CASES = [[(0, "full", "none"), (1, "none", "full"), (2, "full", "none"), (3, "none", "full")],
            [(1, "none", "none"), (2, "none", "none"), (3, "none", "none")]]


def interleaved_check(train, fit):
    """Real interleaved stages against the 1F1B fit: `ppb predict --schedule interleaved` (the
    largest row over the stage's in-flight profile) within 1.5 % of each measured peak; the sum of
    each chunk's own maximum, computed from the same fitted coefficients, further off."""
    theta = fit["parameters"]
    cfg = ppb_dryrun.build_parser().parse_args(MODEL)
    new_worst = old_worst = 0.0
    old_over_bound = False
    moments = set()
    zero_peaks = 0
    for cases in IL_CASES:
        kinds = [[["none"], ["none"]] for _ in range(IL_STAGES)]
        for rank, k0, k1 in cases:
            kinds[rank] = [[k0], [k1]]
        log = io.StringIO()
        ppb_dryrun.run_pipeline(cfg, kinds, IL_MICRO, "interleaved",
                                ranks=[c[0] for c in cases], out=log)
        measured = measured_peaks(log.getvalue())
        for rank, k0, k1 in cases:
            m = measured[rank]
            got = json.loads(ppb("predict", train, "--stages", IL_STAGES, "--stage", rank,
                                 "--chunk", f"{k0}=1", "--chunk", f"{k1}=1", "--schedule",
                                 "interleaved", "--micro-batches", IL_MICRO, "--json"))
            new = got["peak_memory_mb"]

            # The fitted model's row (design.md, section 2.1) at in-flight counts (f_0, f_1).
            def row(counts):
                return (theta["const_mb"] + theta["head_mb"] * (rank == 0)
                        + theta["tail_mb"] * (rank == IL_STAGES - 1)
                        + theta["param_per_layer_mb"] * IL_CHUNKS
                        + sum(theta["activation_mb"][k] * f for k, f in zip((k0, k1), counts)))

            # The row is ppb's own model: it gives every vector of ppb's profile as ppb does.
            for vec in got["placement"]["in_flight_profile"]:
                if abs(row(vec["in_flight"]) - vec["peak_memory_mb"]) > 1e-6:
                    sys.exit(f"the fitted row {row(vec['in_flight'])} is not ppb's {vec}")
            # The older counts: each chunk's own maximum over the harness's order, added.
            most = ppb_dryrun.held_at_peak(
                ppb_dryrun.interleaved_order(IL_STAGES, rank, IL_MICRO, IL_CHUNKS))
            old = row([most[c] for c in range(IL_CHUNKS)])
            new_pct, old_pct = (100.0 * (x - m) / m for x in (new, old))
            new_worst, old_worst = max(new_worst, abs(new_pct)), max(old_worst, abs(old_pct))
            old_over_bound |= abs(old_pct) > 1.5
            peak_at = tuple(c["in_flight"] for c in got["placement"]["chunks"])
            moments.add(peak_at)
            zero_peaks += 0 in peak_at
            # What counting a chunk that holds none as holding one would give (a model without
            # coefficients, design.md, section 4.3).
            as_one = max(row([max(f, 1) for f in v["in_flight"]])
                         for v in got["placement"]["in_flight_profile"])
            check(abs(new_pct) <= 1.5,
                  f"interleaved rank {rank} chunks ({k0}, {k1}): measured {m:.3f} MB, predicted "
                  f"{new:.3f} MB at in-flight {peak_at} ({new_pct:+.2f} %); per-chunk maxima "
                  f"{tuple(most[c] for c in range(IL_CHUNKS))}: {old:.3f} MB ({old_pct:+.2f} %); "
                  f"counts of 0 as 1: {as_one:.3f} MB ({100.0 * (as_one - m) / m:+.2f} %)")
    check(len(moments) >= 3, f"the stages peak at {len(moments)} different moments {moments}")
    check(zero_peaks >= 2, f"{zero_peaks} stages peak at a moment a chunk holds no micro-batch")
    check(old_worst > new_worst and old_over_bound,
          f"interleaved worst error {new_worst:.2f} % from the profile, {old_worst:.2f} % from "
          f"the per-chunk maxima")


def main():
    work = Path(tempfile.mkdtemp(prefix="ppb-loop-"))
    train = work / "dryruns.json"
    design = json.loads(ppb("design", "--stages", STAGES, "--num-layers", LAYERS, "--kinds",
                            "none,full", "--recompute-rule", "megatron", "--micro-batches", MICRO,
                            "--runs", 3, "--world-size", STAGES, "--json"))
    print(f"design: {len(design['runs'])} runs, worst prediction se "
          f"{design['worst_prediction_std_error_mb']:.3f} MB per MB of noise")
    logs = {}
    for i, run in enumerate(design["runs"]):
        log = work / f"{run['label']}.log"
        run_megatron(run["megatron"]["args"], log,
                     snapshot_path=str(work / f"{run['label']}.pickle"))
        logs[run["label"]] = log.read_text()
        import_run(log, run["megatron"]["args"], run["label"], train, i > 0)
    snapshot_check(design, work, logs)
    fit = json.loads(ppb("fit", train, "--json"))
    check(not fit["diagnostics"]["not_identifiable"] and not fit["diagnostics"]["const_folded"],
          "the designed dry runs identify every coefficient")
    diag = fit["diagnostics"]
    sigma2 = diag["rms_residual_mb"] ** 2 * diag["rows"] / diag["degrees_of_freedom"]
    print("fit:", json.dumps(fit["parameters"]), f"residual sigma {sigma2 ** 0.5:.4f} MB")
    started = time.perf_counter()
    interleaved_check(train, fit)
    print(f"interleaved check: {time.perf_counter() - started:.1f} s")

    # Held out: another degree (3) and another layout of the design's degree.
    held = [
        ["--pipeline-model-parallel-size", "3", "--num-layers", str(LAYERS),
         "--pipeline-model-parallel-layout", "Et*3|t*3|t*2L", "--recompute-granularity", "full",
         "--recompute-method", "block", "--recompute-num-layers", "2"],
        ["--pipeline-model-parallel-size", "4", "--num-layers", str(LAYERS),
         "--pipeline-model-parallel-layout", "Et|t*3|t*3|tL", "--recompute-granularity", "full",
         "--recompute-method", "uniform", "--recompute-num-layers", "1"],
    ]
    worst_pct = 0.0
    for i, args in enumerate(held):
        log = work / f"held-{i}.log"
        run_megatron(args, log)
        file = work / f"held-{i}.json"
        import_run(log, args, f"held-{i}", file, False)
        observed = json.loads(file.read_text())
        p = int(args[1])
        for o in observed["observations"]:
            got = predict(train, p, o["stage"], o["layers"])
            mb = got["peak_memory_mb"]
            se = (got["std_error_mb"] ** 2 + sigma2) ** 0.5
            err = mb - o["peak_memory_mb"]
            pct = 100.0 * abs(err) / o["peak_memory_mb"]
            worst_pct = max(worst_pct, pct)
            check(pct <= 3.0 and abs(err) <= 3.0 * se,
                  f"held-out P={p} stage {o['stage']} {o['layers']}: measured "
                  f"{o['peak_memory_mb']:.3f} MB, predicted {mb:.3f} +- {se:.3f} MB "
                  f"({pct:.2f} %, {abs(err) / se if se else float('inf'):.2f} se)")
    print(f"held-out worst error {worst_pct:.2f} %")

    # A plan under a limit between the all-'none' and the all-'full' stages, run for real.
    layer_file = work / "layers.json"
    layer_file.write_text(json.dumps({"layers_description": [
        {"name": "embedding", "type": "HEAD", "nb_layer": 1, "time": 2.0},
        {"name": "block", "type": "BODY", "nb_layer": LAYERS, "time": 6.0},
        {"name": "head", "type": "TAIL", "nb_layer": 1, "time": 3.0}]}))
    none = predict(train, STAGES, 0, {"none": LAYERS // STAGES})["peak_memory_mb"]
    full = predict(train, STAGES, 0, {"full": LAYERS // STAGES})["peak_memory_mb"]
    limit = round((none + full) / 2.0, 1)
    plan = json.loads(ppb("partition", "--model-desc", layer_file, "--dryrun", train, "--stages",
                          STAGES, "--micro-batches", MICRO, "--memory-limit-mb", limit, "--kinds",
                          "none,full", "--memory-margin-sigma", 3, "--memory", "allocated",
                          "--json"))
    # Allocated memory: the harness's "reserved" is the whole C heap, the interpreter's included,
    # and the check below is of the allocated peaks the plan's run measures.
    plan_file = work / "plan.json"
    plan_file.write_text(json.dumps(plan))
    log = work / "plan.log"
    with open(log, "w", encoding="utf-8") as out:
        ppb_dryrun.run_pipeline(ppb_dryrun.build_parser().parse_args(MODEL),
                                ppb_dryrun.plan_stage_kinds(plan), MICRO, "1f1b", out=out)
    measured = measured_peaks(log.read_text())
    for st in plan["stages"]:
        got = predict(train, STAGES, st["stage"], st["layers"])
        m = measured[st["stage"]]
        se = (got["std_error_mb"] ** 2 + sigma2) ** 0.5
        check(m <= limit and abs(m - got["peak_memory_mb"]) <= 3.0 * se,
              f"plan stage {st['stage']} {st['layers']}: measured {m:.3f} MB, predicted "
              f"{got['peak_memory_mb']:.3f} +- {se:.3f} MB, limit {limit} MB")
    if failures:
        sys.exit(f"{len(failures)} check(s) failed; the files are in {work}")
    print("the loop holds")


if __name__ == "__main__":
    main()
