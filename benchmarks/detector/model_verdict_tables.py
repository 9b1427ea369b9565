"""Verdict tables on real training: one step of a torchvision ResNet-18 (2
images of 32x32, BatchNorm) and of the example character transformer,
recorded with peat.torch and replayed through each candidate; every record's
output 0 judged alone (the per-call verdict the library counts). Prints one
markdown table per (model, candidate): op, op kind, calls, and the top
verdicts with their counts and named formats.

  PEAT_LIBRARY=build/lib/libpeat.so PYTHONPATH=bindings/python \\
  PEAT_CANDIDATES_LIBRARY=build/examples/candidates/libpeat_candidates.so \\
    /usr/bin/python3 benchmarks/detector/model_verdict_tables.py

The traces and the replays are the ones tests/python/test_model_verdicts.py
asserts on (its fixtures record them); this script only prints what they
give, for the closing notes and docs/error-models.md."""
import collections
import importlib.util
import os
import pathlib
import sys
import tempfile

import torch

import peat
import peat.torch as pt

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _tests_module():
    spec = importlib.util.spec_from_file_location("model_verdicts", ROOT / "tests/python/test_model_verdicts.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _traces(mod, tmp):
    """The two traces, recorded as the tests' fixtures record them."""
    return {"ResNet-18": mod.record_resnet(pathlib.Path(tmp)), "LM": mod.record_lm(pathlib.Path(tmp))}


def _table(path, candidate, glob):
    rows = collections.defaultdict(collections.Counter)
    kinds = {}
    with peat.TraceReader(path) as r, peat.Playback(r, candidate=candidate, op_glob=glob) as pb:
        summary = pb.run()
        if summary.ok == 0:
            return None
        for res in pb.results():
            if res.status != "ok":
                continue
            kind, k = pb._record_context(res.record, 0)
            op = res.op.split("::")[-1]
            kinds[op] = kind
            top = pb.detect_record(res.index, output=0).top
            label = top.model + (f" {top.nearest_format}" if top.model == "REDUCED_PRECISION" else "") + \
                (f" bit {top.bit}" if top.model in ("STUCK_AT", "BITFLIP_SINGLE") else "")
            rows[op][label] += 1
    lines = ["| op | kind | calls | verdicts |", "|---|---|---|---|"]
    for op in sorted(rows):
        c = rows[op]
        lines.append(f"| {op} | {kinds[op]} | {sum(c.values())} | "
                     + ", ".join(f"{m} {n}" for m, n in c.most_common()) + " |")
    return "\n".join(lines)


def main():
    mod = _tests_module()
    so = os.environ.get("PEAT_CANDIDATES_LIBRARY")
    candidates = [
        ("float64 (torch)", pt.playback_candidate(pt.float64_candidate()), "*"),
        ("bf16 autocast (torch)", pt.playback_candidate(pt.autocast_candidate(torch.bfloat16)), "*"),
        ("layer norm eps 1e-3 for 1e-5", pt.playback_candidate(mod.layer_norm_other_eps), "*aten::native_layer_norm"),
        ("one exponent flip per call", mod.one_exponent_flip, "*aten::convolution"),
    ]
    if so:
        for k in ("bf16", "tf32", "fp16acc", "stuck_bit27", "tile_drop"):
            candidates.append((f"peat_cand_{k}_kernel", f"{so}:peat_cand_{k}_kernel", "*aten::mm"))
    else:
        print("PEAT_CANDIDATES_LIBRARY not set: the C kernels are left out", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        for model, path in _traces(mod, tmp).items():
            for name, cand, glob in candidates:
                t = _table(path, cand, glob)
                if t is None:
                    continue
                print(f"\n### {model}: {name} (records {glob})\n")
                print(t)


if __name__ == "__main__":
    main()
