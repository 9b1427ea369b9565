#!/usr/bin/env python3
"""peat.torch on a real model: the cost of PeatMode on a torchvision
ResNet-18 training step (10 classes, batch 16, 3x32x32, SGD with momentum,
1 intra-op thread), attached idle (no policy, no profiler) and recording every
10th call of each op (profiler rule '*' every_n=10), against the same step
without the mode, measured in the same run. A pass-through TorchDispatchMode
(torch's own cost of any Python mode) is measured too: on torch 1.13 / this
CPU a step under any dispatch mode takes less CPU time than without one, so
the mode's own share is printed beside the ratios to the plain step.

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
    v = sorted(v)
    q = statistics.quantiles(v, n=4) if len(v) >= 2 else [v[0]] * 3
    return {"min": v[0], "q1": q[0], "median": q[1], "q3": q[2], "max": v[-1]}


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
        t0, p0, w0 = time.thread_time(), time.process_time(), time.perf_counter()
        fn()
        t, p, w = time.thread_time() - t0, time.process_time() - p0, time.perf_counter() - w0
        return t, p - t, w

    def under(mode, step):
        def run():
            with mode:
                for _ in range(steps):
                    step()
        return run

    trace = os.path.join(work, "resnet_10pct.peat")
    _, plain_step = trainer()
    _, pass_step = trainer()
    idle_model, idle_step = trainer()
    rec_model, rec_step = trainer()
    idle_mode = pt.PeatMode(peat.Session(), model=idle_model)
    rec_session = peat.Session()
    prof = peat.Profiler(rec_session, trace)
    prof.add_rule("*", every_n=10)
    rec_mode = pt.PeatMode(rec_session, model=rec_model, profiler=prof)
    runs = {"plain": (lambda: [plain_step() for _ in range(steps)], []),
            "passthrough": (under(PassThrough(), pass_step), []),
            "idle": (under(idle_mode, idle_step), []),
            "rec": (under(rec_mode, rec_step), [])}
    order = list(runs)
    for fn, _ in runs.values():  # warm-up: caches, allocator
        fn()
    prof.flush()
    for r in range(rounds):
        rec_mode.set_step(r + 1)
        for name in order[r % 4:] + order[:r % 4]:  # each condition takes each place in turn
            fn, out = runs[name]
            out.append(timed(fn))
            if name == "rec":
                prof.flush()  # its background work done before the next condition runs
    plain, passthrough, idle, rec = (runs[k][1] for k in order)
    prof.flush()
    stats = prof.stats()
    prof.close()
    idle_mode.close()
    rec_mode.close()
    os.unlink(trace)
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
    }))


if __name__ == "__main__":
    main()
