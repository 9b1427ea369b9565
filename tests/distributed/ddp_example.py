#!/usr/bin/python3
"""The 2-process DDP example under torch.distributed (gloo, CPU) and the
cross-rank check with its failures.

Usage: ddp_example.py PEAT WORK_DIR SCHEMA_DIR   (PEAT_LIBRARY and PYTHONPATH set by ctest)

1. examples/python/ddp_digits.py with `python3 -m torch.distributed.run
   --nproc_per_node 2`: one trace per rank, the same run id in both, the
   bf16 playback verdict on each rank, `peat compare --ranks` consistent.
2. --allreduce own (each rank sums the buckets in its own order): the compare
   names step 0, the all-reduce, rank 1.
3. Failures, each naming rank and file, exit 3: traces of two runs mixed, a
   missing rank file, world sizes that disagree, a rank given twice.
"""
import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys

from schemas import schema_error

import peat

peat_tool, work, schema_dir = sys.argv[1:4]
work = pathlib.Path(work)
shutil.rmtree(work, ignore_errors=True)
work.mkdir(parents=True)
example = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python" / "ddp_digits.py"
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def validate(doc, name, label):
    error = schema_error(doc, schema_dir, name)
    if error:
        failures.append(f"{label}: {error}")


def free_port():
    # The launcher's default master port (29500) is shared by every run on the
    # machine: two suites running at once would join each other's rendezvous.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(out, *extra):
    # --redirects 1 --tee 1: Debian's torch 1.13 launcher cannot parse its own
    # default "0" under Python 3.11 (Std.from_str returns None), so say it.
    cmd = [sys.executable, "-m", "torch.distributed.run", "--master_port", str(free_port()), "--nproc_per_node", "2",
           "--redirects", "1", "--tee", "1",
           "--log_dir", str(work / "logs"), str(example), "--out", str(out), "--peat", peat_tool, *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=240)


def compare(*traces):
    return subprocess.run([peat_tool, "compare", "--ranks", *map(str, traces), "--json"], capture_output=True,
                          text=True, timeout=60)


def run_id(path):
    with peat.TraceReader(path) as r:
        return r.tags().get("run_id")


golden = work / "golden"
p = torchrun(golden, "--steps", "3")
check(p.returncode == 0, f"golden run: exit {p.returncode}; {p.stdout[-800:]} {p.stderr[-800:]}")
r0, r1 = golden / "ddp.rank0.peat", golden / "ddp.rank1.peat"
check(r0.exists() and r1.exists(), "golden run: the rank traces are missing")
check(run_id(r0) == run_id(r1) and run_id(r0), f"golden run: run ids {run_id(r0)!r} {run_id(r1)!r}")
check("consistent" in p.stdout, f"golden run: the cross-rank check is not consistent: {p.stdout[-800:]}")
check(p.stdout.count("playback bf16: ") == 2 and "REDUCED_PRECISION" in p.stdout,
      f"golden run: no bf16 playback verdict on both ranks: {p.stdout[-800:]}")

check("rank 0's trace replayed over 2 ranks: " in p.stdout, f"golden run: no distributed playback: {p.stdout[-600:]}")

# The same partition driven from Python in one process: shares merged == one playback, byte for byte.
import torch  # noqa: E402
import peat.torch as pt  # noqa: E402

cand = pt.playback_candidate(pt.autocast_candidate(torch.bfloat16))
with peat.TraceReader(r0) as reader:
    full = peat.Playback(reader, candidate=cand, op_glob="*aten::addmm")
    full.run()
    full.write_jsonl(work / "full.jsonl")
    shares = [peat.Playback(reader, candidate=cand, op_glob="*aten::addmm", partition=(k, 3)) for k in range(3)]
    for sh in shares:
        sh.run()
    for sh in shares[1:]:
        shares[0].import_results(sh.export_results())
    shares[0].write_jsonl(work / "merged.jsonl")
    check((work / "full.jsonl").read_bytes() == (work / "merged.jsonl").read_bytes(),
          "Python partition: 3 shares merged differ from one playback")
    check(sum(sh.share(k)[2] for k, sh in enumerate(shares)) == full.summary().done, "Python partition: shares")
    for sh in [full, *shares]:
        sh.close()

own = work / "own"
p = torchrun(own, "--steps", "2", "--allreduce", "own")
check("DIVERGED at step 0: collective ddp/c10d::allreduce" in p.stdout and "rank 1" in p.stdout,
      f"own-order all-reduce: the divergence is not named: {p.stdout[-800:]} {p.stderr[-500:]}")
q = compare(own / "ddp.rank0.peat", own / "ddp.rank1.peat")
validate(json.loads(compare(r0, r1).stdout), "compare-ranks.schema.json", "consistent compare")
if q.returncode == 1:
    validate(json.loads(q.stdout), "compare-ranks.schema.json", "divergent compare")
    d = json.loads(q.stdout)["first_divergence"]
    check(d["step"] == 0 and d["kind"] == "collective" and d["rank"] == 1 and d["bitwise_mismatches"] > 0,
          f"own-order all-reduce: first divergence {d}")
else:
    failures.append(f"own-order compare: exit {q.returncode}, expected 1; {q.stderr}")


# A buggy collective (the last rank's bucket left out, the same on every rank):
# the ranks agree, the check of the collective finds no rounding difference.
drop = work / "drop"
p = torchrun(drop, "--steps", "2", "--allreduce", "drop")
q = compare(drop / "ddp.rank0.peat", drop / "ddp.rank1.peat")
try:
    doc = json.loads(q.stdout)
    validate(doc, "compare-ranks.schema.json", "buggy collective")
    check(doc["consistent"], "buggy collective: the ranks should agree")
    top = doc["collectives"][0]["verdicts"][0]["model"]
    check(top not in ("EXACT", "ROUNDING"), f"buggy collective judged {top}")
    golden_top = json.loads(compare(r0, r1).stdout)["collectives"][0]["verdicts"][0]["model"]
    check(golden_top in ("EXACT", "ROUNDING"), f"golden collective judged {golden_top}")
    print(f"collective: golden {golden_top}, buggy {top}")
except (ValueError, KeyError, IndexError) as e:
    failures.append(f"buggy collective: no usable JSON ({e}); {q.stderr} {p.stdout[-500:]}")


def refused(label, traces, *needles):
    q = compare(*traces)
    check(q.returncode == 3, f"{label}: exit {q.returncode}, expected 3; {q.stderr.strip()}")
    for n in needles:
        check(str(n) in q.stderr, f"{label}: the error does not name {n}: {q.stderr.strip()}")


refused("mixed runs", [r0, own / "ddp.rank1.peat"], "different runs", "rank 1", own / "ddp.rank1.peat")
refused("missing rank", [r0], "rank 1 of 2 is missing", golden / "ddp.rank1.peat")
refused("missing file", [r0, golden / "ddp.rank7.peat"], "rank 7", "ddp.rank7.peat")
refused("rank twice", [r0, r0], "rank 0 is given twice")
# a trace of the same run that claims a world of 3
odd = work / "odd.rank1.peat"
with peat.Session(rank=1, world_size=3) as s, peat.Profiler(s, odd, tags={"run_id": run_id(r0)}) as prof:
    prof.mark_step(0)
refused("world sizes", [r0, odd], "world sizes disagree", "rank 1", odd)

for f in failures:
    print("FAIL:", f)
print(f"ddp_example: {len(failures)} failures")
sys.exit(1 if failures else 0)
