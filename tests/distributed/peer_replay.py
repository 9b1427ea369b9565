#!/usr/bin/python3
"""Peer replay localises a faulty device (`mpirun -n 4 peat playback --peer`).

Usage: peer_replay.py MPIRUN PEAT PEAT_TRAIN DIST_KERNELS SCHEMA_DIR WORK_DIR

Four rank traces are recorded with examples/cpp_trainer's peat_train, each
rank's GEMMs run by dist_gemm_device_kernel (tests/distributed/dist_kernels.c)
as on that rank's device; rank 2's device is faulty (the injector's STUCK_AT,
bit 21, on one lane of 32), so its trace holds corrupted outputs. Under
4 MPI ranks with the same devices, PEAT must name rank 2, PERSISTENT, STUCK_AT
with bit 21, and call the other ranks' traces KERNEL (reproduced by their own
and most devices). With the fault gone at replay time (no device reproduces
rank 2's outputs) rank 2 is TRANSIENT.
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys

from schemas import schema_error

mpirun, peat, peat_train, kernels, schema_dir, work = sys.argv[1:7]
work = pathlib.Path(work)
shutil.rmtree(work, ignore_errors=True)
work.mkdir(parents=True)
failures = []
MPI = [mpirun, "--oversubscribe", "--allow-run-as-root", "--mca", "btl", "self,vader"]
kernel = f"{kernels}:dist_gemm_device_kernel"


def check(cond, what):
    if not cond:
        failures.append(what)


def validate(doc, name, label):
    error = schema_error(doc, schema_dir, name)
    if error:
        failures.append(f"{label}: {error}")


traces = []
for r in range(4):
    path = work / f"run.rank{r}.peat"
    env = dict(os.environ, PEAT_TEST_RANK=str(r), PEAT_TEST_FAULTY_RANK="2")
    subprocess.run([peat_train, "--model", "mlp", "--epochs", "1", "--finetune-epochs", "0", "--train-size", "128",
                    "--test-size", "32", "--record-every", "2", "--seed", str(r + 1), "--trace", str(path),
                    "--fi-candidate", kernel, "--fi-every", "1"], check=True, capture_output=True, env=env, timeout=120)
    traces.append(str(path))


def peer(faulty, *extra):
    env = dict(os.environ)
    env.pop("PEAT_TEST_FAULTY_RANK", None)
    if faulty is not None:
        env["PEAT_TEST_FAULTY_RANK"] = str(faulty)
    cmd = [*MPI, "-x", "PEAT_TEST_FAULTY_RANK", "-n", "4", peat, "playback", "--peer", *traces, "--candidate", kernel,
           *extra] if faulty is not None else [*MPI, "-n", "4", peat, "playback", "--peer", *traces, "--candidate",
                                              kernel, *extra]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)


p = peer(2, "--json")
try:
    doc = json.loads(p.stdout)
    validate(doc, "peer-replay.schema.json", "peer replay")
    by_rank = {t["rank"]: t for t in doc["traces"]}
    check(doc["faulty_ranks"] == [2], f"faulty ranks {doc['faulty_ranks']}, expected [2]")
    t2 = by_rank[2]
    check(t2["class"] == "PERSISTENT", f"rank 2 is {t2['class']}, expected PERSISTENT")
    ev = t2.get("evidence", {})
    check(ev.get("op", {}).get("top") == "STUCK_AT" and ev["op"].get("bits") == [21],
          f"rank 2 evidence {ev}, expected STUCK_AT bits [21]")
    check(ev.get("device") != 2, "rank 2's evidence comes from its own device")
    for r in (0, 1, 3):
        check(by_rank[r]["class"] == "KERNEL" and by_rank[r]["deviating_devices"] == [2],
              f"rank {r}: {by_rank[r]['class']} deviating {by_rank[r]['deviating_devices']}, expected KERNEL [2]")
except (ValueError, KeyError) as e:
    failures.append(f"no usable JSON ({e}); exit {p.returncode}; stderr {p.stderr[-600:]!r}")

text = peer(2)
line = next((l for l in text.stdout.splitlines() if l.startswith("rank 2 ")), "")
print(line)
check("PERSISTENT" in line and "STUCK_AT" in line and "{21}" in line, f"text output: {text.stdout!r}")

p = peer(None, "--json")
try:
    doc = json.loads(p.stdout)
    by_rank = {t["rank"]: t for t in doc["traces"]}
    check(by_rank[2]["class"] == "TRANSIENT", f"fault gone: rank 2 is {by_rank[2]['class']}, expected TRANSIENT")
    check(doc["faulty_ranks"] == [], f"fault gone: faulty ranks {doc['faulty_ranks']}")
except (ValueError, KeyError) as e:
    failures.append(f"fault gone: no usable JSON ({e}); stderr {p.stderr[-600:]!r}")

for f in failures:
    print("FAIL:", f)
print(f"peer_replay: {len(failures)} failures")
sys.exit(1 if failures else 0)
