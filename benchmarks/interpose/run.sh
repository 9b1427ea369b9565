#!/usr/bin/env bash
# Runs bench_interpose without the cuBLAS interposer (baseline) and under it:
# loaded but idle, counting + a non-firing injector policy, and recording every
# 100th call into a trace. Each value is the median ns per call of 5 runs.
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
bench=$build/benchmarks/interpose/bench_interpose
lib=$(cd "$build/lib" && pwd)/libpeat-interpose-cublas.so
[[ -x $bench && -f $lib ]] || { echo "interpose benchmark not built (needs the CUDA headers)"; exit 0; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
base=$("$bench")
idle=$(LD_PRELOAD=$lib "$bench")
decide=$(PEAT_INTERPOSE_BACKEND=cpu PEAT_INTERPOSE_FI="op=cublasGemmEx,model=bitflip" LD_PRELOAD=$lib "$bench")
record=$(PEAT_INTERPOSE_BACKEND=cpu PEAT_INTERPOSE_TRACE="$work/t.peat" PEAT_INTERPOSE_SAMPLE="op=*,every_n=100" \
  LD_PRELOAD=$lib "$bench" 20000)
ratio() { python3 -c "print($1 / $2)"; }
python3 "$here/../record.py" interpose --metric interpose_idle_ns --value "$idle" --unit ns \
  --baseline "$base" --ratio "$(ratio "$idle" "$base")" --target "report" \
  --note "cublasSgemm_v2 1x1x1 (host stand-in) under the interposer, nothing configured; baseline: the call without the interposer"
python3 "$here/../record.py" interpose --metric interpose_not_firing_ns --value "$decide" --unit ns \
  --baseline "$base" --ratio "$(ratio "$decide" "$base")" --target "report" \
  --note "counted and routed through peat_injector_dispatch, no policy fires; baseline: the call without the interposer"
python3 "$here/../record.py" interpose --metric interpose_record_1pct_ns --value "$record" --unit ns \
  --baseline "$base" --ratio "$(ratio "$record" "$base")" --target "report" \
  --note "every 100th call recorded into a trace (CPU backend); baseline: the call without the interposer"
echo "interpose: baseline $base ns, idle $idle ns, not firing $decide ns, recording 1% $record ns per call"
