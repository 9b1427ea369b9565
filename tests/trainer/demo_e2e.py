#!/usr/bin/env python3
"""End-to-end test of the demo (examples/cpp_trainer/peat_demo.cpp), shortened:
trains the golden model (pretraining, checkpoint, new head, finetuning on
shifted labels) with a trace and three golden runs with other batch orders,
plays every candidate back, runs the detector, and runs runtime FI with the
blocked and the stuck-bit candidates on every GEMM call. Asserts each
candidate's verdict in report.json, that training with the blocked GEMM stays
inside the golden noise band in both stages while the stuck-bit one leaves it,
the band rule, the finetune loss series and the checkpoint drift.

usage: demo_e2e.py PEAT_DEMO LIBPEAT_CANDIDATES OUT_DIR"""
import json
import math
import subprocess
import sys

demo, lib, out = sys.argv[1:4]
WINDOW = 8
args = [demo, "--out", out, "--candidates-lib", lib, "--model", "cnn", "--epochs", "1",
        "--train-size", "1600", "--finetune-size", "1280", "--test-size", "300", "--record-every", "20",
        "--window", str(WINDOW), "--fi-candidates", "peat_cand_blocked", "peat_cand_stuck_bit27", "--fi-every", "1"]
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
for name, row in rows.items():
    expect(row["playback"]["failed"] == 0 and row["playback"]["records"] > 0, f"{name}: playback {row['playback']}")

# Two stages: 25 pretraining steps, then 20 finetuning steps on shifted labels.
ft = report["finetune"]
expect(report["steps"] == 25 and ft["steps"] == 20 and ft["first_step"] == 25 and ft["label_shift"] == 3,
       f"steps: pretrain {report['steps']}, finetune {ft['steps']} from {ft['first_step']}")
g = ft["loss_series"]["golden"]
expect(g["steps"] == list(range(25, 45)) and len(g["loss"]) == 20 and all(math.isfinite(x) for x in g["loss"]),
       f"finetune golden loss series: {g}")
expect(len(report["loss_series"]["golden"]["loss"]) == 25, "pretraining golden loss series")

# The band: 1.5 x the largest deviation of the three other-order golden runs, per stage.
others = report["golden_other_orders"]
expect(len(others) == 3 and all(o["max_deviation"] > 0 and o["finetune_max_deviation"] > 0 for o in others),
       f"three other-order golden runs with non-zero deviations: {others}")
expect(math.isclose(report["noise_band"], 1.5 * max(o["max_deviation"] for o in others), rel_tol=1e-6),
       f"pretraining band {report['noise_band']} = 1.5 x max deviation")
expect(math.isclose(ft["noise_band"], 1.5 * max(o["finetune_max_deviation"] for o in others), rel_tol=1e-6),
       f"finetuning band {ft['noise_band']} = 1.5 x max deviation")
expect(all(o["pretrain"]["inside_band"] and o["finetune"]["inside_band"] for o in others),
       "each other-order golden run lies inside the band made from them")
expect(report["noise_band_reruns"] == 3 and report["noise_band_factor"] == 1.5,
       f"the library's rule: k = 3 reruns, factor 1 + 1.5 / k, got {report['noise_band_reruns']}, "
       f"{report['noise_band_factor']}")

# Runtime FI on every call: the blocked GEMM stays inside the band, the stuck bit leaves it
# (verdict, and the effect in band units: <= 1 inside, > 1 outside).
fi = rows["peat_cand_blocked"]["runtime_fi"]
expect(len(fi) == 1 and fi[0]["candidate_calls"] > 0 and fi[0]["inside_band"] and fi[0]["finetune"]["inside_band"]
       and fi[0]["impact"] == fi[0]["finetune"]["impact"] == "INSIDE_NOISE"
       and fi[0]["effect"] <= 1 and fi[0]["finetune"]["effect"] <= 1,
       f"blocked GEMM on every call: inside the golden noise band in both stages, got {fi}")
fi = rows["peat_cand_stuck_bit27"]["runtime_fi"]
expect(len(fi) == 1 and fi[0]["candidate_calls"] > 0 and not fi[0]["inside_band"] and fi[0]["beyond_band_steps"] > 0
       and fi[0]["impact"] == "OUTSIDE_NOISE" and (fi[0]["effect"] is None or fi[0]["effect"] > 1),
       f"stuck bit 27 on every call: outside the golden noise band, got {fi}")

# Checkpoint drift of the final parameters, per tensor, for every compared run.
drift = report["checkpoint_drift"]
expect(set(drift) == {o["label"] for o in others} | {"peat_cand_blocked 1/1", "peat_cand_stuck_bit27 1/1"},
       f"checkpoint_drift labels: {sorted(drift)}")
for label, tensors in drift.items():
    names = [t["tensor"] for t in tensors]
    expect(names == sorted(names) and "conv1.weight" in names and "head.weight" in names
           and all(set(t) == {"tensor", "count", "rmse", "relative_l2", "max_abs_error"} for t in tensors)
           and all(t["count"] > 0 for t in tensors), f"checkpoint_drift[{label}]: {tensors}")
conv1 = {t["tensor"]: t for t in drift["peat_cand_blocked 1/1"]}["conv1.weight"]
expect(conv1["count"] == 16 * 9 and conv1["rmse"] > 0, f"blocked: conv1.weight drift {conv1}")
if failures:
    print("FAILED:\n  " + "\n  ".join(failures))
    sys.exit(1)
print("demo end to end: all verdicts as expected")
