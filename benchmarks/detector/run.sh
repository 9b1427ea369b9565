#!/usr/bin/env bash
# Runs the Detector's full labeled corpus and records detector_accuracy,
# detector_min_recall and detector_accuracy_<family> (DESIGN.md §9; baseline:
# the injector's ground truth and the real recomputes' labels),
# then the cost of one peat_detect call.
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$build/benchmarks/detector/detector_corpus" --full | tee "$log" | grep -v '^miss:' || true
line=$(grep '^RESULT ' "$log")
acc=$(sed -E 's/.*accuracy=([0-9.]+).*/\1/' <<<"$line")
rec=$(sed -E 's/.*min_recall=([0-9.]+).*/\1/' <<<"$line")
cases=$(sed -E 's/.*cases=([0-9]+).*/\1/' <<<"$line")
python3 "$here/../record.py" detector --metric detector_accuracy --value "$acc" --unit fraction \
  --baseline 1 --ratio "$acc" --target ">= 0.98" \
  --note "top-1 verdict of peat_detect vs injector ground truth over $cases labeled cases (detector_corpus --full)"
python3 "$here/../record.py" detector --metric detector_min_recall --value "$rec" --unit fraction \
  --baseline 1 --ratio "$rec" --target ">= 0.95" \
  --note "lowest per-model recall over $cases labeled cases (detector_corpus --full)"
# detector_accuracy_<family>: one line "FAMILY <name> accuracy=<a> cases=<n>" per family.
while read -r _ fam rest; do
  facc=$(sed -E 's/.*accuracy=([0-9.]+).*/\1/' <<<"$rest")
  fcases=$(sed -E 's/.*cases=([0-9]+).*/\1/' <<<"$rest")
  python3 "$here/../record.py" detector --metric "detector_accuracy_$fam" --value "$facc" --unit fraction \
    --baseline 1 --ratio "$facc" --target ">= 0.95" \
    --note "top-1 verdict (and named format) vs ground truth over $fcases cases of family $fam (detector_corpus --full)"
done < <(grep '^FAMILY ' "$log")
out=$(mktemp)
trap 'rm -f "$log" "$out"' EXIT
"$build/benchmarks/detector/bench_detector" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  --benchmark_format=json --benchmark_out="$out" --benchmark_out_format=json >/dev/null
read -r copy detect < <(python3 - "$out" <<'PY'
import json, sys
data = json.load(open(sys.argv[1]))
med = {b["run_name"]: b for b in data["benchmarks"] if b.get("aggregate_name") == "median"}
print(med["BM_CopySignature"]["cpu_time"], med["BM_Detect"]["cpu_time"])
PY
)
python3 "$here/../record.py" detector --metric detector_detect_ns --value "$detect" --unit ns \
  --baseline "$copy" --ratio "$(python3 -c "print($detect / $copy)")" --target "report" \
  --note "one peat_detect call with a 64x64 spatial map, CPU time, median of 5; baseline: copying the signature"
# The per-call verdicts on real training (ResNet-18 and the example LM, one
# step each), op by op, when Debian's torch and torchvision are installed.
if /usr/bin/python3 -c "import torch, torchvision" 2>/dev/null; then
  PEAT_LIBRARY="$build/lib/libpeat.so" PYTHONPATH="$here/../../bindings/python" \
    PEAT_CANDIDATES_LIBRARY="$build/examples/candidates/libpeat_candidates.so" \
    /usr/bin/python3 -W ignore "$here/model_verdict_tables.py"
fi
