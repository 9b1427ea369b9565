#!/usr/bin/env python3
"""A small CNN on scikit-learn's digits (shipped by Debian's python3-sklearn),
run under PEAT's dispatch mode:

 1. pretraining with a golden trace (every 5th call of each op recorded, and
    the loss), then a checkpoint; the recorded GEMMs and convolutions are
    played back through the library's Playback against candidates written in
    torch (float64, bf16, an injected exponent bit flip) and, when
    libpeat_candidates.so is given, a C kernel loaded from it; the Detector
    names the error model of each (verdict table);
 2. finetuning from that checkpoint several times: golden, k golden reruns
    with other batch orders (peat.golden_reruns) that give the run-to-run
    noise band (peat.NoiseBand, its rule printed), candidates swapped in at
    every GEMM / convolution call (run_candidate: float64, the same op, bf16,
    a stuck exponent bit), a bf16 candidate for the convolutions compared in
    the shadow of the golden ones (run_both), and runtime FI (one exponent
    bit flip in the classifier's output) at several frequencies; each prints
    its firings (counted by the session's log), the Detector's verdict on
    them, the per-op signatures and its training impact: INSIDE_NOISE or
    OUTSIDE_NOISE, the effect in band units, the first step beyond the band
    and the parameter drift over the golden-vs-golden drift.

The default run takes well under a minute on two cores; --pretrain-steps and
--finetune-steps make it longer.

    PEAT_LIBRARY=build/lib/libpeat.so PYTHONPATH=bindings/python \
        /usr/bin/python3 examples/python/vision_digits.py --out /tmp/digits
"""
import argparse
import copy
import os
import pathlib

import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.datasets import load_digits

import peat
import peat.torch as pt


class DigitsCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 4 * 4, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))


def batches(x, y, steps, batch, order_seed=0):
    """The training batches; order_seed != 0 shuffles the examples first
    (another batch order, for the golden reruns of the noise band)."""
    if order_seed:
        perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(order_seed))
        x, y = x[perm], y[perm]
    for step in range(steps):
        i = (step * batch) % (len(x) - batch)
        yield step, x[i:i + batch], y[i:i + batch]


def train(model, x, y, steps, batch, mode=None, prof=None, order_seed=0):
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for step, xb, yb in batches(x, y, steps, batch, order_seed):
        if mode is not None:
            mode.set_step(step)
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if prof is not None:
            prof.record_scalar("loss", losses[-1])
    return losses


def accuracy(model, x, y):
    with torch.no_grad():
        return (model(x).argmax(1) == y).float().mean().item()


def flipped_candidate(inputs, outputs, call):
    """The recorded op in torch, then one exponent bit of one output element
    flipped (the Philox stream keyed by step and call)."""
    pt.playback_candidate()(inputs, outputs, call)
    peat.inject(peat.InjectSpec("bitflip", field="exponent", count=1), outputs[0],
                seed=call.step, call=call.call_index)


# Bit 27 (exponent bit 4) stuck at 1 on every 32nd output element, as
# peat_cand_stuck_bit27 of libpeat_candidates.so does (the STUCK_AT model).
STUCK_BIT27 = peat.InjectSpec("stuck_at", bit=27, stuck_value=1, scope="lane", lane_period=32,
                              lane=0)
GEMM_CONV = ("*aten::*mm", "*aten::convolution", "*aten::convolution_backward")


def same_op_candidate(func, args, kwargs):
    """The golden op itself: a candidate that must come out INSIDE_NOISE."""
    return func(*args, **kwargs)


def stuck_bit_candidate(func, args, kwargs):
    """The op, then its float outputs with bit 27 stuck at 1 on lane 0 of 32."""
    out = func(*args, **kwargs)
    for t in (out if isinstance(out, (tuple, list)) else (out,)):
        if isinstance(t, torch.Tensor) and t.dtype == torch.float32 and t.is_contiguous():
            peat.inject(STUCK_BIT27, t)
    return out


