#!/usr/bin/env bash
# Runs bench_playback and records playback throughput: serial playback against
# the candidate alone (playback_serial_vs_candidate: fraction of the
# candidate-only rate kept), and pipelined playback against serial (ratio: speed-up).
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$build/benchmarks/playback/bench_playback" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
  --benchmark_format=json --benchmark_out="$out" --benchmark_out_format=json >/dev/null
read -r only serial piped < <(python3 - "$out" <<'PY'
import json, sys
data = json.load(open(sys.argv[1]))
med = {b["run_name"]: b for b in data["benchmarks"] if b.get("aggregate_name") == "median"}
rate = lambda name: med[name]["records_per_s"]
print(rate("BM_CandidateOnly/real_time"), rate("BM_PlaybackSerial/real_time"), rate("BM_PlaybackPipelined/real_time"))
PY
)
ratio() { python3 -c "print($1 / $2)"; }
python3 "$here/../record.py" playback --metric playback_serial_records_per_s --value "$serial" --unit records/s \
  --baseline "$only" --ratio "$(ratio "$serial" "$only")" --target "report" \
  --note "serial playback of 32 recorded 96^3 f32 GEMMs (zstd) through a naive GEMM candidate; baseline: the candidate alone on the same operands; median of 3, wall time"
python3 "$here/../record.py" playback --metric playback_pipelined_records_per_s --value "$piped" --unit records/s \
  --baseline "$serial" --ratio "$(ratio "$piped" "$serial")" --target "report" \
  --note "pipelined playback (thread_safe, 2 threads, 4 in flight) over serial playback, same trace; median of 3, wall time"
