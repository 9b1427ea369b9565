#!/usr/bin/env python3
"""Cost of peat.torch.PeatMode: per intercepted op (a loop of small mm calls)
and per training step of a small CNN, with the mode idle (no policy, no
profiler) and recording 1 % of the op calls, against the same work without
the mode, measured in the same run. Then NativeMode per op: attached idle,
and what its kernels cost once registered with no mode attached (they stay
registered for the rest of the process), against the same loop just before
they were registered. CPU time (process time), median of repeats. Prints one
JSON object."""
import json
import statistics
import sys
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from torch.utils._python_dispatch import TorchDispatchMode

import peat
import peat.torch as pt

torch.set_num_threads(1)


def cpu_time(fn, repeats=5):
    out = []
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        out.append(time.process_time() - t0)
    return statistics.median(out)


def main():
    n_ops = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    a, b = torch.randn(8, 8), torch.randn(8, 8)

    def mm_loop():
        for _ in range(n_ops):
            torch.mm(a, b)

    plain = cpu_time(mm_loop)

    class PassThrough(TorchDispatchMode):  # torch's own cost of a Python dispatch mode
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    with PassThrough():
        passthrough = cpu_time(mm_loop)
    with peat.Session() as s:
        mode = pt.PeatMode(s)
        with mode:
            mm_loop()  # warm the op cache
            idle = cpu_time(mm_loop)
        mode.close()

    model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Flatten(),
                          nn.Linear(8 * 8 * 8, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(32, 1, 8, 8), torch.randint(0, 10, (32,))
    steps = 50

    def train():
        for _ in range(steps):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()

    step_plain = cpu_time(train, 3)
    with peat.Session() as s:
        mode = pt.PeatMode(s, model=model)
        with mode:
            step_idle = cpu_time(train, 3)
        mode.close()
    with tempfile.TemporaryDirectory() as tmp, peat.Session() as s:
        with peat.Profiler(s, f"{tmp}/bench.peat") as prof:
            prof.add_rule("*", every_n=100)
            mode = pt.PeatMode(s, model=model, profiler=prof)
            with mode:
                step_rec = cpu_time(train, 3)
            mode.close()
    # NativeMode last: its first entry registers kernels for the process.
    native_plain = cpu_time(mm_loop)
    with peat.Session() as s:
        with pt.NativeMode(s, ops=["mm"]):
            mm_loop()
            native_idle = cpu_time(mm_loop)
    native_detached = cpu_time(mm_loop)
    print(json.dumps({
        "op_native_plain_us": native_plain / n_ops * 1e6, "op_native_idle_us": native_idle / n_ops * 1e6,
        "op_native_detached_us": native_detached / n_ops * 1e6,
        "n_ops": n_ops,
        "op_plain_us": plain / n_ops * 1e6, "op_idle_us": idle / n_ops * 1e6,
        "op_passthrough_us": passthrough / n_ops * 1e6,
        "overhead_us_per_op": (idle - plain) / n_ops * 1e6,
        "step_plain_ms": step_plain / steps * 1e3, "step_idle_ms": step_idle / steps * 1e3,
        "step_record1pct_ms": step_rec / steps * 1e3,
    }))


if __name__ == "__main__":
    main()
