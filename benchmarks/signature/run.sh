#!/usr/bin/env bash
# Signature benchmarks (DESIGN.md §9): signature_vs_stream_read (with and
# without the spatial map) and signature_vs_numpy. $1 = build directory.
# Memory: 2 x 256 MiB for the C++ run; the numpy run (after it) works in
# blocks of 4 Mi elements and peaks near 1.1 GiB.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd)
record="$here/../record.py"
elements=${PEAT_BENCH_SIGNATURE_ELEMENTS:-67108864}  # 64 Mi f32 = 256 MiB per tensor
out=$(mktemp)
trap 'rm -f "$out"' EXIT

"$build/benchmarks/signature/bench_signature" --elements "$elements" \
  --benchmark_format=json --benchmark_out="$out" --benchmark_out_format=json >/dev/null

read -r stream floor sig sigmap sig1 < <(python3 - "$out" <<'PY'
import json, sys
runs = {b["name"].split("/")[0]: b["real_time"] for b in json.load(open(sys.argv[1]))["benchmarks"]}
print(runs["BM_StreamRead"], runs["BM_AllcloseFloor"], runs["BM_Signature"], runs["BM_SignatureWithMap"], runs["BM_Signature1Thread"])  # ms
PY
)
echo "stream read ${stream} ms, signature ${sig} ms, signature+map ${sigmap} ms (2 x $((elements * 4 / 1048576)) MiB, 2 threads); signature on 1 thread ${sig1} ms"
echo "load average while measuring: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
ratio=$(python3 -c "print($stream / $sig)")
ratio_map=$(python3 -c "print($stream / $sigmap)")
ratio_floor=$(python3 -c "print($stream / $floor)")
echo "signature_vs_stream_read = $ratio (with spatial map: $ratio_map)"
echo "allclose floor ${floor} ms (max |e|, tolerance and mismatch counts only): allclose_floor_vs_stream_read = $ratio_floor"
python3 "$record" signature --metric signature_vs_stream_read --value "$sig" --unit ms --baseline "$stream" \
  --ratio "$ratio" --target ">=0.7" --note "2 x 256 MiB f32, 2 threads, no spatial map; ratio = stream time / signature time"
python3 "$record" signature --metric signature_vs_stream_read_with_map --value "$sigmap" --unit ms --baseline "$stream" \
  --ratio "$ratio_map" --target ">=0.7" --note "as signature_vs_stream_read, with the spatial map (8192 columns, tolerance criterion)"

python3 "$record" signature --metric allclose_floor_vs_stream_read --value "$floor" --unit ms --baseline "$stream" \
  --ratio "$ratio_floor" --note "context for signature_vs_stream_read: a compiler-vectorised pass computing only max |e|, the rtol/atol fail count and bitwise mismatches"

if /usr/bin/python3 -c "import numpy" 2>/dev/null; then
  numpy_s=$(/usr/bin/python3 "$here/numpy_metrics.py" "$elements" 3 | python3 -c "import json,sys; print(json.load(sys.stdin)['seconds'])")
  numpy_ms=$(python3 -c "print($numpy_s * 1000)")
  speedup=$(python3 -c "print($numpy_ms / $sig)")
  speedup1=$(python3 -c "print($numpy_ms / $sig1)")
  echo "numpy ${numpy_ms} ms -> signature_vs_numpy = $speedup (1-thread signature: $speedup1)"
  python3 "$record" signature --metric signature_vs_numpy --value "$sig" --unit ms --baseline "$numpy_ms" \
    --ratio "$speedup" --target ">=10" \
    --note "numpy (one thread, blocks of 4 Mi): max abs, max rel, allclose count, NaN counts, rel-error histogram; signature on 2 threads (1 thread: ${sig1} ms, speed-up $speedup1)"
else
  echo "numpy is missing (/usr/bin/python3 -c 'import numpy'): signature_vs_numpy not measured" >&2
  exit 1
fi
