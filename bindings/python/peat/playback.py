"""Playback: replay recorded op calls of a trace through a candidate and
compare with the recorded golden outputs (peat/playback.h).

    with peat.TraceReader("run.peat") as r, \\
            peat.Playback(r, candidate=my_kernel, op_glob="*aten::mm") as pb:
        summary = pb.run()
        for op, sig in pb.signatures().items():
            print(op, pb.detect()[op].top.model)

A candidate is either a Python callable candidate(inputs, outputs, call) —
inputs and outputs are numpy arrays over the library's buffers (bf16: torch
bfloat16 tensors), the outputs written in place; `call` a PlaybackCall naming
the record (op, module path, step, call index, phase, attributes, run) — or a
"path/libx.so:symbol" string naming a peat_kernel_fn in a shared object.
peat.torch.playback_candidate() makes a torch one.
"""
from __future__ import annotations

import ctypes
import dataclasses
import traceback
from ctypes import byref, c_uint64, c_void_p

from . import _capi
from ._capi import lib
from ._handle import OwnsHandle
from .analyzer import Signature, make_config
from .errors import CancelledError, check
from .injector import dl_to_array
from .session import PHASE_NAMES
from .trace import attr_value, make_filter

ATTRS_MODES = {"list": 0, "null": 1}
GROUP_KINDS = {"op": 0, "layer": 1}
COMPARISONS = {"first_vs_golden": 0, "second_vs_golden": 1, "second_vs_first": 2}


@dataclasses.dataclass
class PlaybackCall:
    """What a Python candidate learns about the record it replays
    (peat_playback_attrs_t, attrs mode "list")."""
    op: str
    module_path: str
    step: int
    call_index: int
    phase: str
    run: int
    attrs: dict


@dataclasses.dataclass
class Summary:
    """Totals of the last run (peat_playback_summary_t)."""
    cancelled: bool
    selected: int
    done: int
    ok: int
    failed: int
    exact: int
    mismatched: int
    nondeterministic: int

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class Result:
    """One replayed record (peat_playback_result_t); `status` is the status
    name ("OK", "CALLBACK_FAILED", ...), `message` says why it failed."""
    index: int
    status: str
    status_code: int
    record: int
    op: str
    module_path: str
    step: int
    call_index: int
    phase: str
    deterministic: int
    n_outputs: int
    elements: int
    bitwise_mismatches: int
    tolerance_failures: int
    message: str

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class Group:
    """Records grouped by op name or by layer (peat_playback_group_t)."""
    index: int
    kind: str
    name: str
    records: int
    ok: int
    failed: int
    exact: int
    nondeterministic: int
    n_outputs: int

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class CallVerdicts:
    """The per-call verdicts of one output of a group
    (peat_playback_verdicts_t): each compared call judged alone, counted by
    its top verdict. `top` is the model to report first: the most frequent
    anomaly (anything but EXACT, ROUNDING, REDUCED_PRECISION), else the most
    frequent of those; None when no call was judged."""
    records: int
    judged: int
    counts: dict
    bits: list
    top: str | None

    def describe(self) -> str:
        """"BITFLIP_SINGLE in 40 of 40 calls, bits {22, 29}" (and what the
        other calls were)."""
        if self.top is None:
            return f"no call judged of {self.records}"
        text = f"{self.top} in {self.counts[self.top]} of {self.records} calls"
        if self.bits and self.top in ("BITFLIP_SINGLE", "BITFLIP_MULTI", "STUCK_AT"):
            text += ", bits {" + ", ".join(str(b) for b in self.bits) + "}"
        rest = [f"{m} {n}" for m, n in self.counts.items() if m != self.top]
        return text + (f" ({', '.join(rest)})" if rest else "")

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _status_name(code: int) -> str:
    return lib.peat_status_string(code).decode()


