#!/usr/bin/env python3
"""peat.torch on PyTorch with CUDA tensors: step 5 of the GPU bundle's run.sh
(docs/gpu-backends.md, "The GPU bundle").

Checks, each one JSON line (check, status ok/failed/skipped/info, reason,
figures; only "failed" fails the step):
  environment   torch, CUDA and the device; the CUDA backend is loaded
  record        a few training steps of a small CNN (the digits CNN of
                examples/python/vision_digits.py, on synthetic 8x8 images) on
                the GPU under peat.torch.PeatMode, convolutions and GEMMs
                recorded with the profiler (a session on the "cuda" backend:
                device tensors staged by the plugin)
  replay_exact  each recorded forward convolution / addmm run again on the
                GPU from the recorded inputs: the Detector says EXACT
  bf16          the same with the inputs in bf16: REDUCED_PRECISION (bf16)
  float64       the same computed in float64 and rounded: ROUNDING
  cuda_vs_cpu   the CUDA backend's signature of one pair equals the CPU
                backend's on host copies (counts, extrema, histograms)
  mode_run_both a bf16 candidate for the convolutions run in the shadow of
                the golden ones inside the mode (run_both): REDUCED_PRECISION
  mode_inject   one exponent bit flipped in fc's output by the injector on
                the device: BITFLIP_SINGLE
  dispatch_ops  (info) the aten ops a dispatch mode sees on this torch in one
                step of a model with batch norm, layer norm and attention
  out_overload  (info) what run_candidate does to an mm(out=) call
The signatures are computed by the CUDA backend (peat.analyze hands CUDA
tensors to it). TF32 is switched off and cuDNN made deterministic, so that the
golden run is plain float32 and a replay can be bit-identical.

usage: torch_cuda_check.py --out DIR [--jsonl FILE] [--steps N]
Exit status: 0 every check ok; 1 a check failed; 77 no torch with CUDA here.
Needs no numpy (tensors are read back from the trace into torch tensors).
"""
import argparse
import ctypes
import json
import os
import pathlib
import sys
import time
import traceback

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS, before CUDA starts

RESULTS = []
JSONL = None


def emit(check, status, reason="", **figures):
    line = {"check": check, "status": status, "reason": reason, **figures}
    RESULTS.append(line)
    print(json.dumps(line, default=str), flush=True)
    if JSONL is not None:
        with open(JSONL, "a") as f:
            f.write(json.dumps(line, default=str) + "\n")


def failure(exc):
    """The exception's last line and where it came from."""
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" at {pathlib.Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else ""
    return f"{type(exc).__name__}: {exc}{where}"


