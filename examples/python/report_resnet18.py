"""ResNet-18 (torchvision, CPU) through peat.Report: one recorded training
step played back against bf16 / float64 / stuck-bit candidates (peat.Playback:
per-call verdicts), a noise band of k=3 golden reruns (peat.NoiseBand), runtime
FI at every and every 10th GEMM/convolution call (run_candidate), all handed
to the report through the library; the page leads with the summary.

    /usr/bin/python3 examples/python/report_resnet18.py [OUT] [--steps 24]

About 15 minutes on 2 busy CPU cores (4 golden and 6 FI training runs).
"""
import argparse
import html as h
import re
import pathlib
import time
import warnings

import torch
import torch.nn.functional as F
import torchvision

import peat
import peat.torch as pt

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("out", nargs="?", default="resnet18-report")
ap.add_argument("--steps", type=int, default=24)
ap.add_argument("--batch", type=int, default=16)
args = ap.parse_args()
out = pathlib.Path(args.out)
out.mkdir(parents=True, exist_ok=True)
STEPS, BATCH = args.steps, args.batch
GEMM_CONV = ("*aten::*mm", "*aten::convolution", "*aten::convolution_backward")
STUCK = peat.InjectSpec("stuck_at", bit=27, stuck_value=1, scope="lane", lane_period=32, lane=0)

g = torch.Generator().manual_seed(0)
X = torch.randn(STEPS * BATCH, 3, 32, 32, generator=g)
teacher = torch.randn(3 * 32 * 32, 10, generator=g)
Y = (X.flatten(1) @ teacher).argmax(1)


def stuck_bit_candidate(func, args, kwargs):
    o = func(*args, **kwargs)
    for t in (o if isinstance(o, (tuple, list)) else (o,)):
        if isinstance(t, torch.Tensor) and t.dtype == torch.float32 and t.is_contiguous():
            peat.inject(STUCK, t)
    return o


def train(setup=None, order_seed=0, steps=STEPS):
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10)
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    order = torch.randperm(len(X), generator=torch.Generator().manual_seed(order_seed)) if order_seed else torch.arange(len(X))
    losses = []
    with peat.Session(seed=2) as s:
        mode = pt.PeatMode(s, model=model)
        if setup:
            setup(mode)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pt.PeatWarning)
            with mode:
                for step in range(steps):
                    mode.set_step(step)
                    idx = order[step * BATCH:(step + 1) * BATCH]
                    loss = F.cross_entropy(model(X[idx]), Y[idx])
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    losses.append(loss.item())
        mode.close()
    return losses, {k: v.detach().clone() for k, v in model.state_dict().items()}


def every(candidate, n):
    def setup(mode):
        for glob in GEMM_CONV:
            mode.set_candidate(glob, candidate)
            mode.injector.add_policy(glob, "run_candidate", every_n=n)
    return setup


t0 = time.time()
# 1. one recorded training step (every op of the mode)
trace = out / "resnet18.peat"
torch.manual_seed(0)
model = torchvision.models.resnet18(num_classes=10)
opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
with peat.Session(seed=1, run_name="resnet18") as s, peat.Profiler(s, trace, framework=f"pytorch {torch.__version__}") as prof:
    mode = pt.PeatMode(s, model=model, profiler=prof)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pt.PeatWarning)
        with mode:
            mode.set_step(0)
            loss = F.cross_entropy(model(X[:8]), Y[:8])
            opt.zero_grad()
            loss.backward()
            opt.step()
    mode.close()
print(f"recorded {trace} ({trace.stat().st_size / 1e6:.1f} MB) in {time.time() - t0:.1f} s")

# 2. noise band: golden + k=3 reruns with other batch orders
golden, golden_params = train()
reruns = peat.golden_reruns(lambda seed: train(order_seed=seed), k=3)
band = peat.NoiseBand.from_runs([golden] + [r[0] for r in reruns], params=[golden_params] + [r[1] for r in reruns], window=5)
print(band.rule, f"({time.time() - t0:.0f} s)")

runs = [("bf16", pt.autocast_candidate(torch.bfloat16)), ("float64", pt.float64_candidate()),
        ("stuck_bit27", stuck_bit_candidate)]
with peat.Report(title="ResNet-18 (torchvision, CPU)") as rep, peat.TraceReader(trace) as reader:
    rep.add_input(trace)
    rep.add_noise_band(band, "train")
    for name, cand in runs:
        with peat.Playback(reader, candidate=pt.playback_candidate(cand), op_glob="*aten::convolution") as pb:
            pb.run()
            rep.add_playback(pb, name)
        for n in (1, 10):
            fl, params = train(every(cand, n))
            impact = band.judge(fl, params=params)
            rep.add_fi_run(name, fl, every=n, impact=impact)
            print(f"{name} 1/{n}: {impact} ({time.time() - t0:.0f} s)")
    rep.write_html(out / "report.html")
    html = rep.html()
print(f"wrote {out / 'report.html'} in {time.time() - t0:.0f} s")
# The summary rows, as the page shows them.
table = html[html.index('id="summary-table"'):]
for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table[:table.index("</table>")])[1:]:
    print(" | ".join(h.unescape(c) for c in re.findall(r"<td>(.*?)</td>", row)))
