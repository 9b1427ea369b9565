#!/usr/bin/env python3
"""peat.torch on a real model: the cost of its modes on a torchvision
ResNet-18 training step (10 classes, batch 16, 3x32x32, SGD with momentum,
1 intra-op thread), attached idle (no policy, no profiler) and recording every
10th call of each op (profiler rule '*' every_n=10), against the same step
without a mode, measured in the same run: NativeMode (the C++ hook,
libpeat_torch) and PeatMode (the Python TorchDispatchMode). A pass-through
TorchDispatchMode (torch's own cost of any Python mode) is measured too, so
that PeatMode's own share is printed beside its ratios. A sample is a few
steps with the mode attached; entering and leaving a mode is not part of a
step (NativeMode's enter + exit, which adds and removes its module hooks,
is printed apart in ms). NativeMode's kernels, registered at its first
entry, stay registered for the rest of the process: with no mode attached
they pass calls on, and the plain step pays that too (per op in
bench_torch_mode.py: torch_mode_native_overhead_us_per_op's note).

The figure is the training thread's CPU time (time.thread_time): what the
mode costs the step, whatever else the machine runs (a wall clock on a shared
machine measures the neighbours). The profiler's background threads (codec,
writer) are not on the training thread; their CPU time is printed apart
(process time minus thread time). Conditions are interleaved round by round
(each condition takes each place in a round in turn, a sample is a few steps)
so that drifts and the order hit them alike; each round gives one
ratio per condition, and the median is printed with the spread (min, quartiles,
max). Prints one JSON object.

Usage: bench_resnet_overhead.py [ROUNDS] [WORK_DIR] [STEPS_PER_SAMPLE]"""
import copy
import json
import os
import statistics
import sys
import tempfile
import time
import warnings

import torch
import torch.nn.functional as F
import torchvision

import peat
import peat.torch as pt
from torch.utils._python_dispatch import TorchDispatchMode

torch.set_num_threads(1)
warnings.simplefilter("ignore", pt.PeatWarning)


def quartiles(v):
    """min, quartiles, max, and a 95 % confidence interval of the median
    (order statistics n/2 -+ 0.98 sqrt(n), the binomial rule): whether a
    figure resolves its target is read from the interval, not the quartiles,
    which measure how much one sample of a few steps varies."""
    v = sorted(v)
    q = statistics.quantiles(v, n=4) if len(v) >= 2 else [v[0]] * 3
    n = len(v)
    lo = max(0, int(n / 2 - 0.98 * n ** 0.5))
    hi = min(n - 1, int(n / 2 + 0.98 * n ** 0.5 + 0.999))
    return {"min": v[0], "q1": q[0], "median": q[1], "q3": q[2], "max": v[-1],
            "median_ci95": [v[lo], v[hi]]}