def every_call(candidate):
    """Setup of a run with `candidate` in place of every GEMM / convolution."""
    def setup(mode):
        for glob in GEMM_CONV:
            mode.set_candidate(glob, candidate)
            mode.injector.add_policy(glob, "run_candidate", every_n=1)
    return setup


def print_playback_verdicts(reader, candidates_library):
    """Plays the recorded GEMMs and forward convolutions back against each
    candidate (peat.Playback) and prints the Detector's verdicts."""
    rows = []
    gemm_conv = "*aten::[ac]*[mn]"  # addmm, convolution (forward)
    for label, cand, glob in (
            ("float64", pt.playback_candidate(pt.float64_candidate()), gemm_conv),
            ("bf16 autocast", pt.playback_candidate(pt.autocast_candidate(torch.bfloat16)),
             gemm_conv),
            ("oneDNN off", pt.playback_candidate(pt.mkldnn_candidate(False)),
             "*aten::convolution")):
        with peat.Playback(reader, candidate=cand, op_glob=glob) as pb:
            pb.run()
            rows += [(label, op, det) for op, det in pb.detect().items()]
    print(peat.verdict_table(rows, title="playback verdicts (merged over the recorded calls):"))
    # judged record by record: the backward mm of fc (grad input K=10, grad
    # weight K=64, of different scales) in C kernels, and one flipped
    # exponent bit per forward convolution
    runs = [("exponent bit flip", flipped_candidate, "*aten::convolution")]
    if candidates_library:
        runs += [(symbol, f"{candidates_library}:{symbol}", "*aten::mm")
                 for symbol in ("peat_cand_bf16_kernel", "peat_cand_blocked_kernel")]
    print("playback verdicts (record by record):")
    for label, cand, glob in runs:
        with peat.Playback(reader, candidate=cand, op_glob=glob) as pb:
            pb.run()
            for op, counts in pb.record_verdicts().items():
                print(f"  {label:24s} {op:44s} " +
                      ", ".join(f"{m} x{n}" for m, n in sorted(counts.items())))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="digits-out", help="folder for the trace and logs")
    ap.add_argument("--pretrain-steps", type=int, default=60)
    ap.add_argument("--finetune-steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--reruns", type=int, default=3,
                    help="k: golden reruns (other batch orders) for the noise band")
    ap.add_argument("--window", type=int, default=3,
                    help="moving-average window (steps) of the noise band")
    ap.add_argument("--candidates", default=os.environ.get("PEAT_CANDIDATES_LIBRARY", ""),
                    help="libpeat_candidates.so (examples/candidates) for C candidates")
    args = ap.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)

    d = load_digits()
    x = torch.tensor(d.images / 16.0, dtype=torch.float32).unsqueeze(1)
    y = torch.tensor(d.target)
    x_train, y_train, x_test, y_test = x[:1500], y[:1500], x[1500:], y[1500:]

    # 1. pretraining, recorded
    model = DigitsCNN()
    with peat.Session(seed=1, run_name="digits-pretrain") as s, \
            peat.Profiler(s, out / "pretrain.peat", framework=f"pytorch {torch.__version__}",
                          tags={"model": "DigitsCNN", "data": "sklearn digits"}) as prof:
        prof.add_rule("*", every_n=5)
        mode = pt.PeatMode(s, model=model, profiler=prof)
        with mode:
            losses = train(model, x_train, y_train, args.pretrain_steps, args.batch, mode, prof)
        prof.record_checkpoint("pretrained", {k: v.detach() for k, v in model.state_dict().items()})
        mode.close()
    print(f"pretrain: loss {losses[0]:.3f} -> {losses[-1]:.3f}, test accuracy "
          f"{accuracy(model, x_test, y_test):.3f}")
    with peat.TraceReader(out / "pretrain.peat") as r:
        ops = sorted({rec.name for rec in r.records(kinds="op")})
        size = (out / "pretrain.peat").stat().st_size / 1e6
        print(f"  trace: {len(r)} records, {size:.2f} MB, ops: {', '.join(ops)}")
        print_playback_verdicts(r, args.candidates)
    checkpoint = copy.deepcopy(model.state_dict())

    # 2. finetuning from the checkpoint, golden and with candidates / FI
    def finetune(name, setup, order_seed=0):
        torch.manual_seed(1)
        m = DigitsCNN()
        m.load_state_dict(checkpoint)
        with peat.Session(seed=2, run_name=name) as s:
            mode = pt.PeatMode(s, model=m)
            setup(mode)
            with mode:
                fl = train(m, x_train, y_train, args.finetune_steps, args.batch, mode,
                           order_seed=order_seed)
            sigs, firings = mode.signatures(), list(mode.firings)
            logged = sum(1 for _, msg in s.logs() if msg.startswith("peat.torch: "))
            mode.close()
        assert logged == len(firings)  # every firing went to the session's log
        params = {k: v.detach().clone() for k, v in m.state_dict().items()}
        return fl, accuracy(m, x_test, y_test), sigs, firings, params

    golden, golden_acc, _, _, golden_params = finetune("golden", lambda m: None)
    print(f"finetune golden: final loss {golden[-1]:.4f}, test accuracy {golden_acc:.3f}")
    # the noise band: k golden reruns with other batch orders
    reruns = peat.golden_reruns(
        lambda seed: finetune(f"golden order {seed}", lambda m: None, order_seed=seed),
        k=args.reruns)
    band = peat.NoiseBand.from_runs([golden] + [r[0] for r in reruns],
                                    params=[golden_params] + [r[4] for r in reruns],
                                    window=args.window)
    print(f"{band.rule}; golden-vs-golden parameter drift "
          f"{band.info()['max_param_drift']:.3g} (relative L2)")

    def bf16_convs(mode):
        mode.set_candidate("*aten::convolution", pt.autocast_candidate(torch.bfloat16))
        mode.injector.add_policy("*aten::convolution", "run_both", every_n=3)

    runs = [("float64 at every call", every_call(pt.float64_candidate()), None),
            ("same op at every call", every_call(same_op_candidate), None),
            ("bf16 at every call", every_call(pt.autocast_candidate(torch.bfloat16)), None),
            ("stuck bit 27 at every call", every_call(stuck_bit_candidate), None),
            ("bf16 conv (run_both)", bf16_convs, None)]
    for every_n in (20, 5, 1):
        def fi(mode, every_n=every_n):
            mode.injector.add_policy(
                "fc/aten::addmm", "inject", every_n=every_n,
                spec=peat.InjectSpec("bitflip", field="exponent", count=1))
        # fc's addmm runs once per step (forward): calls 0, n, 2n, ... fire
        expected = (args.finetune_steps + every_n - 1) // every_n
        runs.append((f"exponent bit flip in fc every {every_n}", fi, expected))
    for name, setup, expected in runs:
        fl, acc, sigs, firings, params = finetune(name, setup)
        impact = band.judge(fl, params=params)
        failed = sum(1 for f in firings if f["status"] != "ok")
        verdicts = {}
        for f in firings:
            if f["signature"] is not None:
                kind = peat.op_kind_of(f["op"])
                if f["signature"].reduction_length <= 0:  # e.g. convolution_backward
                    kind = "unknown"
                model = peat.detect(f["signature"], op_kind=kind).top.model
                verdicts[model] = verdicts.get(model, 0) + 1
        count = f"{len(firings)} firings" + (f" (expected {expected})" if expected is not None
                                             else "") + f", {failed} failed"
        print(f"{name}: {count}, verdicts "
              f"{', '.join(f'{m} x{n}' for m, n in sorted(verdicts.items())) or '-'}; "
              f"final loss {fl[-1]:.4f} (golden {golden[-1]:.4f}), test accuracy {acc:.3f}; "
              f"impact: {impact}")
        for op, sig in sigs.items():
            print(f"    {op:28s} pairs {sig.count:8d}  max rel {sig.max_rel_error:.3g}  "
                  f"mantissa bits (median) {sig.effective_mantissa_bits(0.5):.0f}  "
                  f"bitwise mismatches {sig.bitwise_mismatch_count}")


if __name__ == "__main__":
    main()
