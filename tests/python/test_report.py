"""The HTML report (peat.Report over peat/report.h): signatures with their
verdicts, a spatial map, inputs of each kind, errors naming the file."""
import numpy as np
import pytest

import peat


def _bf16(x):
    """Rounds float32 to bf16 (nearest even) and back, in numpy."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32)


def test_report_of_signatures_and_map(rng, tmp_path):
    a = rng.random((64, 96), dtype=np.float32)
    b = rng.random((96, 48), dtype=np.float32)
    golden = a @ b
    cand = _bf16(a) @ _bf16(b)
    sig, smap = peat.analyze(golden, cand, reduction_length=96, spatial_map=True,
                             tile_rows=16, tile_cols=16)
    det = peat.detect(sig, op_kind="gemm")
    assert det.models[0] == "REDUCED_PRECISION"
    with peat.Report(title="bf16 <GEMM>") as r:
        for step in range(3):
            r.add_signature(sig, "fc/aten::mm", source="bf16", step=step, call=step, detection=det)
        r.add_spatial_map(smap, "bf16: fc record 0")
        html = r.html()
        out = tmp_path / "report.html"
        r.write_html(out)
    assert html.startswith("<!DOCTYPE html>") or html.lstrip().lower().startswith("<!doctype html")
    assert "bf16 &lt;GEMM&gt;" in html and "bf16 <GEMM>" not in html  # the title is escaped
    assert "fc/aten::mm" in html and "REDUCED_PRECISION" in html
    assert html.count("<svg") >= 3  # histograms, bit heat map, spatial map at least
    assert "<script" not in html.lower()
    assert out.read_text(encoding="utf-8") == html


def test_report_inputs_and_errors(tmp_path):
    trace = tmp_path / "t.peat"
    with peat.Session(seed=1) as s, peat.Profiler(s, str(trace)) as prof:
        x = np.arange(12, dtype=np.float32).reshape(3, 4)
        prof.record_op("aten::mm", inputs=[x], outputs=[x * 2])
    with peat.Report() as r:
        assert r.add_input(trace) == "trace"
        with pytest.raises(peat.NotFoundError, match="no-such.peat"):
            r.add_input(tmp_path / "no-such.peat")
        junk = tmp_path / "junk.bin"
        junk.write_bytes(b"\x00\x01 not a report input")
        with pytest.raises(peat.CorruptDataError, match="junk.bin"):
            r.add_input(junk)
        assert "aten::mm" in r.html()  # the trace added before the errors is kept
    with pytest.raises(peat.InvalidArgumentError):
        peat.Report(max_table_rows=0)
