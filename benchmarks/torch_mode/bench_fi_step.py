#!/usr/bin/env python3
"""Cost of runtime FI under peat.torch.PeatMode: a training step of the
digits CNN with a bf16 candidate on every GEMM and convolution call, as
run_candidate (the candidate alone) and as run_both (golden, candidate and the
analyzer), against the same step with the mode idle, measured in the same
run. CPU time (process time), median of the steps after two warm-up steps,
1 thread. Prints one JSON object."""
import json
import pathlib
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples/python"))

import peat  # noqa: E402
import peat.torch as pt  # noqa: E402
from vision_digits import DigitsCNN  # noqa: E402

torch.set_num_threads(1)


def step_ms(action, steps):
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(64, 1, 8, 8, generator=g), torch.randint(0, 10, (64,), generator=g)
    torch.manual_seed(0)
    model = DigitsCNN()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    with peat.Session(seed=1) as s:
        mode = pt.PeatMode(s, model=model)
        if action:
            for glob in ("*aten::convolution", "*aten::addmm", "*aten::mm"):
                mode.set_candidate(glob, pt.autocast_candidate(torch.bfloat16))
            mode.injector.add_policy("*aten::*", action)
        times = []
        with mode:
            for _ in range(steps):
                t0 = time.process_time()
                loss = F.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                times.append(time.process_time() - t0)
        mode.close()
    return statistics.median(times[2:]) * 1e3


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    idle = step_ms(None, steps)
    cand = step_ms("run_candidate", steps)
    both = step_ms("run_both", steps)
    print(json.dumps({"step_idle_ms": idle, "step_run_candidate_ms": cand, "step_run_both_ms": both}))


if __name__ == "__main__":
    main()