def main():
    global JSONL
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="torch-cuda-check", help="folder for the trace")
    ap.add_argument("--jsonl", default=None, help="append the JSON lines to this file too")
    ap.add_argument("--steps", type=int, default=4, help="training steps recorded")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"),
                    help="cpu: the same checks on the CPU backend (to try this script without a GPU)")
    args = ap.parse_args()
    JSONL = args.jsonl
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    try:
        import torch
    except ImportError as exc:
        emit("environment", "skipped", f"no torch: {exc}")
        print(f"SKIP: no torch here ({exc})")
        return 77
    if args.device == "cuda" and not torch.cuda.is_available():
        emit("environment", "skipped", f"torch {torch.__version__} sees no CUDA device "
             f"(built for CUDA {torch.version.cuda})", torch=torch.__version__)
        print(f"SKIP: torch {torch.__version__} sees no CUDA device")
        return 77
    import torch.nn as nn
    import torch.nn.functional as F

    import peat
    import peat.torch as pt
    from peat import _capi
    from peat.trace import SLOTS

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    dev = torch.device("cuda", 0) if args.device == "cuda" else torch.device("cpu")
    backend = args.device  # the session's backend: device tensors are staged by it
    try:
        plugin = peat.Backend.get(backend)
        n = plugin.device_count
        emit("environment", "ok", torch=torch.__version__, torch_cuda=torch.version.cuda,
             device=torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu", peat=peat.version(),
             backend=backend, plugin=plugin.path, plugin_devices=n,
             plugin_device=plugin.device(0).name if n else None)
        if n == 0:
            raise RuntimeError(f"the {backend} backend sees no device")
    except Exception as exc:  # nothing below can work
        emit("environment", "failed", failure(exc), torch=torch.__version__)
        return 1

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

    gen = torch.Generator().manual_seed(0)
    x_all = torch.rand(256, 1, 8, 8, generator=gen).to(dev)
    y_all = torch.randint(0, 10, (256,), generator=gen).to(dev)

    def train(model, mode, steps, prof=None):
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        losses = []
        for step in range(steps):
            mode.set_step(step)
            i = (step * 64) % 192
            loss = F.cross_entropy(model(x_all[i:i + 64]), y_all[i:i + 64])
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
            if prof is not None:
                prof.record_scalar("loss", losses[-1])
        return losses

    # --- record: a few training steps on the GPU, recorded ----------------------
    trace = out / "train.peat"
    recorded_ops = []

    def record(rules):
        torch.manual_seed(0)
        model = DigitsCNN().to(dev)
        t0 = time.time()
        with peat.Session(seed=1, backend=backend, run_name="torch-cuda-check") as s, \
                peat.Profiler(s, trace, framework=f"pytorch {torch.__version__}") as prof:
            for glob in rules:
                prof.add_rule(glob, every_n=1)
            prof.add_rule("*", record=False)
            mode = pt.PeatMode(s, model=model, profiler=prof)
            try:
                with mode:
                    losses = train(model, mode, args.steps, prof)
            finally:
                mode.close()
        return losses, time.time() - t0

    rules = ["*aten::convolution", "*aten::addmm", "*aten::convolution_backward"]  # backward: the phase tags
    try:
        losses, secs = record(rules)
        emit("record", "ok", steps=args.steps, losses=[round(v, 4) for v in losses], seconds=round(secs, 2),
             rules=rules)
    except Exception as exc:
        emit("record", "failed", failure(exc), rules=rules)
        # What can be recorded still serves the replays: the convolutions alone.
        try:
            losses, secs = record(["*aten::convolution"])
            emit("record_conv_only", "ok", "fallback after the failure above", steps=args.steps,
                 seconds=round(secs, 2))
        except Exception as exc2:
            emit("record_conv_only", "failed", failure(exc2))
    try:
        with peat.TraceReader(trace) as r:
            recs = [rec for rec in r.records(kinds="op") if rec.phase == "forward"
                    and rec.name.rsplit("aten::", 1)[-1] in ("convolution", "addmm")]
            recorded_ops = sorted({rec.name for rec in recs})
            phases = {}
            for rec in r.records(kinds="op"):
                phases[f"{rec.phase} {rec.name}"] = phases.get(f"{rec.phase} {rec.name}", 0) + 1
        emit("trace", "ok" if recs else "failed", "" if recs else "no forward convolution/addmm recorded",
             records=len(recs), ops=recorded_ops, bytes=trace.stat().st_size, by_phase=phases)
    except Exception as exc:
        emit("trace", "failed", failure(exc))
        recs = []

    # --- replays on the GPU from the recorded inputs ----------------------------
    torch_dtypes = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32,
                    "f64": torch.float64, "i8": torch.int8, "i16": torch.int16, "i32": torch.int32,
                    "i64": torch.int64, "u8": torch.uint8, "bool": torch.bool}

    with_layout = getattr(peat.trace, "_with_layout", None)  # traces of format 1.1 keep strides

    def load(reader, index, slot, i):
        """A recorded tensor into a new torch tensor on the GPU, with its
        recorded strides where the trace has them (no numpy)."""
        info = reader.tensor_info(index, slot, i)
        t = torch.empty(info.shape, dtype=torch_dtypes[info.dtype])
        peat.check(_capi.lib.peat_trace_load_tensor(reader._h, index, SLOTS[slot], i,
                                                    ctypes.c_void_p(t.data_ptr()),
                                                    t.numel() * t.element_size()),
                   "peat_trace_load_tensor")
        strides = getattr(info, "strides", None)
        if strides is not None and with_layout is not None:
            t = with_layout(t, strides)
        return t.to(dev)  # preserve_format: a dense strided layout stays

    def replay(wrapper, column_major_mat2=False):
        """{op name: [(Signature, Detection)]} of the recorded forward calls
        run again on the GPU under `wrapper` (None = the op itself). The trace
        keeps values, not strides: with column_major_mat2 the second GEMM
        operand is passed as a transposed view, as nn.Linear passes its weight."""
        out_sigs = {}
        with peat.TraceReader(trace) as r:
            for rec in recs:
                packet = rec.name.rsplit("aten::", 1)[-1]
                ins = [load(r, rec.index, "input", i) for i in range(rec.n_inputs)]
                golden = load(r, rec.index, "output", 0)
                func = getattr(torch.ops.aten, packet).default
                call_args = pt.rebuild_args(ins, r.attrs(rec.index))
                if column_major_mat2 and packet in ("addmm", "mm"):
                    call_args[-1] = call_args[-1].t().contiguous().t()
                res = func(*call_args) if wrapper is None else wrapper(func, tuple(call_args), {})
                res = pt._tensors(res)[0]
                k = pt.reduction_length(packet, call_args)
                sig = peat.analyze(golden, res.detach(), reduction_length=k)  # the CUDA backend
                det = peat.detect(sig, op_kind=peat.op_kind_of(rec.name), reduction_length=k)
                out_sigs.setdefault(rec.name, []).append((sig, det))
        return out_sigs

    def verdicts(sigs):
        return {op: sorted({d.top.model for _, d in pairs}) for op, pairs in sigs.items()}

    def replay_check(name, wrapper, want, required_ops):
        if not recs:
            emit(name, "skipped", "nothing recorded")
            return
        try:
            sigs = replay(wrapper)
            v = verdicts(sigs)
            bits = {op: round(max(s.mantissa_bits for s, _ in pairs), 1) for op, pairs in sigs.items()}
            bad = {op: m for op, m in v.items() if required_ops(op) and m != [want]}
            emit(name, "failed" if bad or not any(required_ops(op) for op in v) else "ok",
                 f"expected {want}, got {bad}" if bad else "", verdicts=v, mantissa_bits_max=bits,
                 calls=sum(len(p) for p in sigs.values()))
        except Exception as exc:
            emit(name, "failed", failure(exc))

    every = lambda op: True  # noqa: E731
    # Same-op replay: EXACT for every op, the GEMMs with their operand in
    # either layout (traces before format 1.1 do not say which one the
    # recorded call had).
    if recs:
        try:
            plain, cm = verdicts(replay(None)), verdicts(replay(None, column_major_mat2=True))
            layout = {op: ("as recorded" if plain[op] == ["EXACT"] else
                           "weight as a transposed view" if cm.get(op) == ["EXACT"] else "none")
                      for op in plain}
            bad = {op: plain[op] for op, how in layout.items() if how == "none"}
            emit("replay_exact", "failed" if bad else "ok", f"not EXACT: {bad}" if bad else "",
                 verdicts=plain, verdicts_weight_transposed=cm, exact_layout=layout)
        except Exception as exc:
            emit("replay_exact", "failed", failure(exc))
    else:
        emit("replay_exact", "skipped", "nothing recorded")
    replay_check("bf16", pt.autocast_candidate(torch.bfloat16), "REDUCED_PRECISION",
                 lambda op: op.endswith("aten::addmm"))
    replay_check("float64", pt.float64_candidate(), "ROUNDING", every)

    # --- the CUDA backend's signature against the CPU backend's ----------------
    if recs:
        try:
            with peat.TraceReader(trace) as r:
                rec = recs[0]
                golden = load(r, rec.index, "output", 0)
            cand = golden * (1 + 1e-6 * torch.randn(golden.shape, generator=gen).to(dev))
            cand.view(-1)[::97] = -cand.view(-1)[::97]
            gpu = peat.analyze(golden, cand, reduction_length=9)
            cpu = peat.analyze(golden.cpu(), cand.cpu(), reduction_length=9)
            a, b = gpu.to_dict(), cpu.to_dict()
            exact_keys = [k for k, v in b.items() if (isinstance(v, int) and not isinstance(v, bool))
                          or (isinstance(v, list) and all(isinstance(x, int) for x in v))]
            differ = [k for k in exact_keys if a.get(k) != b[k]]
            differ += [k for k in ("max_abs_error", "max_rel_error") if k in b and a.get(k) != b[k]]
            emit("cuda_vs_cpu", "failed" if differ else "ok",
                 f"fields differ: {differ}" if differ else "", elements=b.get("count"),
                 fields_compared=len(exact_keys) + 2, op=rec.name)
        except Exception as exc:
            emit("cuda_vs_cpu", "failed", failure(exc))
    else:
        emit("cuda_vs_cpu", "skipped", "nothing recorded")

    # --- inside the mode: run_both with a bf16 candidate, and an injection ------
    def in_mode(name, setup, check):
        try:
            torch.manual_seed(0)
            model = DigitsCNN().to(dev)
            with peat.Session(seed=2, backend=backend, run_name=name) as s:
                mode = pt.PeatMode(s, model=model)
                setup(mode)
                try:
                    with mode:
                        train(model, mode, 3)
                    firings = list(mode.firings)
                    det = mode.detect()
                finally:
                    mode.close()
            statuses = sorted({f["status"] for f in firings})
            v = {op: d.top.model for op, d in det.items()}
            ok, why = check(firings, v)
            emit(name, "ok" if ok and statuses == ["ok"] else "failed",
                 why if not ok else ("" if statuses == ["ok"] else f"firing statuses {statuses}"),
                 firings=len(firings), verdicts=v)
        except Exception as exc:
            emit(name, "failed", failure(exc))

    def bf16_convs(mode):
        mode.set_candidate("*aten::convolution", pt.autocast_candidate(torch.bfloat16))
        mode.injector.add_policy("*aten::convolution", "run_both", every_n=1)

    def bf16_ok(firings, v):
        conv = {op: m for op, m in v.items() if "aten::convolution" in op}
        good = conv and all(m == "REDUCED_PRECISION" for m in conv.values())
        return good, f"expected REDUCED_PRECISION for the convolutions, got {conv}"

    def flip_fc(mode):
        mode.injector.add_policy("fc/aten::addmm", "inject", every_n=1,
                                 spec=peat.InjectSpec("bitflip", field="exponent", count=1))

    def flip_ok(firings, v):
        per_call = [peat.detect(f["signature"], op_kind="gemm").top.model for f in firings
                    if f["signature"] is not None]
        good = len(firings) == 3 and per_call == ["BITFLIP_SINGLE"] * 3
        return good, f"expected 3 firings judged BITFLIP_SINGLE, got {per_call} of {len(firings)}"

    in_mode("mode_run_both", bf16_convs, bf16_ok)
    in_mode("mode_inject", flip_fc, flip_ok)

    # --- what this torch dispatches (information for peat.torch, never a failure)
    try:
        from torch.utils._python_dispatch import TorchDispatchMode

        class Seen(TorchDispatchMode):
            def __init__(self):
                super().__init__()
                self.ops = {}

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                name = f"{func.overloadpacket.__name__}.{func._overloadname}"
                self.ops[name] = self.ops.get(name, 0) + 1
                return func(*args, **(kwargs or {}))

        class Probe(nn.Module):  # the layers peat.torch names: conv, batch/layer norm, attention, linear
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(1, 8, 3, padding=1)
                self.bn = nn.BatchNorm2d(8)
                self.ln = nn.LayerNorm(8)
                self.attn = nn.MultiheadAttention(8, 2, batch_first=True)
                self.fc = nn.Linear(8, 10)

            def forward(self, x):
                h = F.relu(self.bn(self.conv(x))).flatten(2).transpose(1, 2)  # [B, 64, 8]
                h = self.ln(h)
                h, _ = self.attn(h, h, h, need_weights=False)
                return self.fc(h.mean(1))

        torch.manual_seed(0)
        probe = Probe().to(dev)
        opt = torch.optim.SGD(probe.parameters(), lr=0.01)
        seen = Seen()
        a, b = torch.rand(8, 8, device=dev), torch.rand(8, 8, device=dev)
        c = torch.empty(8, 8, device=dev)
        with seen:
            loss = F.cross_entropy(probe(x_all[:16]), y_all[:16])
            loss.backward()
            opt.step()
            torch.mm(a, b, out=c)
        packets = {n.split(".")[0] for n in seen.ops}
        emit("dispatch_ops", "info", "the aten ops a dispatch mode sees in one training step (conv, "
             "batch norm, layer norm, attention, linear, SGD) and one mm(out=)",
             ops=dict(sorted(seen.ops.items())), in_default_ops=sorted(packets & pt.DEFAULT_OPS),
             default_ops_not_seen=sorted(pt.DEFAULT_OPS - packets))
    except Exception as exc:
        emit("dispatch_ops", "info", failure(exc))

    # out= overloads under run_candidate: the caller's out tensor should hold
    # the candidate's result, as the returned tensor does.
    try:
        with peat.Session(seed=3, backend=backend, run_name="out-overload") as s:
            mode = pt.PeatMode(s, ops={"mm"})
            mode.set_candidate("aten::mm", lambda func, a_, k_: func(*a_, **k_) + 1)
            mode.injector.add_policy("aten::mm", "run_candidate", every_n=1)
            a, b = torch.rand(8, 8, device=dev), torch.rand(8, 8, device=dev)
            c = torch.zeros(8, 8, device=dev)
            with mode:
                r = torch.mm(a, b, out=c)
            mode.close()
        want = a @ b + 1
        emit("out_overload", "info", "", returned_is_candidate=bool(torch.equal(r, want)),
             out_tensor_is_candidate=bool(torch.equal(c, want)), returned_is_out=r.data_ptr() == c.data_ptr(),
             firings=len(mode.firings), statuses=sorted({f["status"] for f in mode.firings}))
    except Exception as exc:
        emit("out_overload", "info", failure(exc))

    failed = [r["check"] for r in RESULTS if r["status"] == "failed"]
    print(f"torch_cuda_check: {len(RESULTS) - len(failed)} of {len(RESULTS)} checks ok"
          + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
