#!/usr/bin/python3
"""The HTML report rendered in headless Chromium, read as a kernel developer
reads it: top-down.

Usage: report_chromium.py PEAT PEAT_TRAIN CANDIDATES_LIB WORK_DIR SCHEMA_DIR

Builds a report from a trace recorded by peat_train, a small trace whose op
name holds markup (written here with the Python package), playback JSON
lines, a runtime-FI JSON (validated against docs/schemas/runtime-fi.schema.json)
with seven runs of one candidate, golden reruns, a finetune stage and
checkpoint drift, and three replayed candidates. In Debian's chromium
(--headless --no-sandbox --disable-gpu) it checks: the summary section comes
first and has one row per candidate; every chart expected is in the DOM with
drawn elements and a bounded height; no chart draws more than its series
limit; input markup is shown as text, never run. Skips (exit code 77) when
chromium is not installed or cannot start here.
"""
import html.parser
import json
import pathlib
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

import numpy as np

import peat as peat_py

peat, peat_train, candidates, work, schema_dir = sys.argv[1:6]
MAX_SERIES, MAX_HEIGHT = 6, 700
chromium = shutil.which("chromium") or shutil.which("chromium-browser")
if not chromium:
    print("SKIP: chromium is not installed (scripts/install-deps.sh installs Debian's chromium)")
    sys.exit(77)
work = pathlib.Path(work)
shutil.rmtree(work, ignore_errors=True)
work.mkdir(parents=True)
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def browser(profile, *args):
    return subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}",
                           "--window-size=1280,2000", "--virtual-time-budget=2000", *args],
                          capture_output=True, text=True, timeout=120)


with tempfile.TemporaryDirectory() as profile:
    probe = work / "probe.html"
    probe.write_text("<!DOCTYPE html><html><body><p id=probe>ok</p></body></html>")
    try:
        p = browser(profile, "--dump-dom", probe.as_uri())
        usable = p.returncode == 0 and "probe" in p.stdout
    except (OSError, subprocess.TimeoutExpired) as e:
        usable, p = False, e
    if not usable:
        print(f"SKIP: chromium cannot render a page here: {getattr(p, 'stderr', p)!s:.300}")
        sys.exit(77)

# A trace whose op name holds markup: the page must show it as text.
evil_op = "fc<script>alert(1)</script>/aten::mm"
markup_trace = work / "markup.peat"
rng = np.random.default_rng(3)
with peat_py.Session(seed=1) as s, peat_py.Profiler(s, str(markup_trace)) as prof:
    for step in range(3):
        a = rng.random((256, 64), dtype=np.float32)
        b = rng.random((64, 128), dtype=np.float32)
        prof.record_op(evil_op, inputs=[a, b], outputs=[a @ b], step=step, force=True)

trace = work / "golden.peat"
subprocess.run([peat_train, "--model", "mlp", "--epochs", "1", "--finetune-epochs", "0", "--train-size", "256",
                "--test-size", "64", "--record-every", "4", "--trace", str(trace)], check=True, capture_output=True,
               timeout=120)
jsonl = work / "playback.jsonl"
subprocess.run([peat, "playback", str(trace), "--candidate", f"{candidates}:peat_cand_bf16_kernel", "--jsonl", str(jsonl)],
               capture_output=True, timeout=120)
steps = list(range(40))
golden = [2.3 * 0.97 ** s for s in steps]
series = {"golden": {"steps": steps, "loss": golden}}
runs = []
for k, every in enumerate([1, 2, 5, 10, 20, 50, 100]):  # seven runs: two loss charts of <= 6 lines
    label = f"peat_cand_bf16 1/{every}"
    series[label] = {"steps": steps, "loss": [g * (1 + 0.01 * k * s / 40) for s, g in zip(steps, golden)]}
    runs.append({"every": every, "label": label, "candidate_calls": 400 // every, "impact": "INSIDE_NOISE" if k < 4 else "OUTSIDE_NOISE",
                 "effect": 0.2 * k, "first_beyond_step": 30 if k >= 4 else -1, "beyond_band_steps": 5 if k >= 4 else 0,
                 "final_delta": 0.01 * k, "test_accuracy": 0.8})
    if every == 10:
        runs[-1]["finetune"] = {"impact": "INSIDE_NOISE", "effect": 0.4, "first_beyond_step": -1}
for seed in (7, 13, 29):
    series[f"golden order {seed}"] = [g * (1 + 0.005 * ((seed + s) % 3 - 1)) for s, g in zip(steps, golden)]
