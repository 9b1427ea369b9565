#!/usr/bin/python3
"""The HTML report rendered in headless Chromium.

Usage: report_chromium.py PEAT PEAT_TRAIN CANDIDATES_LIB WORK_DIR

Builds a report from a trace recorded here, its playback results, a runtime-FI
JSON with loss series, a noise band, a finetune stage and checkpoint drift,
and two replayed candidates; loads it in Debian's chromium (--headless
--no-sandbox --disable-gpu), and checks that the page loads, that every chart
is in the DOM with drawn elements, and that the screenshot is not blank.
Skips (exit code 77) when chromium is not installed.
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

peat, peat_train, candidates, work = sys.argv[1:5]
chromium = shutil.which("chromium") or shutil.which("chromium-browser")
if not chromium:
    print("SKIP: chromium is not installed (scripts/install-deps.sh installs it)")
    sys.exit(77)
work = pathlib.Path(work)
shutil.rmtree(work, ignore_errors=True)
work.mkdir(parents=True)
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


trace = work / "golden.peat"
subprocess.run([peat_train, "--model", "mlp", "--epochs", "1", "--finetune-epochs", "0", "--train-size", "256",
                "--test-size", "64", "--record-every", "4", "--trace", str(trace)], check=True, capture_output=True,
               timeout=120)
jsonl = work / "playback.jsonl"
subprocess.run([peat, "playback", str(trace), "--candidate", f"{candidates}:peat_cand_bf16_kernel", "--jsonl", str(jsonl)],
               capture_output=True, timeout=120)
steps = list(range(40))
golden = [2.3 * 0.97 ** s for s in steps]
runtime = {
    "schema_version": 1,
    "model": "mlp <script>alert(1)</script>",  # must be escaped, never run
    "noise_band": 0.05,
    "loss_series": {"golden": golden, "peat_cand_stuck_bit27 1/10": [g * (1 + 0.02 * s) for s, g in zip(steps, golden)]},
    "candidates": [{"name": "peat_cand_bf16", "verdict": "REDUCED_PRECISION (8.0 eff. mantissa bits)",
                    "playback": {"records": 10, "exact": 0},
                    "detection": {"verdicts": [{"model": "REDUCED_PRECISION", "confidence": 0.9,
                                                "evidence": ["relative errors below 2^-9 & friends"]}]},
                    "runtime_fi": [{"every": 10, "candidate_calls": 5, "final_loss": 0.5, "final_delta": 0.01,
                                    "test_accuracy": 0.8, "beyond_band_steps": 0, "inside_band": True}]}],
    "finetune": {"loss_series": {"golden": [1.0 - 0.01 * s for s in steps], "peat_cand_bf16 1/10": [1.0 - 0.009 * s for s in steps]}},
    "checkpoint_drift": {"peat_cand_bf16 1/10": [{"tensor": "fc1.weight", "count": 4096, "rmse": 1e-3, "relative_l2": 2e-3, "max_abs_error": 0.01},
                                                 {"tensor": "fc2.weight", "count": 1280, "rmse": 5e-4, "relative_l2": 1e-3, "max_abs_error": 0.004}],
                         "peat_cand_stuck_bit27 1/10": [{"tensor": "fc1.weight", "count": 4096, "rmse": 0.2, "relative_l2": 0.5, "max_abs_error": 3.0}]},
    "unknown_key": {"ignored": [1, 2, 3]},
}
runtime_json = work / "runtime.json"
runtime_json.write_text(json.dumps(runtime))
page = work / "report.html"
p = subprocess.run([peat, "report", str(trace), str(jsonl), str(runtime_json), "--candidate",
                    f"{candidates}:peat_cand_bf16_kernel", "--candidate", f"{candidates}:peat_cand_tile_drop_kernel",
                    "-o", str(page)], capture_output=True, text=True, timeout=120)
check(p.returncode == 0, f"peat report: exit {p.returncode}: {p.stderr}")
text = page.read_text()
check("<script" not in text, "the page holds a <script> element (unescaped input?)")
check("&lt;script&gt;alert(1)&lt;/script&gt;" in text, "the model name was not escaped")
check("http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', ""), "the page references a network resource")

with tempfile.TemporaryDirectory() as profile:
    base = [chromium, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}",
            "--window-size=1280,2000", "--virtual-time-budget=2000"]
    dom = subprocess.run([*base, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    png = work / "report.png"
    shot = subprocess.run([*base, f"--screenshot={png}", page.as_uri()], capture_output=True, text=True, timeout=120)
check(dom.returncode == 0 and "</html>" in dom.stdout, f"chromium --dump-dom failed: {dom.returncode} {dom.stderr[-500:]}")
check(shot.returncode == 0 and png.exists(), f"chromium --screenshot failed: {shot.returncode} {shot.stderr[-500:]}")
check("Uncaught" not in dom.stderr and "ERR_FILE_NOT_FOUND" not in dom.stderr, f"page errors: {dom.stderr[-500:]}")


class Charts(html.parser.HTMLParser):
    """Counts drawn elements (rect, line, polyline, polygon) per <svg id>."""

    def __init__(self):
        super().__init__()
        self.stack, self.drawn = [], {}

    def handle_starttag(self, tag, attrs):
        if tag == "svg":
            self.stack.append(dict(attrs).get("id", ""))
            self.drawn[self.stack[-1]] = 0
        elif self.stack and tag in ("rect", "line", "polyline", "polygon"):
            self.drawn[self.stack[-1]] += 1

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag):
        if tag == "svg" and self.stack:
            self.stack.pop()


charts = Charts()
charts.feed(dom.stdout)
expected = {"chart-rel-hist-1": 6, "chart-ulp-hist-1": 6, "chart-rel-hist-2": 3, "chart-ulp-hist-2": 3, "chart-xor-bits": 5, "chart-error-steps": 4,
            "chart-spatial-map": 3, "chart-playback-steps-1": 3, "chart-loss": 4, "chart-finetune-loss": 4, "chart-drift": 4}
for chart_id, minimum in expected.items():
    got = charts.drawn.get(chart_id)
    check(got is not None and got >= minimum, f"{chart_id}: {got} drawn elements, expected >= {minimum}")
for table_id in ["trace-1-ops", "signatures", "verdicts", "playback-1-ops", "runtime-1-candidates", "drift"]:
    check(f'id="{table_id}"' in dom.stdout, f"table {table_id} missing from the DOM")


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
    w, h, ch, rows = png_pixels(png)
    check((w, h) == (1280, 2000), f"screenshot is {w}x{h}")
    sample = [row[x * ch:x * ch + 3] for row in rows[::8] for x in range(0, w, 8)]
    coloured = sum(1 for px in sample if min(px) < 200)
    distinct = len({bytes(px) for px in sample})
    check(coloured > len(sample) * 0.01, f"screenshot is blank: {coloured} of {len(sample)} sampled pixels not white")
    check(distinct > 8, f"screenshot has only {distinct} colours")

if failures:
    print(f"{len(failures)} failure(s):")
    for f in failures:
        print("  -", f)
    sys.exit(1)
print(f"report rendered: {page.stat().st_size} bytes, charts {sorted(charts.drawn.items())}")
