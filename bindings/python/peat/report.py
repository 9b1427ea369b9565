"""The self-contained HTML report (peat/report.h) from Python.

    with peat.Report(title="bf16 GEMM") as r:
        r.add_input("golden.peat")                 # a trace, playback JSONL or demo JSON
        r.add_playback(playback, "bf16")           # a peat.Playback after run(): per-call verdicts
        r.add_noise_band(band)                     # a peat.NoiseBand from golden reruns
        r.add_fi_run("bf16", loss, every=10)       # judged against the band
        r.write_html("report.html")

The page leads with a summary (one row per candidate: verdict, key parameter,
ops affected, training impact in band units, one sentence). The library copies
everything added; the page has inline CSS and SVG only.
"""
from __future__ import annotations

import os
import ctypes
import math
from ctypes import byref, c_int32, c_size_t, c_uint64, c_void_p, create_string_buffer

from . import _capi
from ._capi import lib
from ._handle import OwnsHandle
from .errors import check

#: peat_report_input_kind_t values, by name.
INPUT_KINDS = {0: "trace", 1: "playback", 2: "runtime"}
STATUS_BUFFER_TOO_SMALL = 10  # PEAT_STATUS_BUFFER_TOO_SMALL (peat/core.h)
STATUS_NOT_FOUND = 7  # PEAT_STATUS_NOT_FOUND (peat/core.h)