runtime = {
    "schema_version": 1,
    "model": "mlp <script>alert(2)</script>",  # must be escaped, never run
    "noise_band": 0.05, "noise_band_reruns": 3, "noise_band_factor": 1.5, "loss_window": 5,
    "loss_series": series,
    "candidates": [{"name": "peat_cand_bf16", "verdict": "REDUCED_PRECISION (8.0 eff. mantissa bits)",
                    "playback": {"records": 10, "exact": 0}, "runtime_fi": runs},
                   {"name": "json_only <b>cand</b>", "verdict": "STUCK_AT (bit 27 = 1)",
                    "detection": {"verdicts": [{"model": "STUCK_AT", "confidence": 0.9, "evidence": ["bit 27 set & friends"]}]}}],
    "finetune": {"noise_band": 0.08, "first_step": 40,
                 "loss_series": {"golden": [1.0 - 0.01 * s for s in steps], "peat_cand_bf16 1/10": [1.0 - 0.009 * s for s in steps]}},
    "checkpoint_drift": {"peat_cand_bf16 1/10": [{"tensor": "fc1.weight", "count": 4096, "rmse": 1e-3, "relative_l2": 2e-3, "max_abs_error": 0.01},
                                                 {"tensor": "fc2.weight", "count": 1280, "rmse": 5e-4, "relative_l2": 1e-3, "max_abs_error": 0.004}]},
    "a_key_with_loss_in_its_name": [5, 4, 3],  # not a loss curve: the schema names the curves
    "unknown_key": {"ignored": [1, 2, 3]},
}
runtime_json = work / "runtime.json"
runtime_json.write_text(json.dumps(runtime))
try:
    import jsonschema
    jsonschema.validate(runtime, json.loads((pathlib.Path(schema_dir) / "runtime-fi.schema.json").read_text()))
except ImportError:
    print("note: python3-jsonschema missing; the runtime JSON was not validated")
except jsonschema.ValidationError as e:
    failures.append(f"runtime.json does not match runtime-fi.schema.json: {e.message}")

page = work / "report.html"
p = subprocess.run([peat, "report", str(trace), str(markup_trace), str(jsonl), str(runtime_json),
                    *[x for c in ("bf16", "tile_drop", "stuck_bit27") for x in ("--candidate", f"{candidates}:peat_cand_{c}_kernel")],
                    "-o", str(page)], capture_output=True, text=True, timeout=120)
