#!/usr/bin/env bash
# Runs bench_decide and records decide_not_firing_ns (and the no-policy case)
# against the empty loop measured in the same run.
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$build/benchmarks/decide/bench_decide" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  --benchmark_format=json --benchmark_out="$out" --benchmark_out_format=json >/dev/null
# Values are CPU time per call (median of 5): on a machine shared with other
# jobs, wall time also counts the time the thread waited for a core. The wall
# time goes into the note.
read -r empty nopolicy notfiring eight real_notfiring < <(python3 - "$out" <<'PY'
import json, sys
data = json.load(open(sys.argv[1]))
med = {b["run_name"]: b for b in data["benchmarks"] if b.get("aggregate_name") == "median"}
assert all(b.get("time_unit") == "ns" for b in data["benchmarks"])
cpu = lambda name: med[name]["cpu_time"]
print(cpu("BM_EmptyLoop"), cpu("BM_DecideNoPolicy"), cpu("BM_DecideNotFiring"), cpu("BM_DecideNotFiring8Ops"),
      med["BM_DecideNotFiring"]["real_time"])
PY
)
ratio() { python3 -c "print($1 / $2)"; }
python3 "$here/../record.py" decide --metric decide_not_firing_ns --value "$notfiring" --unit ns \
  --baseline "$empty" --ratio "$(ratio "$notfiring" "$empty")" --target "<= 20" \
  --note "peat_injector_decide, op with a matching every-N policy, non-firing call; CPU time, median of 5 (wall time $real_notfiring ns); baseline: empty loop"
python3 "$here/../record.py" decide --metric decide_no_policy_ns --value "$nopolicy" --unit ns \
  --baseline "$empty" --ratio "$(ratio "$nopolicy" "$empty")" --target "report" \
  --note "peat_injector_decide, op no policy matches; CPU time, median of 5"
python3 "$here/../record.py" decide --metric decide_not_firing_8ops_ns --value "$eight" --unit ns \
  --baseline "$empty" --ratio "$(ratio "$eight" "$empty")" --target "report" \
  --note "non-firing decide rotating over 8 ops; CPU time, median of 5"
