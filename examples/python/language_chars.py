#!/usr/bin/env python3
"""A small character-level transformer (2 layers, d_model 64) on the license
texts Debian ships in /usr/share/common-licenses, under PEAT's dispatch mode:
a golden run recording a trace (every 10th call of each op), played back
through the library's Playback against candidates written in torch (float64,
bf16, an injected exponent bit flip) and, when libpeat_candidates.so is
given, C kernels loaded from it, with the Detector's verdicts; k golden
reruns with other batch orders (peat.golden_reruns)
give the run-to-run noise band (peat.NoiseBand, its rule printed); then runs
with candidates swapped in at every GEMM call (run_candidate: float64, the
same op, bf16, a stuck exponent bit), a bf16 candidate for the attention's
batched GEMMs every 2nd call, and runtime FI (one exponent bit flip in the
output projection's GEMM) at several frequencies; each prints its firings,
the Detector's verdicts on them, the per-op signatures and its training
impact: INSIDE_NOISE or OUTSIDE_NOISE, the effect in band units, the first
step beyond the band and the parameter drift over the golden-vs-golden
drift.

The default run takes well under a minute on two cores; --steps makes it
longer.

    PEAT_LIBRARY=build/lib/libpeat.so PYTHONPATH=bindings/python \\
        /usr/bin/python3 examples/python/language_chars.py --out /tmp/chars
"""
import argparse
import os
import pathlib

import torch
import torch.nn as nn
import torch.nn.functional as F

import peat
import peat.torch as pt


def corpus(limit=200_000):
    text = ""
    for path in sorted(pathlib.Path("/usr/share/common-licenses").glob("*")):
        if path.is_file():
            text += path.read_text(errors="replace")
        if len(text) >= limit:
            break
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    return torch.tensor([index[c] for c in text]), len(chars)