class PassThrough(TorchDispatchMode):
    """torch's own cost of a Python dispatch mode."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    work = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp()
    steps = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    torch.manual_seed(0)
    base = torchvision.models.resnet18(num_classes=10)
    x, y = torch.randn(16, 3, 32, 32), torch.randint(0, 10, (16,))

    def trainer():
        # Each condition trains its own copy: the plain one carries no hook.
        model = copy.deepcopy(base)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

        def step():
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        return model, step

    def timed(fn):
        return fn()

    def steps_timed(step):
        t0, p0, w0 = time.thread_time(), time.process_time(), time.perf_counter()
        for _ in range(steps):
            step()
        t, p, w = time.thread_time() - t0, time.process_time() - p0, time.perf_counter() - w0
        return t, p - t, w

    def under(mode, step):
        # The steps are timed with the mode attached; entering and leaving it is
        # not part of a training step (NativeMode's costs are printed apart).
        def run():
            with mode:
                return steps_timed(step)
        return run

    trace = os.path.join(work, "resnet_10pct.peat")
    native_trace = os.path.join(work, "resnet_native_10pct.peat")
    _, plain_step = trainer()
    _, pass_step = trainer()

    def modes(mode_cls, path):
        """A mode class attached idle and recording every 10th call, each on
        its own model copy: (idle mode, its step, recording mode, its step,
        the profiler)."""
        idle_model, idle_step = trainer()
        rec_model, rec_step = trainer()
        session = peat.Session()
        profiler = peat.Profiler(session, path)
        profiler.add_rule("*", every_n=10)
        return (mode_cls(peat.Session(), model=idle_model), idle_step,
                mode_cls(session, model=rec_model, profiler=profiler), rec_step, profiler)

    idle_mode, idle_step, rec_mode, rec_step, prof = modes(pt.PeatMode, trace)
    # NativeMode (one may be entered at a time: each sample enters its own)
    nidle_mode, nidle_step, nrec_mode, nrec_step, nprof = modes(pt.NativeMode, native_trace)
    runs = {"plain": (lambda: steps_timed(plain_step), []),
            "passthrough": (under(PassThrough(), pass_step), []),
            "idle": (under(idle_mode, idle_step), []),
            "rec": (under(rec_mode, rec_step), []),
            "native_idle": (under(nidle_mode, nidle_step), []),
            "native_rec": (under(nrec_mode, nrec_step), [])}
    order = list(runs)
    for fn, _ in runs.values():  # warm-up: caches, allocator
        fn()
    prof.flush()
    nprof.flush()
    t0 = time.thread_time()
    for _ in range(10):
        with nidle_mode:
            pass
    native_enter_exit_ms = (time.thread_time() - t0) / 10 * 1e3
    n = len(order)
    for r in range(rounds):
        rec_mode.set_step(r + 1)
        nrec_mode.set_step(r + 1)
        for name in order[r % n:] + order[:r % n]:  # each condition takes each place in turn
            fn, out = runs[name]
            out.append(timed(fn))
            if name == "rec":
                prof.flush()  # its background work done before the next condition runs
            if name == "native_rec":
                nprof.flush()
    plain, passthrough, idle, rec, nidle, nrec = (runs[k][1] for k in order)
    prof.flush()
    nprof.flush()
    stats, nstats = prof.stats(), nprof.stats()
    native_counts = nrec_mode.stats()
    prof.close()
    nprof.close()
    idle_mode.close()
    rec_mode.close()
    nidle_mode.close()
    nrec_mode.close()
    os.unlink(trace)
    os.unlink(native_trace)
    ratios = lambda a, b, k=0: [u[k] / v[k] - 1 for u, v in zip(a, b)]  # noqa: E731
    ms = lambda a: statistics.median(u[0] for u in a) * 1e3 / steps  # noqa: E731
    print(json.dumps({
        "rounds": rounds, "steps_per_sample": steps,
        "step_plain_ms": ms(plain), "step_passthrough_ms": ms(passthrough),
        "step_idle_ms": ms(idle), "step_record_10pct_ms": ms(rec),
        "idle_overhead": statistics.median(ratios(idle, plain)), "idle_spread": quartiles(ratios(idle, plain)),
        "record_10pct_overhead": statistics.median(ratios(rec, plain)),
        "record_10pct_spread": quartiles(ratios(rec, plain)),
        "passthrough_overhead": statistics.median(ratios(passthrough, plain)),
        "idle_over_passthrough": statistics.median(ratios(idle, passthrough)),
        "record_background_cpu_ms": statistics.median(u[1] for u in rec) * 1e3 / steps,
        "wall_idle_overhead": statistics.median(ratios(idle, plain, 2)),
        "wall_record_10pct_overhead": statistics.median(ratios(rec, plain, 2)),
        "records_written": stats["records_written"],
        "step_native_idle_ms": ms(nidle), "step_native_record_10pct_ms": ms(nrec),
        "native_idle_overhead": statistics.median(ratios(nidle, plain)),
        "native_idle_spread": quartiles(ratios(nidle, plain)),
        "native_record_10pct_overhead": statistics.median(ratios(nrec, plain)),
        "native_record_10pct_spread": quartiles(ratios(nrec, plain)),
        "native_record_background_cpu_ms": statistics.median(u[1] for u in nrec) * 1e3 / steps,
        "wall_native_idle_overhead": statistics.median(ratios(nidle, plain, 2)),
        "wall_native_record_10pct_overhead": statistics.median(ratios(nrec, plain, 2)),
        "native_records_written": nstats["records_written"],
        "native_ops_handled": native_counts["ops_handled"],
        "native_enter_exit_ms": native_enter_exit_ms,
        "samples_ms": {k: [round(u[0] * 1e3 / steps, 2) for u in runs[k][1]] for k in order},
        "native_ops_unnamed_backward": native_counts["ops_unnamed_backward"],
    }))


if __name__ == "__main__":
    main()
