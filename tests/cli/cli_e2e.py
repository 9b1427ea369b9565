#!/usr/bin/python3
"""End-to-end tests of the `peat` command-line tool on a trace recorded here.

Usage: cli_e2e.py PEAT PEAT_TRAIN CANDIDATES_LIB SCHEMA_DIR WORK_DIR

Records a small trace with examples/cpp_trainer's peat_train, then runs every
subcommand and checks exit codes, one-line errors on bad paths and bad or
truncated traces, and the JSON output against docs/schemas/*.schema.json.
"""
import json
import os
import pathlib
import pty
import shutil
import subprocess
import sys

import jsonschema

peat, peat_train, candidates, schema_dir, work = sys.argv[1:6]
work = pathlib.Path(work)
shutil.rmtree(work, ignore_errors=True)
work.mkdir(parents=True)
failures = []


def run(*args, expect=None, name=None):
    p = subprocess.run([peat, *map(str, args)], capture_output=True, text=True, timeout=120)
    label = name or " ".join(map(str, args[:2]))
    if expect is not None and p.returncode != expect:
        failures.append(f"{label}: exit {p.returncode}, expected {expect}; stderr: {p.stderr.strip()[:400]}")
    return p


def check(cond, what):
    if not cond:
        failures.append(what)


def one_line_error(p, must_name, label):
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    check(len(lines) == 1, f"{label}: error is not one line: {p.stderr!r}")
    check(any(must_name in l for l in lines), f"{label}: error does not name {must_name}: {p.stderr!r}")


def validate(doc, schema_name, label):
    store = {}
    for f in pathlib.Path(schema_dir).glob("*.schema.json"):
        s = json.loads(f.read_text())
        store[s["$id"]] = s
        store[f.name] = s
    schema = json.loads((pathlib.Path(schema_dir) / schema_name).read_text())
    resolver = jsonschema.RefResolver(base_uri=schema["$id"], referrer=schema, store=store)
    try:
        jsonschema.Draft7Validator(schema, resolver=resolver).validate(doc)
    except jsonschema.ValidationError as e:
        failures.append(f"{label}: JSON does not match {schema_name}: {e.message} at {list(e.path)}")


# ---- a trace recorded here, and a second one with the bf16 candidate GEMM ----
trace = work / "golden.peat"
bf16_trace = work / "bf16.peat"
train = [peat_train, "--model", "mlp", "--epochs", "1", "--finetune-epochs", "0", "--train-size", "256",
         "--test-size", "64", "--record-every", "4"]
subprocess.run([*train, "--trace", str(trace)], check=True, capture_output=True, timeout=120)
# Runtime FI with the bf16 candidate on every GEMM call: the second stack.
subprocess.run([*train, "--trace", str(bf16_trace), "--fi-candidate", f"{candidates}:peat_cand_bf16_kernel", "--fi-every", "1"],
               check=True, capture_output=True, timeout=120)

# ---- help and usage ----
for sub in ["", "info", "verify", "playback", "compare", "report", "demo"]:
    p = run(*([sub] if sub else []), "--help", expect=0, name=f"{sub or 'peat'} --help")
    check("Exit codes" in p.stdout, f"{sub} --help does not document the exit codes")
run(expect=2, name="no subcommand")
p = run("info", expect=2, name="info without TRACE")
one_line_error(p, "TRACE", "info without TRACE")
run("playback", trace, "--candidate", "x.so:y", "--repeat", "3", expect=2, name="playback --repeat 3")

# ---- info ----
p = run("info", trace, expect=0)
check("records" in p.stdout and "codec ratio" in p.stdout, "info: text lacks records / codec ratio")
(work / "info.txt").write_text(p.stdout)
p = run("info", trace, "--json", expect=0, name="info --json")
info = json.loads(p.stdout)
validate(info, "info.schema.json", "info --json")
check(info["records"]["op"] > 0 and info["records"]["scalar"] > 0, f"info: no op or scalar records: {info['records']}")
check(sum(o["records"] for o in info["ops"]) == info["records"]["op"], "info: per-op records do not add up")
check(info["tensors"]["codec_ratio"] and info["tensors"]["codec_ratio"] > 0, "info: no codec ratio")