class CharTransformer(nn.Module):
    def __init__(self, vocab, d_model=64, layers=2, heads=4, context=64):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.pos = nn.Parameter(torch.zeros(context, d_model))
        layer = nn.TransformerEncoderLayer(d_model, heads, 4 * d_model, dropout=0.0,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(d_model, vocab)
        self.register_buffer("mask", torch.triu(torch.full((context, context), float("-inf")), 1))

    def forward(self, idx):
        t = idx.shape[1]
        x = self.embed(idx) + self.pos[:t]
        return self.head(self.encoder(x, mask=self.mask[:t, :t]))


def run(name, data, vocab, steps, setup, out, record=False, seed=0):
    """One training run; seed != 0 draws another batch order (a golden rerun
    for the noise band; the initialisation stays that of the golden run)."""
    torch.manual_seed(0)
    model = CharTransformer(vocab)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(1 + seed)
    losses = []
    with peat.Session(seed=5, run_name=name) as s:
        prof = None
        if record:
            prof = peat.Profiler(s, out / f"{name}.peat", framework=f"pytorch {torch.__version__}")
            prof.add_rule("*", every_n=10)
        mode = pt.PeatMode(s, model=model, profiler=prof)
        setup(mode)
        with mode:
            for step in range(steps):
                mode.set_step(step)
                i = torch.randint(0, len(data) - 65, (16,), generator=g)
                xb = torch.stack([data[j:j + 64] for j in i])
                yb = torch.stack([data[j + 1:j + 65] for j in i])
                loss = F.cross_entropy(model(xb).reshape(-1, vocab), yb.reshape(-1))
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses.append(loss.item())
        sigs, firings = mode.signatures(), list(mode.firings)
        logged = sum(1 for _, msg in s.logs() if msg.startswith("peat.torch: "))
        mode.close()
        assert logged == len(firings)  # every firing went to the session's log
        if prof is not None:
            prof.close()
    params = {k: v.detach().clone() for k, v in model.state_dict().items()}
    return losses, sigs, firings, params


def flipped_candidate(inputs, outputs, call):
    """The recorded op in torch, then one exponent bit of one output element
    flipped."""
    pt.playback_candidate()(inputs, outputs, call)
    peat.inject(peat.InjectSpec("bitflip", field="exponent", count=1), outputs[0],
                seed=call.step, call=call.call_index)


# Bit 27 (exponent bit 4) stuck at 1 on every 32nd output element, as
# peat_cand_stuck_bit27 of libpeat_candidates.so does (the STUCK_AT model).
STUCK_BIT27 = peat.InjectSpec("stuck_at", bit=27, stuck_value=1, scope="lane", lane_period=32,
                              lane=0)


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
    """Setup of a run with `candidate` in place of every GEMM (mm, addmm, bmm,
    baddbmm)."""
    def setup(mode):
        mode.set_candidate("*aten::*mm", candidate)
        mode.injector.add_policy("*aten::*mm", "run_candidate", every_n=1)
    return setup


def print_playback_verdicts(reader, candidates_library):
    """Plays the recorded GEMMs back (peat.Playback) and prints the
    Detector's verdicts: merged per op for the torch candidates, record by
    record for the bit flips and the C kernels."""
    rows = []
    for label, cand in (("float64", pt.float64_candidate()),
                        ("bf16 autocast", pt.autocast_candidate(torch.bfloat16))):
        for glob in ("encoder.layers.0.*aten::*mm", "head/aten::*mm"):
            with peat.Playback(reader, candidate=pt.playback_candidate(cand),
                               op_glob=glob) as pb:
                pb.run()
                rows += [(label, op, det) for op, det in pb.detect().items()]
    print(peat.verdict_table(rows, title="playback verdicts (merged over the recorded calls; "
                                         "the head and the first layer):"))
    runs = [("exponent bit flip", flipped_candidate, "*aten::addmm")]
    if candidates_library:
        runs += [(symbol, f"{candidates_library}:{symbol}", "*aten::mm")
                 for symbol in ("peat_cand_bf16_kernel", "peat_cand_pairwise_kernel")]
    print("playback verdicts (record by record, all ops of the glob):")
    for label, cand, glob in runs:
        with peat.Playback(reader, candidate=cand, op_glob=glob) as pb:
            pb.run()
            total = {}
            for counts in pb.record_verdicts().values():
                for m, n in counts.items():
                    total[m] = total.get(m, 0) + n
            print(f"  {label:26s} {glob:14s} " +
                  ", ".join(f"{m} x{n}" for m, n in sorted(total.items())))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="chars-out")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--reruns", type=int, default=3,
                    help="k: golden reruns (other batch orders) for the noise band")
    ap.add_argument("--window", type=int, default=3,
                    help="moving-average window (steps) of the noise band")
    ap.add_argument("--candidates", default=os.environ.get("PEAT_CANDIDATES_LIBRARY", ""),
                    help="libpeat_candidates.so (examples/candidates) for C candidates")
    args = ap.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    data, vocab = corpus()
    print(f"corpus: {len(data)} characters, vocabulary {vocab}")

    golden, _, _, golden_params = run("golden", data, vocab, args.steps, lambda m: None, out,
                                      record=True)
    print(f"golden: loss {golden[0]:.3f} -> {golden[-1]:.3f}")
    with peat.TraceReader(out / "golden.peat") as r:
        names = sorted({rec.name for rec in r.records(kinds="op")})
        print(f"  trace: {len(r)} records; ops: {len(names)}, e.g. {', '.join(names[:6])}")
        print_playback_verdicts(r, args.candidates)
    # the noise band: k golden reruns with other batch orders
    reruns = peat.golden_reruns(
        lambda seed: run(f"golden_seed_{seed}", data, vocab, args.steps, lambda m: None, out,
                         seed=seed), k=args.reruns)
    band = peat.NoiseBand.from_runs([golden] + [r[0] for r in reruns],
                                    params=[golden_params] + [r[3] for r in reruns],
                                    window=args.window)
    print(f"{band.rule}; golden-vs-golden parameter drift "
          f"{band.info()['max_param_drift']:.3g} (relative L2)")

    def bf16_attention(mode):
        mode.set_candidate("*aten::bmm", pt.autocast_candidate(torch.bfloat16))
        mode.set_candidate("*aten::baddbmm", pt.autocast_candidate(torch.bfloat16))
        mode.injector.add_policy("*aten::*bmm", "run_candidate", every_n=2)

    runs = [("float64 at every call", every_call(pt.float64_candidate()), None),
            ("same op at every call", every_call(same_op_candidate), None),
            ("bf16 at every call", every_call(pt.autocast_candidate(torch.bfloat16)), None),
            ("stuck bit 27 at every call", every_call(stuck_bit_candidate), None),
            ("bf16 attention GEMMs every 2nd call", bf16_attention, None)]
    for every_n in (50, 10, 2):
        def fi(mode, every_n=every_n):
            mode.injector.add_policy("head/aten::*mm", "inject", every_n=every_n,
                                     phases=["forward"],
                                     spec=peat.InjectSpec("bitflip", field="exponent",
                                                          count=1))
        # the head's GEMM runs once per step (forward): calls 0, n, 2n, ... fire
        runs.append((f"exponent bit flip in head every {every_n}", fi,
                     (args.steps + every_n - 1) // every_n))
    for name, setup, expected in runs:
        losses, sigs, firings, params = run(name.replace(" ", "_"), data, vocab, args.steps,
                                            setup, out)
        impact = band.judge(losses, params=params)
        failed = sum(1 for f in firings if f["status"] != "ok")
        verdicts = {}
        for f in firings:
            if f["signature"] is not None:
                model = peat.detect(f["signature"], op_kind=peat.op_kind_of(f["op"])).top.model
                verdicts[model] = verdicts.get(model, 0) + 1
        count = f"{len(firings)} firings" + (f" (expected {expected})" if expected is not None
                                             else "") + f", {failed} failed"
        print(f"{name}: {count}, verdicts "
              f"{', '.join(f'{m} x{n}' for m, n in sorted(verdicts.items())) or '-'}; "
              f"final loss {losses[-1]:.4f} (golden {golden[-1]:.4f}); impact: {impact}")
        for op, sig in sorted(sigs.items())[:6]:
            print(f"    {op:44s} pairs {sig.count:8d}  max rel {sig.max_rel_error:.3g}  "
                  f"median mantissa bits {sig.effective_mantissa_bits(0.5):.0f}  "
                  f"bitwise mismatches {sig.bitwise_mismatch_count}")


if __name__ == "__main__":
    main()
