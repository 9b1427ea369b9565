#!/usr/bin/python3
"""`peat info` and `peat verify --recover` on the traces of issue 23.

Usage: trace_outputs.py PEAT REGRESSIONS_DIR SCHEMA_DIR WORK_DIR
(PEAT_LIBRARY and PYTHONPATH name the library and bindings/python.)

Checks: phase "other" counted apart from forward (text and JSON); one codec
ratio convention (encoded / raw); the op column as wide as the longest name;
control characters escaped in text output; a crafted non-UTF-8 trace refused
with a one-line error naming the record (never exit 5); recovery of odd but
valid values exits 1 (incomplete input), keeps them, and names the input; a
FIFO is refused at once.
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys

import jsonschema
import numpy as np

import peat

peat_bin, regressions, schema_dir, work = sys.argv[1:5]
regressions, work = pathlib.Path(regressions), pathlib.Path(work)
shutil.rmtree(work, ignore_errors=True)
work.mkdir(parents=True)
failures = []


def run(*args, expect=None, timeout=60):
    p = subprocess.run([peat_bin, *map(str, args)], capture_output=True, timeout=timeout)
    for stream in ("stdout", "stderr"):  # every output is UTF-8
        try:
            setattr(p, stream, getattr(p, stream).decode("utf-8"))
        except UnicodeDecodeError as e:
            failures.append(f"{' '.join(map(str, args))}: {stream} is not UTF-8 ({e})")
            setattr(p, stream, getattr(p, stream).decode("utf-8", "replace"))
    if expect is not None and p.returncode != expect:
        failures.append(f"{' '.join(map(str, args))}: exit {p.returncode}, expected {expect}; "
                        f"stderr: {p.stderr.strip()[:400]}")
    return p


def check(cond, what):
    if not cond:
        failures.append(what)


# ---- a trace with forward, backward and "other" ops, one with a long name ----
trace = work / "phases.peat"
long_name = "aten::" + "very_long_operator_name_" * 3
s = peat.Session(run_name="cli-trace-outputs")
with peat.Profiler(s, trace) as p:
    x = np.zeros(4096, np.float32)
    for phase, n in (("forward", 2), ("backward", 1), ("other", 3)):
        for _ in range(n):
            p.record_op("aten::mm", inputs=[x], outputs=[x], phase=phase, force=True)
    p.record_op(long_name, inputs=[x], phase="forward", force=True)
s.close()

info = json.loads(run("info", trace, "--json", expect=0).stdout)
schema = json.loads((pathlib.Path(schema_dir) / "info.schema.json").read_text())
try:
    jsonschema.Draft7Validator(schema).validate(info)
except jsonschema.ValidationError as e:
    failures.append(f"info --json does not match info.schema.json: {e.message}")
mm = next(o for o in info["ops"] if o["name"] == "aten::mm")
check((mm["forward"], mm["backward"], mm["optimizer"], mm.get("other")) == (2, 1, 0, 3),
      f"info --json: aten::mm counts {mm}")
t = info["tensors"]
check(abs(t["codec_ratio"] - t["encoded_bytes"] / t["raw_bytes"]) < 1e-12 and t["codec_ratio"] < 1,
      f"info --json: codec_ratio {t['codec_ratio']} is not encoded/raw ({t['encoded_bytes']}/{t['raw_bytes']})")

text = run("info", trace, expect=0).stdout
check("(encoded/raw)" in text, "info: the codec ratio does not say encoded/raw")
table = text[text.index("\nop ") + 1:].splitlines()
check(len({len(line) for line in table}) == 1, f"info: op table columns not aligned: {table!r}")
header = table[0].split()
row = next(line for line in table if line.startswith("aten::mm ")).split()
cols = dict(zip(header, row))
check((cols.get("fwd"), cols.get("bwd"), cols.get("other")) == ("2", "1", "3"), f"info: aten::mm row {row}")
ratio = float(row[-1])
check(abs(ratio - mm["encoded_bytes"] / mm["raw_bytes"]) < 1e-3, f"info: per-op ratio {ratio} is not encoded/raw")

# ---- strings: a crafted non-UTF-8 trace, and control characters ----
crafted = regressions / "issue23-non_utf8"
for args in (("info", crafted, "--json"), ("info", crafted)):
    p = run(*args, expect=3)
    lines = [line for line in p.stderr.splitlines() if line.strip()]
    check(len(lines) == 1 and "record 1 at byte" in lines[0] and "UTF-8" in lines[0],
          f"{args}: error does not name the record: {p.stderr!r}")
copy = work / "recovered.peat"
p = run("verify", crafted, "--recover", copy, expect=1)
check("recovered 3 records" in p.stdout, f"verify --recover (non-UTF-8): {p.stdout!r}")
text = run("info", copy, expect=0).stdout
check("\x1b" not in text and "\x07" not in text, "info: raw control characters in the text output")
check("\\x1B[31mred\\x1B[0m\\x07" in text, f"info: control characters not escaped: {text!r}")
names = [o["name"] for o in json.loads(run("info", copy, "--json", expect=0).stdout)["ops"]]
check("\x1b[31mred\x1b[0m\x07" in names, f"info --json: op names {names!r}")

# ---- recovery of odd but valid values ----
odd = regressions / "issue23-odd_values"
copy = work / "odd.peat"
p = run("verify", odd, "--recover", copy, expect=1)
check("recovered 8 records" in p.stdout and "damaged payload" in p.stdout, f"verify --recover (odd): {p.stdout!r}")
with peat.TraceReader(odd, recover=True) as r:
    want = [(x.kind, x.name, x.step, x.unix_ns) for x in r if x.name != "damaged"]
with peat.TraceReader(copy) as c:
    got = [(x.kind, x.name, x.step, x.unix_ns) for x in c]
check(got == want, f"recovered copy differs: {got} vs {want}")
run("verify", copy, expect=0)

# ---- a FIFO is refused at once ----
fifo = work / "pipe.peat"
os.mkfifo(fifo)
try:
    p = run("info", fifo, expect=2, timeout=20)  # INVALID_ARGUMENT, as for a directory
    check("not a regular file" in p.stderr, f"info on a FIFO: {p.stderr!r}")
except subprocess.TimeoutExpired:
    failures.append("info on a FIFO without a writer hangs")

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("trace outputs: all checks passed")