# ---- bad paths and bad traces: one line naming the file, exit 3 ----
missing = work / "missing.peat"
p = run("info", missing, expect=3, name="info missing file")
one_line_error(p, str(missing), "info missing file")
garbage = work / "garbage.peat"
garbage.write_bytes(b"this is not a trace\n" * 10)
p = run("info", garbage, expect=3, name="info garbage")
one_line_error(p, str(garbage), "info garbage")
truncated = work / "truncated.peat"
data = trace.read_bytes()
truncated.write_bytes(data[: len(data) * 2 // 3])
p = run("info", truncated, expect=3, name="info truncated")
one_line_error(p, str(truncated), "info truncated")
check("--recover" in p.stderr, "info truncated: no hint to recover")

# ---- verify ----
p = run("verify", trace, expect=0)
check("OK" in p.stdout, "verify: no OK line")
p = run("verify", truncated, expect=1, name="verify truncated")
one_line_error(p, str(truncated), "verify truncated")
flipped = work / "flipped.peat"
b = bytearray(data)
b[len(b) // 2] ^= 0xFF
flipped.write_bytes(bytes(b))
p = run("verify", flipped, expect=1, name="verify flipped byte")
one_line_error(p, "flipped.peat", "verify flipped byte")
recovered = work / "recovered.peat"
p = run("verify", truncated, "--recover", recovered, expect=1, name="verify --recover")
check("incomplete" in p.stdout, "verify --recover: does not say the input was incomplete")
run("verify", recovered, expect=0, name="verify recovered")
rec_info = json.loads(run("info", recovered, "--json", expect=0).stdout)
check(0 < rec_info["records"]["total"] < info["records"]["total"],
      f"recovered trace holds {rec_info['records']['total']} of {info['records']['total']} records")
p = run("verify", missing, expect=3, name="verify missing")
one_line_error(p, str(missing), "verify missing")

# ---- playback ----
lib = candidates
p = run("playback", trace, "--candidate", f"{lib}:peat_cand_blocked_kernel", "--json", name="playback blocked")
check(p.returncode in (0, 1), f"playback blocked: exit {p.returncode}: {p.stderr}")
blocked = json.loads(p.stdout)
validate(blocked, "playback.schema.json", "playback --json (blocked)")
check(blocked["summary"]["done"] == info["records"]["op"], "playback: not every op record replayed")
check(all(o["new_nonfinite"] == 0 for o in blocked["ops"]), "playback blocked: non-finite values")
p = run("playback", trace, "--candidate", f"{lib}:peat_cand_stuck_bit27_kernel", "--repeat", "2", "--json",
        expect=1, name="playback stuck bit")
stuck = json.loads(p.stdout)
validate(stuck, "playback.schema.json", "playback --json (stuck bit)")
check(stuck["findings"] is True, "playback stuck bit: no findings")
check(any(v["model"] == "STUCK_AT" or v["model"].startswith("BITFLIP") for o in stuck["ops"] for v in o["verdicts"][:1]),
      f"playback stuck bit: top verdicts {[o['verdicts'][:1] for o in stuck['ops']]}")
ops = sorted({o["op"] for o in blocked["ops"]})
first_op = ops[0]
p = run("playback", trace, "--candidate", f"{lib}:peat_cand_bf16_kernel", "--op", first_op, "--steps", "0:5", "-j", "2",
        "--csv", name="playback --csv")
check(p.returncode in (0, 1), f"playback --csv: exit {p.returncode}")
rows = [l for l in p.stdout.splitlines() if l]
check(rows and rows[0].startswith("op,output,records"), "playback --csv: no header")
check(all(r.split(",")[0] == first_op for r in rows[1:]) and len(rows) >= 2, f"playback --op: rows {rows}")
jsonl = work / "playback.jsonl"
p = run("playback", trace, "--candidate", f"{lib}:peat_cand_bf16_kernel", "--jsonl", jsonl, name="playback --jsonl")
check(p.returncode in (0, 1) and "verdict" in p.stdout, f"playback text: exit {p.returncode}, no verdict table")
check(jsonl.exists() and jsonl.stat().st_size > 0, "playback --jsonl: nothing written")
check("\r[" not in p.stderr, "playback: progress bar drawn although stderr is not a terminal")
# The progress bar, on a terminal: stderr on a pseudo-terminal, one redrawn line
# that ends at total/total records.
master, slave = pty.openpty()
tp = subprocess.Popen([peat, "playback", str(trace), "--candidate", f"{lib}:peat_cand_blocked_kernel"],
                      stdout=subprocess.PIPE, stderr=slave, text=True)
os.close(slave)
tty_out = b""
while True:
    try:
        chunk = os.read(master, 65536)
    except OSError:  # EIO: the program closed its side
        break
    if not chunk:
        break
    tty_out += chunk
tp.wait(timeout=120)
os.close(master)
bar = tty_out.decode(errors="replace")
total = blocked["summary"]["selected"]
check(tp.returncode in (0, 1), f"playback on a terminal: exit {tp.returncode}")
check(bar.count("\r[") >= 2 and f"] {total}/{total} records" in bar,
      f"playback on a terminal: no progress bar ending at {total}/{total}: {bar[-300:]!r}")
p = run("playback", trace, "--candidate", f"{work}/nope.so:sym", expect=4, name="playback missing library")
one_line_error(p, "nope.so", "playback missing library")
p = run("playback", trace, "--candidate", f"{lib}:no_such_symbol", expect=4, name="playback missing symbol")
one_line_error(p, "no_such_symbol", "playback missing symbol")
p = run("playback", trace, "--candidate", "nocolon", expect=2, name="playback bad spec")
one_line_error(p, "nocolon", "playback bad spec")
run("playback", trace, "--candidate", f"{lib}:peat_cand_blocked_kernel", "--steps", "9:3", expect=2, name="playback bad steps")
p = run("playback", missing, "--candidate", f"{lib}:peat_cand_blocked_kernel", expect=3, name="playback missing trace")
one_line_error(p, str(missing), "playback missing trace")

# ---- compare ----
p = run("compare", trace, trace, "--json", expect=0, name="compare self")
same = json.loads(p.stdout)
validate(same, "compare.schema.json", "compare --json (self)")
check(same["alignment"]["aligned"] == info["records"]["op"] and same["alignment"]["only_golden"] == 0, f"compare self: {same['alignment']}")
check(all(f["bitwise_mismatches"] == 0 for f in same["families"]), "compare self: mismatches")
check({f["family"] for f in same["families"]} == {"gemm"}, f"compare: families {[f['family'] for f in same['families']]}")
p = run("compare", trace, bf16_trace, "--json", name="compare bf16")
check(p.returncode in (0, 1), f"compare bf16: exit {p.returncode}: {p.stderr}")
diff = json.loads(p.stdout)
validate(diff, "compare.schema.json", "compare --json (bf16)")
check(diff["alignment"]["aligned"] > 0, "compare bf16: nothing aligned")
check(sum(f["bitwise_mismatches"] for f in diff["families"]) > 0, "compare bf16: no mismatch found")
p = run("compare", trace, bf16_trace, "--csv", name="compare csv")
check(p.stdout.startswith("family,phase,layer"), "compare --csv: no header")
p = run("compare", trace, garbage, expect=3, name="compare garbage")
one_line_error(p, str(garbage), "compare garbage")

# ---- report ----
html = work / "report.html"
p = run("report", trace, jsonl, "-o", html, expect=0, name="report")
check(html.exists() and html.stat().st_size > 1000, "report: no page written")
p = run("report", missing, "-o", html, expect=3, name="report missing input")
one_line_error(p, str(missing), "report missing input")
bad_json = work / "bad.json"
bad_json.write_text('{"candidates": [1, 2')
p = run("report", bad_json, "-o", html, expect=3, name="report bad JSON")
one_line_error(p, str(bad_json), "report bad JSON")
p = run("report", trace, "-o", work / "no-such-dir" / "r.html", expect=3, name="report unwritable output")
one_line_error(p, "no-such-dir", "report unwritable output")

# ---- demo: a stand-in for peat_demo that writes the three outputs ----
fake_demo = work / "fake_peat_demo.sh"
fake_demo.write_text(f"""#!/bin/sh
# peat_demo --out DIR [args]: copies the test's outputs into DIR
[ "$1" = "--out" ] || exit 9
mkdir -p "$2" && cp {trace} "$2/golden.peat" && cp {jsonl} "$2/playback.jsonl" && echo '{{"noise_band": 0.1}}' > "$2/report.json"
""")
fake_demo.chmod(0o755)
demo_out = work / "demo-out"
p = run("demo", "--demo", fake_demo, "--out", demo_out, expect=0, name="demo")
check((demo_out / "report.html").exists(), "demo: no report.html")
p = run("demo", "--demo", work / "no_such_demo", expect=3, name="demo missing program")
one_line_error(p, "no_such_demo", "demo missing program")

if failures:
    print(f"{len(failures)} failure(s):")
    for f in failures:
        print("  -", f)
    sys.exit(1)
print("cli e2e: all checks passed")