check(p.returncode == 0, f"peat report: exit {p.returncode}: {p.stderr}")
text = page.read_text()
check("<script" not in text, "the page holds a <script> element (unescaped input?)")
check("http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', ""), "the page references a network resource")

with tempfile.TemporaryDirectory() as profile:
    dom = browser(profile, "--dump-dom", page.as_uri())
    png = work / "report.png"
    shot = browser(profile, f"--screenshot={png}", page.as_uri())
check(dom.returncode == 0 and "</html>" in dom.stdout, f"chromium --dump-dom failed: {dom.returncode} {dom.stderr[-500:]}")
check(shot.returncode == 0 and png.exists(), f"chromium --screenshot failed: {shot.returncode} {shot.stderr[-500:]}")
check("Uncaught" not in dom.stderr and "ERR_FILE_NOT_FOUND" not in dom.stderr, f"page errors: {dom.stderr[-500:]}")


class Page(html.parser.HTMLParser):
    """Sections in order, the summary table's rows, per chart (svg id) its
    height, data-series and drawn elements, the text of table cells, and any
    script element."""

    def __init__(self):
        super().__init__()
        self.sections, self.stack, self.charts, self.cells, self.scripts = [], [], {}, [], 0
        self.cell, self.in_summary, self.summary_rows, self.first_table_before_summary = None, False, [], False
        self.tables = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script":
            self.scripts += 1
        if tag == "section":
            self.sections.append(a.get("id", ""))
        if tag == "table":
            self.tables += 1
            if not self.sections:
                self.first_table_before_summary = True
            self.in_summary = a.get("id") == "summary-table"
        if tag == "tr" and self.in_summary:
            self.summary_rows.append([])
        if tag == "td":
            self.cell = ""
        if tag == "svg":
            self.stack.append(a.get("id", ""))
            self.charts[self.stack[-1]] = {"height": float(a.get("height", "0")), "series": a.get("data-series"),
                                           "drawn": 0, "lines": 0}
        elif self.stack and tag in ("rect", "line", "polyline", "polygon"):
            self.charts[self.stack[-1]]["drawn"] += 1
            if tag == "polyline":
                self.charts[self.stack[-1]]["lines"] += 1

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data

    def handle_endtag(self, tag):
        if tag == "td" and self.cell is not None:
            self.cells.append(self.cell)
            if self.in_summary and self.summary_rows:
                self.summary_rows[-1].append(self.cell)
            self.cell = None
        if tag == "table":
            self.in_summary = False
        if tag == "svg" and self.stack:
            self.stack.pop()


doc = Page()
doc.feed(dom.stdout)
# Summary first, one row per candidate, the inventory last.
check(doc.sections[:1] == ["summary"], f"the first section is {doc.sections[:1]}, not summary")
check(not doc.first_table_before_summary, "a table comes before the summary")
check(doc.sections[-1:] == ["inventory"], f"the last section is {doc.sections[-1:]}, not the inventory")
names = [r[0] for r in doc.summary_rows if r]
check(names == ["peat_cand_bf16", "peat_cand_tile_drop", "peat_cand_stuck_bit27", "json_only <b>cand</b>"],
      f"summary rows: {names}")
rows = {r[0]: r for r in doc.summary_rows if r}
bf16 = rows.get("peat_cand_bf16", [""] * 6)
check(bf16[1] == "REDUCED_PRECISION", f"bf16 verdict: {bf16}")
check("eff. mantissa bits" in bf16[2], f"bf16 key parameter: {bf16}")
check("1/100 1.2 OUTSIDE" in bf16[4] and "1/1 0" in bf16[4], f"bf16 impact: {bf16[4]}")
check("stays inside run-to-run noise at 1/1, 1/2, 1/5, 1/10 and leaves it at 1/20, 1/50, 1/100" in bf16[5],
      f"bf16 sentence: {bf16[5]}")
stuck = rows.get("peat_cand_stuck_bit27", [""] * 6)
# The anomaly leads (which one is the Detector's call: STUCK_AT or flips of bit 27).
check(" + " in stuck[1] or "calls" in stuck[1], f"stuck-bit row names no anomaly: {stuck}")
check("bit 27" in stuck[2], f"stuck-bit row: {stuck}")
# Every chart present, drawn, bounded; no chart over its series limit.
expected = ["chart-cand-1-steps-1", "chart-cand-1-loss-1-1", "chart-cand-1-loss-1-2", "chart-cand-1-loss-2",
            "chart-cand-2-map", "chart-cand-3-map", "chart-reruns-1", "chart-drift", "chart-trace-1-scalar-1",
            "chart-playback-steps-1-1"]
for chart_id in expected:
    c = doc.charts.get(chart_id)
    check(c is not None and c["drawn"] >= 3, f"{chart_id}: {c}")
for chart_id, c in doc.charts.items():
    check(0 < c["height"] <= MAX_HEIGHT, f"{chart_id} is {c['height']} px tall (limit {MAX_HEIGHT})")
    check(c["lines"] <= MAX_SERIES, f"{chart_id} draws {c['lines']} lines (limit {MAX_SERIES})")
    check(c["series"] is None or int(c["series"]) <= MAX_SERIES, f"{chart_id}: data-series {c['series']}")
check("Playback run peat_cand_bf16" in dom.stdout and "Playback run run 1" not in dom.stdout,
      "the playback run is not labelled by its candidate")
check("a_key_with_loss_in_its_name" not in " ".join(k for k in doc.charts), "a non-schema key became a chart")
# Input markup is text: the op name and the model name appear as written, no script element exists.
check(doc.scripts == 0, f"{doc.scripts} script element(s) in the DOM")
check(any(evil_op in c for c in doc.cells), "the op name with <script> is not shown as text")
check(any("mlp <script>alert(2)</script>" in c for c in doc.cells), "the model name is not shown as text")

def png_pixels(path):
    """Decodes an 8-bit RGB/RGBA PNG: returns (width, height, channels, rows of bytes)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and colour in (2, 6), f"unexpected PNG format {depth}/{colour}"
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b, c = prev[i], prev[i - channels] if i >= channels else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return width, height, channels, rows



if png.exists():
    w, h, ch, rows_px = png_pixels(png)
    check((w, h) == (1280, 2000), f"screenshot is {w}x{h}")
    sample = [row[x * ch:x * ch + 3] for row in rows_px[::8] for x in range(0, w, 8)]
    coloured = sum(1 for px in sample if min(px) < 200)
    distinct = len({bytes(px) for px in sample})
    check(coloured > len(sample) * 0.01, f"screenshot is blank: {coloured} of {len(sample)} sampled pixels not white")
    check(distinct > 8, f"screenshot has only {distinct} colours")
    # The summary is at the top: the bad rows' tint (#fde8e8) shows in the first 900 px.
    tinted = sum(1 for row in rows_px[:900:4] for x in range(0, w, 4) if bytes(row[x * ch:x * ch + 3]) == bytes((0xfd, 0xe8, 0xe8)))
    check(tinted > 100, f"no flagged summary row in the first 900 px of the screenshot ({tinted} tinted pixels)")

if failures:
    print(f"{len(failures)} failure(s):")
    for f in failures:
        print("  -", f)
    sys.exit(1)
print(f"report rendered: {page.stat().st_size} bytes, {len(doc.charts)} charts, sections {doc.sections}")
