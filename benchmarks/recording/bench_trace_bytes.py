#!/usr/bin/env python3
"""Trace size of a real training run: every op call peat.torch intercepts in
2 training steps of a torchvision ResNet-18 (10 classes, batch 16, 3x32x32
inputs, SGD with momentum) is recorded. Prints one JSON object with the trace
file's bytes over the raw bytes of the recorded tensors (what the records
stand for, references included; later versions of a weight are XOR deltas,
format 1.3), the same with tensor references and deltas off
(content_index_entries=0), and torch.save of the same tensors (each record's
tensors as loaded from the trace, saved one record after another).

Usage: bench_trace_bytes.py WORK_DIR"""
import io
import json
import os
import sys

import torch
import torch.nn.functional as F
import torchvision

import peat
import peat.torch as pt

torch.set_num_threads(1)


def record(path, content_index_entries=None):
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x, y = torch.randn(16, 3, 32, 32), torch.randint(0, 10, (16,))
    with peat.Session() as s, peat.Profiler(s, path, content_index_entries=content_index_entries) as prof:
        mode = pt.PeatMode(s, model=model, profiler=prof)
        with mode:
            for step in range(2):
                mode.set_step(step)
                loss = F.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
        mode.close()
        prof.flush()
        stats = prof.stats()
    stats["file_bytes"] = os.path.getsize(path)  # closed: with the footer index
    return stats


def main():
    work = sys.argv[1] if len(sys.argv) > 1 else "."
    path, plain = os.path.join(work, "resnet.peat"), os.path.join(work, "resnet_norefs.peat")
    stats = record(path)
    stats_plain = record(plain, content_index_entries=0)
    file_bytes, raw = os.path.getsize(path), stats["raw_bytes"]
    records = tensors = references = deltas = 0
    saved = 0
    with peat.TraceReader(path) as r:
        for rec in r.records(kinds=["op", "checkpoint"]):
            records += 1
            slots = ("checkpoint",) if rec.kind == "checkpoint" else ("input", "output")
            ts = []
            for slot in slots:
                for t in range(r.tensor_count(rec.index, slot)):
                    tensors += 1
                    info = r.tensor_info(rec.index, slot, t)
                    references += info.reference is not None
                    deltas += info.codec == "xor_delta_shuffle_zstd"
                    ts.append(r.load(rec.index, slot, t, as_torch=True))
            buf = io.BytesIO()
            torch.save(ts, buf)
            saved += buf.tell()
    os.unlink(path)
    os.unlink(plain)
    print(json.dumps({
        "file_bytes": file_bytes, "raw_bytes": raw, "ratio": file_bytes / raw,
        "file_bytes_no_refs": stats_plain["file_bytes"], "ratio_no_refs": stats_plain["file_bytes"] / raw,
        "torch_save_bytes": saved, "torch_save_ratio": saved / raw,
        "records": records, "tensors": tensors, "references": references, "deltas": deltas,
    }))


if __name__ == "__main__":
    main()
