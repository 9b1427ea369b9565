#!/usr/bin/env bash
# Profiler caller-side cost per op call (one thread):
#   profiler_skip_ns     record_op for a call the sampling rules skip; baseline:
#                        peat_session_next_call alone (which the call also does)
#   profiler_record_us   record_op for every call with a 64 KiB input, sustained
#                        (copy + queue, waiting while the queue is full)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd)
json=$(mktemp)
trap 'rm -f "$json"' EXIT
"$build/benchmarks/profiler/peat_bench_profiler" --benchmark_format=json --benchmark_out="$json" \
  --benchmark_out_format=json >/dev/null
python3 - "$json" "$here/../record.py" <<'PY'
import json, subprocess, sys
b = {x["name"]: x for x in json.load(open(sys.argv[1]))["benchmarks"]}
def ns(name):
    x = b[name]
    scale = {"ns": 1, "us": 1e3, "ms": 1e6}[x["time_unit"]]
    return x["cpu_time"] * scale
skip, claim, rec = ns("BM_RecordSkipped"), ns("BM_ClaimCall"), ns("BM_RecordSelected")
def record(*args):
    subprocess.run([sys.executable, sys.argv[2], "profiler", *args], check=True)
record("--metric", "profiler_skip_ns", "--value", f"{skip:.1f}", "--unit", "ns", "--baseline", f"{claim:.1f}",
       "--ratio", f"{skip / claim:.2f}", "--target", "report",
       "--note", "peat_profiler_record_op for a call the rules skip; baseline peat_session_next_call alone")
record("--metric", "profiler_record_us", "--value", f"{rec / 1e3:.2f}", "--unit", "us", "--target", "report",
       "--note", "peat_profiler_record_op recording every call with a 64 KiB f32 input, sustained (BLOCK policy: includes waiting for compression and writing)")
PY
