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


def _gemm_trace(tmp_path, calls=4):
    """A trace of `calls` float32 GEMMs (aten::mm) with their golden outputs."""
    trace = tmp_path / "gemm.peat"
    rng = np.random.default_rng(5)
    with peat.Session(seed=1) as s, peat.Profiler(s, str(trace)) as prof:
        for step in range(calls):
            a = rng.random((64, 32), dtype=np.float32)
            b = rng.random((32, 48), dtype=np.float32)
            prof.record_op("fc/aten::mm", inputs=[a, b], outputs=[a @ b], step=step, force=True)
    return trace


def _summary_rows(html):
    """The summary table's body rows as lists of cell texts (unescaped)."""
    import html as h
    import re
    table = html[html.index('id="summary-table"'):]
    table = table[:table.index("</table>")]
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", table)[1:]
    return [[h.unescape(c) for c in re.findall(r"<td>(.*?)</td>", r)] for r in rows]


def test_report_takes_python_playback_verdicts_and_impact(tmp_path):
    trace = _gemm_trace(tmp_path)

    def bf16(ins, outs, call):
        outs[0][...] = _bf16(ins[0]) @ _bf16(ins[1])

    def tile_zero(ins, outs, call):
        outs[0][...] = ins[0] @ ins[1]
        outs[0][:16, :16] = 0.0  # one dropped tile per call

    steps = np.arange(60)
    golden = 2.0 * np.exp(-steps / 30.0)
    reruns = [golden + 0.01 * np.sin(steps + k) for k in range(1, 4)]
    band = peat.NoiseBand.from_runs([golden, *reruns], window=5)
    with peat.TraceReader(str(trace)) as reader, peat.Report(title="py <report>") as r:
        for name, fn in (("bf16", bf16), ("tile<zero>", tile_zero)):
            with peat.Playback(reader, candidate=fn) as pb:
                pb.run()
                r.add_playback(pb, name)
        r.add_noise_band(band, "train")
        r.add_fi_run("bf16", golden + 0.001, every=10)            # judged here: inside
        r.add_fi_run("bf16", golden + 0.5 * steps / 60, every=1)  # leaves the band
        r.add_fi_run("tile<zero>", golden, every=1, impact=band.judge(golden))
        assert r.focus_call("bf16") is not None
        html = r.html()
    rows = _summary_rows(html)
    assert [row[0] for row in rows] == ["bf16", "tile<zero>"]
    assert "<script" not in html and "tile&lt;zero&gt;" in html
    bf, tz = rows
    assert bf[1] == "REDUCED_PRECISION", bf
    assert "eff. mantissa bits" in bf[2] and "fc/aten::mm" in bf[2]
    assert bf[3].startswith("1 of 1")
    assert "1/10 0.1" in bf[4] or "1/10 0." in bf[4], bf[4]
    assert "1/1 " in bf[4] and "OUTSIDE" in bf[4]
    assert "stays inside run-to-run noise at 1/10 and leaves it at 1/1" in bf[5], bf[5]
    # The tile drop: an anomaly on every call, named before any floor.
    assert tz[1].split(" ")[0] in ("REGION", "DROPPED_WRITES"), tz
    assert "4 of 4 calls" in tz[1]
    assert "stays inside run-to-run noise at 1/1" in tz[5]
    # Sections in order: summary first, candidates, impact, the inventory last.
    ids = [m for m in __import__("re").findall(r'<section id="([^"]+)"', html)]
    assert ids[0] == "summary" and ids[1:3] == ["candidate-1", "candidate-2"] and "impact" in ids
    # One effective-bits figure per op: the one its verdict used (the key
    # parameter says the same), not a statistic of the merged signature.
    cand = html[html.index('id="candidate-1-ops"'):]
    cells = __import__("re").findall(r"<td>(.*?)</td>", cand[:cand.index("</table>")])
    assert cells[5].startswith(f"{float(cells[4]):.1f} eff. mantissa bits"), cells
    assert 6.0 <= float(cells[4]) <= 10.5, cells


def test_report_maps_the_call_its_anomaly_came_from(tmp_path):
    """The focus call is the one whose own verdict is the op's spatial anomaly
    (a dropped tile in call 2), not the call with most tolerance failures (the
    bf16 calls fail the tolerance almost everywhere)."""
    trace = _gemm_trace(tmp_path)

    def mixed(ins, outs, call):
        if call.call_index == 2:
            outs[0][...] = ins[0] @ ins[1]
            outs[0][:16, :16] = 0.0
        else:
            outs[0][...] = _bf16(ins[0]) @ _bf16(ins[1])

    with peat.TraceReader(str(trace)) as reader, peat.Report() as r, \
            peat.Playback(reader, candidate=mixed) as pb:
        pb.run()
        results = pb.results()
        worst = max(results, key=lambda x: x.tolerance_failures)
        tile = next(x for x in results if x.call_index == 2)
        assert worst.record != tile.record  # the worst call is a bf16 one
        r.add_playback(pb, "mixed")
        assert r.focus_call("mixed") == (tile.record, 0)
        assert r.focus_call("not added") is None
        row = _summary_rows(r.html())[0]
    # The anomaly leads, the floor under it is named, with the count of calls.
    assert row[1].startswith("REDUCED_PRECISION + ") and "(1 of 4 calls)" in row[1], row
