#!/usr/bin/env python3
"""A small character-level transformer (2 layers, d_model 64) on the license
texts Debian ships in /usr/share/common-licenses, under PEAT's dispatch mode:
a golden run recording a trace (every 10th call of each op), then runs with a
bf16 candidate for the attention's batched GEMMs (its result propagates) and
with runtime FI (one exponent bit flip in the output projection's GEMM) at
several frequencies; each prints the per-op signatures and the training
impact against the golden run (peat.compare_loss).

    PEAT_LIBRARY=build/lib/libpeat.so PYTHONPATH=bindings/python \\
        /usr/bin/python3 examples/python/language_chars.py --out /tmp/chars
"""
import argparse
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


def run(name, data, vocab, steps, setup, out, record=False):
    torch.manual_seed(0)
    model = CharTransformer(vocab)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(1)
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
        mode.close()
        if prof is not None:
            prof.close()
    return losses, sigs, firings


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="chars-out")
    ap.add_argument("--steps", type=int, default=40)
    args = ap.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    data, vocab = corpus()
    print(f"corpus: {len(data)} characters, vocabulary {vocab}")

    golden, _, _ = run("golden", data, vocab, args.steps, lambda m: None, out, record=True)
    print(f"golden: loss {golden[0]:.3f} -> {golden[-1]:.3f}")
    with peat.TraceReader(out / "golden.peat") as r:
        names = sorted({rec.name for rec in r.records(kinds="op")})
        print(f"  trace: {len(r)} records; ops: {len(names)}, e.g. {', '.join(names[:6])}")

    def bf16_attention(mode):
        mode.set_candidate("*aten::bmm", pt.autocast_candidate(torch.bfloat16))
        mode.set_candidate("*aten::baddbmm", pt.autocast_candidate(torch.bfloat16))
        mode.injector.add_policy("*aten::*bmm", "run_candidate")

    runs = [("bf16 attention GEMMs", bf16_attention)]
    for every_n in (50, 10, 2):
        def fi(mode, every_n=every_n):
            mode.injector.add_policy("head/aten::*mm", "inject", every_n=every_n,
                                     spec=peat.InjectSpec("bitflip", field="exponent"))
        runs.append((f"exponent bit flip in head every {every_n}", fi))
    for name, setup in runs:
        losses, sigs, firings = run(name.replace(" ", "_"), data, vocab, args.steps, setup, out)
        impact = peat.compare_loss(golden, losses, band_rel=0.05, window=3, patience=2)
        print(f"{name}: {len(firings)} firings, final loss {losses[-1]:.4f} "
              f"(golden {golden[-1]:.4f}), max divergence {impact['max_divergence']:.3g}, "
              f"first step beyond the band {impact['first_beyond_step']}")
        for op, sig in sorted(sigs.items())[:6]:
            print(f"    {op:44s} pairs {sig.count:8d}  max rel {sig.max_rel_error:.3g}  "
                  f"median mantissa bits {sig.effective_mantissa_bits(0.5):.0f}  "
                  f"bitwise mismatches {sig.bitwise_mismatch_count}")


if __name__ == "__main__":
    main()
