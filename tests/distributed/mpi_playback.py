#!/usr/bin/python3
"""`mpirun -n N peat playback` against one process, and a rank that dies.

Usage: mpi_playback.py MPIRUN PEAT PEAT_TRAIN CANDIDATES_LIB DIST_KERNELS SCHEMA_DIR WORK_DIR

Records two small traces with examples/cpp_trainer's peat_train, then checks
that rank 0's --json output (and --jsonl file) under mpirun is byte for byte
the single-process output for N = 1..4 (one trace) and N = 3 (both traces,
--repeat 2, -j 2), that only rank 0 writes stdout, and that a rank that dies
mid-playback leaves a partial result naming its rank and share, in bounded
time. Oversubscribed: N may exceed the cores.
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time

from schemas import schema_error

mpirun, peat, peat_train, candidates, dist_kernels, schema_dir, work = sys.argv[1:8]
work = pathlib.Path(work)
shutil.rmtree(work, ignore_errors=True)
work.mkdir(parents=True)
failures = []
MPI = [mpirun, "--oversubscribe", "--allow-run-as-root", "--mca", "btl", "self,vader"]


def check(cond, what):
    if not cond:
        failures.append(what)


def validate(doc, label):
    error = schema_error(doc, schema_dir, "playback.schema.json")
    if error:
        failures.append(f"{label}: {error}")


def playback(args, n=None, env=None, extra_mpi=()):
    cmd = [peat, "playback", *map(str, args)]
    if n is not None:
        cmd = [*MPI, *extra_mpi, "-n", str(n), *cmd]
    return subprocess.run(cmd, capture_output=True, timeout=120, env=env, cwd=work)


train = [peat_train, "--model", "mlp", "--epochs", "1", "--finetune-epochs", "0", "--train-size", "256",
         "--test-size", "64"]
a, b = work / "a.peat", work / "b.peat"
subprocess.run([*train, "--record-every", "2", "--trace", str(a)], check=True, capture_output=True, timeout=120)
subprocess.run([*train, "--record-every", "3", "--seed", "5", "--trace", str(b)], check=True, capture_output=True,
               timeout=120)

stuck = f"{candidates}:peat_cand_stuck_bit27_kernel"
blocked = f"{candidates}:peat_cand_blocked_kernel"

# ---- one trace, N = 1..4 ----
one = playback([a, "--candidate", stuck, "--json", "--jsonl", "one.jsonl"])
check(one.returncode == 1, f"single process: exit {one.returncode} (expected 1: findings); {one.stderr[-300:]!r}")
doc = json.loads(one.stdout)
validate(doc, "single process")
check(doc["summary"]["done"] > 8, f"trace too small: {doc['summary']}")
for n in range(1, 5):
    p = playback([a, "--candidate", stuck, "--json", "--jsonl", f"mpi{n}.jsonl"], n=n)
    check(p.stdout == one.stdout, f"N={n}: --json differs from the single process (exit {p.returncode}; "
                                  f"{p.stderr.decode()[-300:]!r})")
    check((work / f"mpi{n}.jsonl").read_bytes() == (work / "one.jsonl").read_bytes(), f"N={n}: --jsonl differs")

# ---- two traces, run twice, two threads per rank, text output too ----
args = [a, b, "--candidate", blocked, "--repeat", "2", "-j", "2"]
one = playback([*args, "--json"])
p = playback([*args, "--json"], n=3)
check(p.stdout == one.stdout and len(one.stdout) > 0, "two traces, N=3: --json differs from the single process")
validate(json.loads(one.stdout), "two traces")
one_text = playback(args)
p = playback(args, n=2)
check(p.stdout == one_text.stdout and b"a.peat with" in p.stdout and b"b.peat with" in p.stdout,
      "two traces, N=2: the text output differs from the single process")

# ---- a rank that dies mid-playback: the others finish, rank 0 names the missing share ----
env = dict(os.environ, PEAT_TEST_DIE_RANK="2")
start = time.monotonic()
p = playback([b, "--candidate", f"{dist_kernels}:dist_gemm_die_kernel", "--json", "--rank-timeout", "3"], n=4, env=env,
             extra_mpi=("--enable-recovery", "-x", "PEAT_TEST_DIE_RANK"))
took = time.monotonic() - start
check(took < 60, f"dead rank: took {took:.0f} s")
try:
    doc = json.loads(p.stdout)
    validate(doc, "dead rank")
    missing = doc.get("missing", [])
    check(len(missing) == 1 and missing[0]["rank"] == 2 and missing[0]["records"] > 0,
          f"dead rank: missing is {missing}")
    full = json.loads(playback([b, "--candidate", f"{dist_kernels}:dist_gemm_die_kernel", "--json"]).stdout)
    check(doc["summary"]["done"] + missing[0]["records"] == full["summary"]["done"],
          f"dead rank: {doc['summary']['done']} done + {missing[0]['records']} missing != {full['summary']['done']}")
    check(doc["findings"] is True, "dead rank: findings is not true")
    check(b"rank 2" in p.stderr and b"b.peat" in p.stderr, f"dead rank: stderr does not name rank and file: {p.stderr!r}")
except (ValueError, KeyError, IndexError) as e:
    failures.append(f"dead rank: no usable JSON on stdout ({e}); exit {p.returncode}; stderr {p.stderr[-500:]!r}")

# ---- rank 0 slower than the rank timeout: the others wait while it sends heartbeats ----
slow = f"{dist_kernels}:dist_gemm_slow_kernel"
one = playback([b, "--candidate", slow, "--json"])
env = dict(os.environ, PEAT_TEST_SLOW_RANK="0", PEAT_TEST_SLOW_MS="400")
p = playback([b, "--candidate", slow, "--json", "--rank-timeout", "2"], n=2, env=env,
             extra_mpi=("-x", "PEAT_TEST_SLOW_RANK", "-x", "PEAT_TEST_SLOW_MS"))
check(p.stdout == one.stdout and b"missing" not in p.stdout,
      f"slow rank 0: the result differs from one process or is partial; stderr {p.stderr[-500:]!r}")

for f in failures:
    print("FAIL:", f)
print(f"mpi_playback: {len(failures)} failures")
sys.exit(1 if failures else 0)
