"""The self-contained HTML report (peat/report.h) from Python.

    with peat.Report(title="bf16 GEMM") as r:
        r.add_input("golden.peat")                 # a trace, playback JSONL or demo JSON
        r.add_signature(sig, op="fc/aten::mm", source="bf16", detection=peat.detect(sig))
        r.write_html("report.html")

The library copies everything added; the page has inline CSS and SVG only.
"""
from __future__ import annotations

import os
from ctypes import byref, c_int32, c_size_t, c_void_p, create_string_buffer

from . import _capi
from ._capi import lib
from ._handle import OwnsHandle
from .errors import check

#: peat_report_input_kind_t values, by name.
INPUT_KINDS = {0: "trace", 1: "playback", 2: "runtime"}
STATUS_BUFFER_TOO_SMALL = 10  # PEAT_STATUS_BUFFER_TOO_SMALL (peat/core.h)


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