class Report(OwnsHandle):
    """A report builder (peat_report_t). Close it (or use `with`) to free it."""

    _h = None  # the C handle; None until created, after close

    def __init__(self, title: str | None = None, max_table_rows: int = 200):
        opts = _capi.ReportOptions()
        lib.peat_report_options_init(byref(opts))
        opts.max_table_rows = max_table_rows
        self._title = title.encode() if title is not None else None  # copied at create
        opts.title = self._title
        handle = c_void_p()
        check(lib.peat_report_create(byref(opts), byref(handle)), "peat_report_create")
        self._h = handle

    def close(self) -> None:
        if self._h:
            lib.peat_report_destroy(self._h)
            self._h = c_void_p()

    def add_input(self, path) -> str:
        """Adds a trace, a playback JSON-lines file or a runtime-FI/demo JSON;
        returns its kind ("trace", "playback" or "runtime")."""
        kind = c_int32(-1)
        check(lib.peat_report_add_input(self._h, os.fsencode(path), byref(kind)),
              "peat_report_add_input")
        return INPUT_KINDS.get(kind.value, str(kind.value))

    def add_signature(self, signature, op: str, *, source: str | None = None, step: int = 0,
                      call: int = 0, detection=None) -> None:
        """Adds one call's signature (a peat.Signature) of `op`, compared by
        `source`, with an optional peat.Detection shown with its evidence."""
        det = byref(detection.raw) if detection is not None else None
        check(lib.peat_report_add_signature(self._h, source.encode() if source else None,
                                            op.encode(), step, call, byref(signature.raw), det),
              "peat_report_add_signature")

    def add_spatial_map(self, spatial_map, label: str | None = None) -> None:
        """Adds a call's spatial map (a peat.SpatialMap with tile counts); the
        one with the most mismatches is drawn."""
        check(lib.peat_report_add_spatial_map(self._h, label.encode() if label else None,
                                              byref(spatial_map.raw)),
              "peat_report_add_spatial_map")

    def add_playback(self, playback, candidate: str | None = None) -> None:
        """Adds a finished peat.Playback (after run()) of `candidate`: its
        per-call verdicts, the detection behind each op's top model and the
        error over steps. The playback may be closed afterwards."""
        check(lib.peat_report_add_playback(self._h, candidate.encode() if candidate else None,
                                           playback._h), "peat_report_add_playback")

    def focus_call(self, candidate: str):
        """(trace record, output) of the call of `candidate`'s playback whose
        spatial map tells most (a REGION / STUCK_AT call first); None when
        every call equals golden."""
        rec, out = c_uint64(), c_uint64()
        status = lib.peat_report_focus_call(self._h, candidate.encode(), byref(rec), byref(out))
        if status == STATUS_NOT_FOUND:
            return None
        check(status, "peat_report_focus_call")
        return rec.value, out.value

    def add_candidate_map(self, candidate: str, spatial_map, label: str | None = None) -> None:
        """Adds the spatial map (a peat.SpatialMap with tile counts) of one
        call of `candidate`, drawn in its section."""
        check(lib.peat_report_add_candidate_map(self._h, candidate.encode(),
                                                label.encode() if label else None,
                                                byref(spatial_map.raw)),
              "peat_report_add_candidate_map")

    def add_noise_band(self, band, stage: str | None = None) -> None:
        """Adds a peat.NoiseBand (golden reference and reruns) for `stage`
        (default "train"); runtime-FI runs of the stage added without an
        impact are judged against it."""
        check(lib.peat_report_add_noise_band(self._h, stage.encode() if stage else None, band._h),
              "peat_report_add_noise_band")

    def add_fi_run(self, candidate: str, loss, *, every: int = 0, label: str | None = None,
                   stage: str | None = None, impact=None, steps=None, candidate_calls: int = -1,
                   param_drift: float | None = None, test_accuracy: float | None = None) -> None:
        """Adds a runtime-FI run of `candidate` (its loss per step, the
        candidate at every `every`-th call). `impact`: a peat.Impact from
        NoiseBand.judge; None judges the run against the stage's band."""
        run = _capi.ReportFiRun()
        lib.peat_report_fi_run_init(byref(run))
        keep = [candidate.encode(), label.encode() if label else None,
                stage.encode() if stage else None]
        run.candidate, run.label, run.stage = keep
        run.every, run.candidate_calls = every, candidate_calls
        values = [float(x) for x in loss]
        arr = (ctypes.c_double * max(1, len(values)))(*values)
        run.loss, run.length = ctypes.cast(arr, ctypes.POINTER(ctypes.c_double)), len(values)
        st = None
        if steps is not None:
            if len(steps) != len(values):
                raise ValueError(f"peat: {len(steps)} steps for {len(values)} losses")
            st = (ctypes.c_int64 * len(values))(*steps)
            run.steps = ctypes.cast(st, ctypes.POINTER(ctypes.c_int64))
        raw = None
        if impact is not None:
            raw = _capi.Impact()
            raw.struct_size = ctypes.sizeof(raw)
            raw.verdict = 1 if impact.verdict == "OUTSIDE_NOISE" else 0
            nan = float("nan")
            raw.steps, raw.effect, raw.max_deviation = impact.steps, impact.effect, impact.max_deviation
            raw.max_deviation_step = impact.max_deviation_step
            raw.first_beyond_step = -1 if impact.first_beyond_step is None else impact.first_beyond_step
            raw.beyond_count, raw.final_delta = impact.beyond_count, impact.final_delta
            raw.param_drift = nan if impact.param_drift is None else impact.param_drift
            raw.param_drift_ratio = nan if impact.param_drift_ratio is None else impact.param_drift_ratio
            run.impact = ctypes.pointer(raw)
        run.param_drift = math.nan if param_drift is None else param_drift
        run.test_accuracy = math.nan if test_accuracy is None else test_accuracy
        check(lib.peat_report_add_fi_run(self._h, byref(run)), "peat_report_add_fi_run")

    def html(self) -> str:
        """The rendered page as a string."""
        n = c_size_t()
        status = lib.peat_report_render_html(self._h, None, 0, byref(n))
        if status not in (0, STATUS_BUFFER_TOO_SMALL):
            check(status, "peat_report_render_html")
        buf = create_string_buffer(n.value + 1)
        check(lib.peat_report_render_html(self._h, buf, n.value + 1, byref(n)),
              "peat_report_render_html")
        return buf.raw[:n.value].decode("utf-8")

    def write_html(self, path) -> None:
        """Writes the page to `path` (replaced when it exists)."""
        check(lib.peat_report_write_html(self._h, os.fsencode(path)), "peat_report_write_html")
