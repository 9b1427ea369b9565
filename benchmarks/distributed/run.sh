#!/usr/bin/env bash
# Distributed playback (docs/distributed.md): the throughput of one trace set
# replayed by `mpirun -n N peat playback` at N = 1, 2 and 4 (oversubscribed
# above the core count), with the scaling efficiency (speed-up over N), the
# import cost per record on rank 0, and the cost of one signature merge.
# The machine's load decides wall-time scaling; the CPU time of rank 0's
# share (distributed_share_cpu_fraction) shows the split itself.
# Time is rank 0's --timing replay_s: from the start of the command to the
# merged result (MPI start-up excluded, the wait for the slowest rank
# included); median of 3.
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
peat="$build/tools/peat/peat"
record() { python3 "$here/../record.py" distributed "$@"; }

merge_out=$(mktemp)
work=$(mktemp -d)
trap 'rm -rf "$work" "$merge_out"' EXIT
"$build/benchmarks/distributed/bench_merge" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
  --benchmark_format=json --benchmark_out="$merge_out" --benchmark_out_format=json >/dev/null
merge_ns=$(python3 - "$merge_out" <<'PY'
import json, sys
data = json.load(open(sys.argv[1]))
print(next(b["real_time"] for b in data["benchmarks"] if b.get("aggregate_name") == "median"))
PY
)
record --metric signature_merge_ns --value "$merge_ns" --unit ns --target report \
  --note "peat_signature_merge of two exact signatures of 64x64 f32 outputs at rounding-level error; median of 3"

if ! command -v mpirun >/dev/null || ! "$peat" playback --help | grep -q -- --peer; then
  echo "distributed: no mpirun or no peat tool; the MPI scaling is skipped" >&2
  exit 0
fi
"$build/examples/cpp_trainer/peat_train" --model cnn --epochs 1 --finetune-epochs 0 --train-size 1024 --test-size 64 \
  --record-every 1 --trace "$work/cnn.peat" >/dev/null
cand="$build/examples/candidates/libpeat_candidates.so:peat_cand_blocked_kernel"
measure() {  # N -> "records replay_s import_s imported share_cpu_s" (median replay_s of 3)
  for _ in 1 2 3; do
    mpirun --oversubscribe --allow-run-as-root --mca btl self,vader -n "$1" "$peat" playback "$work/cnn.peat" \
      --candidate "$cand" --repeat 2 --json --timing 2>&1 >/dev/null | sed -n 's/^peat playback: timing //p'
  done | python3 -c '
import json, sys
runs = sorted((json.loads(l) for l in sys.stdin if l.strip()), key=lambda t: t["replay_s"])
m = runs[len(runs) // 2]
print(m["records"], m["replay_s"], m["import_s"], m["imported_records"], m["share_cpu_s"])'
}
read -r records t1 _ _ c1 < <(measure 1)
read -r _ t2 i2 n2 c2 < <(measure 2)
read -r _ t4 i4 n4 c4 < <(measure 4)
cores=$(nproc)
for n in 1 2 4; do
  t=$(eval echo "\$t$n")
  rate=$(python3 -c "print($records / $t)")
  rate1=$(python3 -c "print($records / $t1)")
  speedup=$(python3 -c "print($t1 / $t)")
  record --metric "distributed_playback_records_per_s_${n}_ranks" --value "$rate" --unit records/s \
    --baseline "$rate1" --ratio "$speedup" --target report \
    --note "mpirun -n $n peat playback (--repeat 2, blocked-GEMM candidate) of a $records-record CNN trace on $cores cores; ratio: speed-up over 1 rank"
  if [[ $n != 1 ]]; then
    c=$(eval echo "\$c$n")
    record --metric "distributed_share_cpu_fraction_${n}_ranks" --value "$(python3 -c "print($c / $c1)")" \
      --unit fraction --baseline "$(python3 -c "print(1 / $n)")" --ratio "$(python3 -c "print($c / $c1 * $n)")" \
      --target report \
      --note "CPU time of rank 0's share over the whole playback's CPU time in one process (ideal 1/$n; ratio 1 = even split); independent of machine load"
    record --metric "distributed_scaling_efficiency_${n}_ranks" --value "$(python3 -c "print($speedup / $n)")" \
      --unit fraction --baseline 1 --ratio "$(python3 -c "print($speedup / $n)")" --target report \
      --note "speed-up over $n ranks ($cores cores: above $cores ranks the cores are shared, efficiency <= $cores/$n)"
  fi
done
record --metric distributed_import_us_per_record --value "$(python3 -c "print(1e6 * $i4 / max($n4, 1))")" --unit us \
  --target report --note "rank 0's peat_playback_import per imported record at 4 ranks (parse, check, regroup every record)"
