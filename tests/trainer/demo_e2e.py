#!/usr/bin/env python3
"""End-to-end test of the demo (examples/cpp_trainer/peat_demo.cpp), shortened:
trains the golden model with a trace, plays every candidate back, runs the
detector, and runs runtime FI with the blocked candidate on every GEMM call.
Asserts each candidate's verdict in report.json and that training with the
blocked GEMM stays inside the golden noise band.

usage: demo_e2e.py PEAT_DEMO LIBPEAT_CANDIDATES OUT_DIR"""
import json
import subprocess
import sys

demo, lib, out = sys.argv[1:4]
args = [demo, "--out", out, "--candidates-lib", lib, "--model", "cnn", "--epochs", "1",
        "--train-size", "1200", "--test-size", "300", "--record-every", "20",
        "--fi-candidates", "peat_cand_blocked", "--fi-every", "1"]
proc = subprocess.run(args, capture_output=True, text=True, timeout=600)
print(proc.stdout)
print(proc.stderr, file=sys.stderr)
assert proc.returncode == 0, f"peat_demo exited with {proc.returncode}"
report = json.load(open(f"{out}/report.json"))
rows = {c["name"]: c for c in report["candidates"]}
failures = []


def top(name):
    return rows[name]["detection"]["verdicts"][0]


def expect(cond, what):
    if not cond:
        failures.append(what)


v = top("peat_cand_bf16")
expect(v["model"] == "REDUCED_PRECISION" and 6.5 <= v["effective_mantissa_bits"] <= 8.5,
       f"bf16: REDUCED_PRECISION with 7-8 effective mantissa bits, got {v}")
v = top("peat_cand_tile_drop")
expect(v["model"] in ("REGION", "DROPPED_WRITES"), f"tile_drop: REGION or DROPPED_WRITES, got {v}")
v = top("peat_cand_stuck_bit27")
expect(v["model"] == "STUCK_AT" and v["bit"] == 27 and v["lane_period"] == 32,
       f"stuck_bit27: STUCK_AT bit 27 period 32, got {v}")
v = top("peat_cand_splitk_racy")
expect(v["model"] == "NONDETERMINISM", f"splitk_racy run twice: NONDETERMINISM, got {v}")
fi = rows["peat_cand_blocked"]["runtime_fi"]
expect(len(fi) == 1 and fi[0]["candidate_calls"] > 0 and fi[0]["inside_band"],
       f"blocked GEMM on every call: inside the golden noise band, got {fi}")
for name, row in rows.items():
    expect(row["playback"]["failed"] == 0 and row["playback"]["records"] > 0, f"{name}: playback {row['playback']}")
if failures:
    print("FAILED:\n  " + "\n  ".join(failures))
    sys.exit(1)
print("demo end to end: all verdicts as expected")