class Playback(OwnsHandle):
    """A playback over a peat.TraceReader (which must stay open while this
    object is used).

    candidate:    a Python callable or "path/libx.so:symbol" (or set later
                  with set_candidate / set_candidate_symbol).
    op_glob, step_min, step_max, phase: the records to replay (op records only).
    attrs:        "list" (the candidate gets a PlaybackCall; default for a
                  Python candidate) or "null" (attrs NULL; default for a
                  shared object, e.g. the GEMM kernels of examples/candidates).
    thread_safe:  the candidate may run on several threads at once (pipelined
                  on oneTBB); a Python candidate then still holds the GIL.
    run_twice:    run the candidate twice per record (non-determinism).
    progress:     progress(done, total) after each record; returning False
                  cancels the run (as does cancel()).
    config:       analyzer settings (peat.make_config keywords, e.g. rtol).
    session:      a peat.Session whose log receives candidate failures.
    isolate:      run each candidate call in a forked worker with guard pages
                  around its outputs, so a candidate that crashes, hangs or
                  writes out of bounds fails its record instead of the process
                  (meant for shared-object candidates; see peat/playback.h).
    timeout_ms:   with isolate, the wall-clock limit of one candidate call in
                  milliseconds (0 = none; default: the library's, 10000).
    partition:    (rank, world): replay only share `rank` of `world` of the
                  selected records; export_results / import_results merge the
                  shares (docs/distributed.md; peat.torch.distributed_playback).
    """

    _h = None  # the C handle; None until created, after close

    def __init__(self, reader, *, candidate=None, op_glob: str | None = None,
                 step_min: int | None = None, step_max: int | None = None, phase=None,
                 attrs: str | None = None, thread_safe: bool = False, run_twice: bool = False,
                 max_in_flight: int = 4, num_threads: int = 0, progress=None,
                 config: dict | None = None, session=None, isolate: bool = False,
                 timeout_ms: int | None = None, partition: tuple | None = None):
        if attrs is None:
            attrs = "null" if isinstance(candidate, str) else "list"
        opts = _capi.PlaybackOptions()
        lib.peat_playback_options_init(byref(opts))
        opts.thread_safe, opts.run_twice = int(thread_safe), int(run_twice)
        opts.attrs_mode = ATTRS_MODES[attrs]
        opts.max_in_flight, opts.num_threads = max_in_flight, num_threads
        opts.isolate = int(isolate)
        if timeout_ms is not None:
            opts.timeout_ms = timeout_ms
        if partition is not None:
            opts.partition_rank, opts.partition_world = int(partition[0]), int(partition[1])
        self._filter = make_filter(kinds="op", op_glob=op_glob, step_min=step_min,
                                   step_max=step_max, phase=phase)
        opts.filter = ctypes.pointer(self._filter)
        self._config = make_config(**(config or {}))
        opts.config = ctypes.pointer(self._config)
        self._progress_user = progress
        self._cancel = False
        self._progress = _capi.PROGRESS_FN(self._on_progress)
        opts.progress = self._progress
        self.reader = reader  # borrowed by the C playback: keep it alive
        self.session = session
        self.attrs_mode = attrs
        self.candidate_errors = []  # (op, step, call, traceback text) of failed Python calls
        self._kernel = None
        handle = c_void_p()
        check(lib.peat_playback_create(reader._h, byref(opts), byref(handle)),
              "peat_playback_create")
        self._h = handle
        if isinstance(candidate, str):
            self.set_candidate_symbol(candidate)
        elif candidate is not None:
            self.set_candidate(candidate)

    def close(self) -> None:
        if self._h:
            lib.peat_playback_destroy(self._h)
            self._h = c_void_p()

    # -- candidates --
    def set_candidate(self, fn) -> None:
        """A Python candidate fn(inputs, outputs, call) (see the module doc);
        an exception or a non-zero int return fails the record
        (CALLBACK_FAILED), the run goes on."""
        list_mode = self.attrs_mode == "list"

        def trampoline(ctx, inputs, n_in, outputs, n_out, attrs):
            call = None
            try:
                if list_mode and attrs:
                    a = ctypes.cast(attrs, ctypes.POINTER(_capi.PlaybackAttrs)).contents
                    call = PlaybackCall(
                        a.op.decode() if a.op else "",
                        a.module_path.decode() if a.module_path else "", a.step,
                        a.call_index, PHASE_NAMES.get(a.phase, str(a.phase)), a.run,
                        {(a.attrs[i].key or b"").decode(): attr_value(a.attrs[i])
                         for i in range(a.n_attrs)})
                ins = [dl_to_array(inputs[i]) for i in range(n_in)]
                outs = [dl_to_array(outputs[i]) for i in range(n_out)]
                rc = fn(ins, outs, call)
                return int(rc) if isinstance(rc, int) and not isinstance(rc, bool) else 0
            except Exception:  # must not unwind through C: the record fails instead
                text = traceback.format_exc()
                where = (call.op, call.step, call.call_index) if call else ("?", -1, 0)
                self.candidate_errors.append((*where, text))
                if self.session is not None:
                    self.session.log(f"playback: candidate failed on {where[0]} step {where[1]} "
                                     f"call {where[2]}: {text.strip().splitlines()[-1]}",
                                     "warning")
                return 1
        kernel = _capi.KERNEL_FN(trampoline)
        check(lib.peat_playback_set_candidate(self._h, kernel, None),
              "peat_playback_set_candidate")
        self._kernel = kernel  # the library calls it until replaced or destroyed

    def set_candidate_symbol(self, spec: str) -> None:
        """A C candidate "path/libx.so:symbol" (a peat_kernel_fn)."""
        check(lib.peat_playback_set_candidate_symbol(self._h, spec.encode(), None),
              "peat_playback_set_candidate_symbol")
        self._kernel = None

    def candidate_address(self) -> int:
        """The address of the candidate kernel the playback holds (a loaded
        symbol's, or the callback's), to call it again without loading it twice."""
        fn = c_void_p()
        check(lib.peat_playback_candidate(self._h, byref(fn), None), "peat_playback_candidate")
        return fn.value or 0

    # -- running --
    def _on_progress(self, user, done, total):
        try:
            if self._progress_user is not None and self._progress_user(done, total) is False:
                self._cancel = True
        except Exception:
            self._cancel = True
        return 1 if self._cancel else 0

    def cancel(self) -> None:
        """Asks a running run() to stop after the current record (from the
        candidate, the progress callback or another thread)."""
        self._cancel = True

    def run(self) -> Summary:
        """Replays every selected record; returns the summary. A cancelled run
        returns its summary with cancelled=True (the results so far are kept);
        other failures raise."""
        self._cancel = False
        self.candidate_errors = []
        status = lib.peat_playback_run(self._h)
        if status != CancelledError.status:
            check(status, "peat_playback_run")
        return self.summary()

    def summary(self) -> Summary:
        s = _capi.PlaybackSummary()
        s.struct_size = ctypes.sizeof(s)
        check(lib.peat_playback_summary(self._h, byref(s)), "peat_playback_summary")
        return Summary(bool(s.cancelled), s.selected, s.done, s.ok, s.failed, s.exact,
                       s.mismatched, s.nondeterministic)

    # -- per record --
    def __len__(self) -> int:
        n = c_uint64()
        check(lib.peat_playback_result_count(self._h, byref(n)), "peat_playback_result_count")
        return n.value

    def result(self, index: int) -> Result:
        r = _capi.PlaybackResult()
        r.struct_size = ctypes.sizeof(r)
        check(lib.peat_playback_result(self._h, index, byref(r)), "peat_playback_result")
        dec = lambda p: p.decode("utf-8", "replace") if p else ""  # noqa: E731
        return Result(index, _status_name(r.status), r.status, r.record, dec(r.op),
                      dec(r.module_path), r.step, r.call_index,
                      PHASE_NAMES.get(r.phase, str(r.phase)), r.deterministic, r.n_outputs,
                      r.elements, r.bitwise_mismatches, r.tolerance_failures, dec(r.message))

    def results(self) -> list:
        return [self.result(i) for i in range(len(self))]

    def result_signature(self, index: int, output: int = 0,
                         which: str = "first_vs_golden") -> Signature:
        s = _capi.Signature()
        lib.peat_signature_init(byref(s))
        check(lib.peat_playback_result_signature(self._h, index, output, COMPARISONS[which],
                                                 byref(s)), "peat_playback_result_signature")
        return Signature.from_struct(s)

    # -- aggregates --
    def groups(self, by: str = "op") -> list:
        n = c_uint64()
        check(lib.peat_playback_group_count(self._h, GROUP_KINDS[by], byref(n)),
              "peat_playback_group_count")
        out = []
        for i in range(n.value):
            g = _capi.PlaybackGroup()
            g.struct_size = ctypes.sizeof(g)
            check(lib.peat_playback_group(self._h, GROUP_KINDS[by], i, byref(g)),
                  "peat_playback_group")
            out.append(Group(i, by, g.name.decode() if g.name else "", g.records, g.ok,
                             g.failed, g.exact, g.nondeterministic, g.n_outputs))
        return out

    def group_signature(self, index: int, by: str = "op", output: int = 0,
                        which: str = "first_vs_golden") -> Signature:
        s = _capi.Signature()
        lib.peat_signature_init(byref(s))
        check(lib.peat_playback_group_signature(self._h, GROUP_KINDS[by], index, output,
                                                COMPARISONS[which], byref(s)),
              "peat_playback_group_signature")
        return Signature.from_struct(s)

    def _records_by_op(self) -> dict:
        """{op name: [Result, ...]} of the last run, in record order."""
        out = {}
        for r in self.results():
            out.setdefault(r.op, []).append(r)
        return out

    def _outputs(self, g: Group, output, by_op: dict) -> list:
        """[(output index, label)] of a group: every output (output None) or
        one. The label is the group name for a single-output group or a
        chosen output, else "<name>[<output name>]" with the name its first
        compared record gives the output ("grad_weight"; the index when
        unnamed). `by_op` is _records_by_op()."""
        from .labels import output_label
        if output is not None:
            return [(output, g.name)] if output < g.n_outputs else []
        first = None
        if g.n_outputs > 1 and g.kind == "op":
            first = next((r.record for r in by_op.get(g.name, []) if r.status_code == 0), None)
        return [(i, output_label(g.name, self.reader.tensor_info(first, "output", i).name
                                 if first is not None else "", i, g.n_outputs))
                for i in range(g.n_outputs)]

    def signatures(self, by: str = "op", output: int | None = None,
                   which: str = "first_vs_golden") -> dict:
        """{label: merged Signature} of the groups with compared records, for
        every output, labelled as in _outputs (e.g.
        "conv1/aten::convolution_backward[grad_weight]"), or of output
        `output` only, labelled by group name."""
        out, by_op = {}, self._records_by_op()
        for g in self.groups(by):
            if not g.ok:
                continue
            for i, label in self._outputs(g, output, by_op):
                sig = self.group_signature(g.index, by, i, which)
                if sig.count:
                    out[label] = sig
        return out

    def reduction_lengths(self, output: int = 0) -> dict:
        """{op name: K} of output `output` of the replayed GEMM / convolution
        records, from the recorded input shapes and attributes; the largest K
        when an op's calls differ (e.g. the two mm of a linear layer's
        backward), whose rounding bound covers the smaller ones."""
        out = {}
        for r in self.results():
            out[r.op] = max(out.get(r.op, 0), self._record_k(r.record, r.op, output))
        return out

    def _record_k(self, record: int, op: str, output: int = 0) -> int:
        return self._record_context(record, output)[1]

    def _record_kind(self, record: int, op: str, output: int = 0) -> str:
        return self._record_context(record, output, signature_k=1)[0]

    def _record_context(self, record: int, output: int = 0, signature_k: int = 0) -> tuple:
        """(op kind, K) of output `output` of a recorded call: the library's
        rule on the record (peat_playback_detect_context)."""
        from .detector import op_kind_name
        ctx = _capi.DetectContext()
        lib.peat_detect_context_init(byref(ctx))
        check(lib.peat_playback_detect_context(self.reader._h, record, output, signature_k,
                                               byref(ctx)), "peat_playback_detect_context")
        return op_kind_name(ctx.op_kind), ctx.reduction_length

    def detect_record(self, index: int, output: int = 0, which: str = "first_vs_golden",
                      **context):
        """peat.Detection of result `index` alone (see peat.detect for
        `context`); op kind and K from the op name and the recorded input
        shapes and attributes unless given. With the defaults this is the
        library's judgement of the call, the one call_verdicts() counts
        (peat_playback_result_detection)."""
        from .detector import Detection, Verdict, detect
        if which == "first_vs_golden" and not context:
            out = _capi.Detection()
            lib.peat_detection_init(byref(out))
            check(lib.peat_playback_result_detection(self._h, index, output, byref(out)),
                  "peat_playback_result_detection")
            verdicts = [Verdict.from_struct(out.verdicts[i]) for i in range(out.verdict_count)]
            return Detection(out.elements, out.mismatches, verdicts, out)
        res = self.result(index)
        ctx = dict(context)
        ctx.setdefault("op_kind", self._record_kind(res.record, res.op, output))
        ctx.setdefault("reduction_length", self._record_k(res.record, res.op, output))
        if ctx["op_kind"] != "unknown" and ctx["reduction_length"] <= 0:
            ctx["op_kind"] = "unknown"
        return detect(self.result_signature(index, output, which), **ctx)

    def call_verdicts(self, by: str = "op", output: int | None = None) -> dict:
        """{label: CallVerdicts} of every group and output (labels as in
        signatures()): the Detector's verdict on each call alone, counted by
        the library (peat_playback_group_verdicts). Prefer it to detect()
        for faults that differ from call to call: one bit flipped per call
        is BITFLIP_SINGLE in every call, while the merged signature of the
        calls looks like a stuck bit or many flips."""
        from .detector import MODELS
        names = {v: k for k, v in MODELS.items()}
        out, by_op = {}, self._records_by_op()
        for g in self.groups(by):
            if not g.ok:
                continue
            for i, label in self._outputs(g, output, by_op):
                v = _capi.PlaybackVerdicts()
                v.struct_size = ctypes.sizeof(v)
                check(lib.peat_playback_group_verdicts(self._h, GROUP_KINDS[by], g.index, i,
                                                       byref(v)), "peat_playback_group_verdicts")
                counts = {names.get(m, str(m)): v.counts[m]
                          for m in range(_capi.PLAYBACK_MODEL_SLOTS) if v.counts[m]}
                bits = [b for b in range(64) if v.bits >> b & 1]
                out[label] = CallVerdicts(v.records, v.judged, counts, bits,
                                          names.get(v.top_model) if v.top_model >= 0 else None)
        return out

    def record_verdicts(self, output: int | None = None, which: str = "first_vs_golden",
                        **context) -> dict:
        """{label: {model name: records}}: the top verdict of each compared
        record, counted per op and output (labels as in signatures(); the op
        name alone when `output` is given). Unlike detect(), which judges each
        op's merged signature, this keeps calls of different shapes and
        scales apart. With the defaults the library's counts are used
        (call_verdicts); other `which` or `context` judge each record here."""
        if which == "first_vs_golden" and not context:
            return {label: dict(v.counts) for label, v in self.call_verdicts("op", output).items()}
        from .labels import output_label
        out = {}
        for res in self.results():
            if res.status_code != 0:
                continue
            wanted = range(res.n_outputs) if output is None else [output]
            for i in wanted:
                if i >= res.n_outputs:
                    continue
                model = self.detect_record(res.index, i, which, **context).top.model
                name = self.reader.tensor_info(res.record, "output", i).name
                label = res.op if output is not None else output_label(res.op, name, i,
                                                                        res.n_outputs)
                counts = out.setdefault(label, {})
                counts[model] = counts.get(model, 0) + 1
        return out

    def detect(self, by: str = "op", output: int | None = None,
               which: str = "first_vs_golden", **context) -> dict:
        """{label: peat.Detection} of the merged signatures of every output
        (or output `output` only; labels as in signatures(); see peat.detect
        for `context`). By op, the op kind ("gemm", "conv", "reduction") and
        the reduction length K of each output follow from the op name and the
        recorded input shapes and attributes unless given; ops without a
        known K get the elementwise allowance ("unknown")."""
        from .detector import detect
        out, by_op = {}, self._records_by_op()
        for g in self.groups(by):
            if not g.ok:
                continue
            for i, label in self._outputs(g, output, by_op):
                sig = self.group_signature(g.index, by, i, which)
                if not sig.count:
                    continue
                ctx = dict(context)
                if by == "op":
                    recs = by_op.get(g.name, [])
                    if "reduction_length" not in context:
                        ctx["reduction_length"] = max(
                            [self._record_k(r.record, r.op, i) for r in recs], default=0)
                    if recs:
                        ctx.setdefault("op_kind", self._record_kind(recs[0].record, g.name, i))
                    ctx.setdefault("op_kind", "unknown")
                    if ctx["op_kind"] != "unknown" and ctx["reduction_length"] <= 0 \
                            and sig.reduction_length <= 0:
                        ctx["op_kind"] = "unknown"
                out[label] = detect(sig, **ctx)
        return out

    def share(self, rank: int) -> tuple:
        """(first record, end record, records) of share `rank` of the partition."""
        first, end, n = c_uint64(), c_uint64(), c_uint64()
        check(lib.peat_playback_partition_share(self._h, rank, byref(first), byref(end), byref(n)),
              "peat_playback_partition_share")
        return first.value, end.value, n.value

    def export_results(self) -> bytes:
        """The last run's results as bytes for import_results in another
        process of the same build (peat_playback_export)."""
        size = ctypes.c_size_t()
        check(lib.peat_playback_export(self._h, None, 0, byref(size)), "peat_playback_export")
        buf = ctypes.create_string_buffer(max(size.value, 1))
        check(lib.peat_playback_export(self._h, buf, size.value, byref(size)), "peat_playback_export")
        return buf.raw[:size.value]

    def import_results(self, data: bytes) -> None:
        """Merges another share's export_results into this playback (after its
        own run): with every share in, the results equal one unpartitioned run."""
        check(lib.peat_playback_import(self._h, data, len(data)), "peat_playback_import")

    def write_jsonl(self, path, append: bool = False) -> None:
        """The results as JSON lines (records, then groups)."""
        check(lib.peat_playback_write_jsonl(self._h, str(path).encode(), int(append)),
              "peat_playback_write_jsonl")

