#!/usr/bin/env bash
# Signature benchmarks (DESIGN.md §9): signature_vs_stream_read (with and
# without the spatial map), signature_sparse_vs_stream_read (<= 1 % of pairs
# differing: the bitwise-equal fast path) and signature_vs_numpy.
# $1 = build directory.
# Memory: 4 x 256 MiB for the C++ run; the numpy run (after it) works in
# blocks of 4 Mi elements and peaks near 1.1 GiB.
#
# Vector operations per element are counted by hand from the AVX-512
# instruction sequence of lib/analyzer/simd_f32.cpp (one vector = 16 f32;
# lib/analyzer/simd_f32.cpp describes its three passes):
#   - every pair, fast_block's first sweep: about 25 operations per vector
#     (2 loads, XOR and the differing test, |g|, the integer max and two
#     mins, widening, g*g, the window's split and adds for two halves), and
#     3 scalar ones for the vector's bit: EQUAL = 25/16 per element;
#   - each vector holding a differing pair, the second sweep: about 21
#     (the words again, the quick ordinary test, compressing the differing
#     pairs' words and offsets into the stage): STAGE = 21/16 per element of
#     such a vector;
#   - each staged (differing) pair: pass 2 about 120 per 16 pairs (widening,
#     tolerance, e*e, g*e, c/g, the window guards and five windows' adds,
#     maxima screen, ratio extrema) and pass 3 about 100 (about 73 for the
#     five words: ULP, relative-error and popcount buckets as one-hot bytes,
#     XOR bits, highest differing bit and its candidate bit, lowest set bit,
#     with their loads and stores; about 27 for counting them, 5.5 a word
#     through the carry-save trees): STAGED = 220/16 per pair.
# Blocks that fast_block refuses (a pair not ordinary, a golden not finite)
# go vector by vector (about 62 per vector), a few per million pairs here.
# The achieved operations per cycle divide that by the cycles per element of
# the 1-thread runs (CPU time times the clock BM_CoreClock measures).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd)
record="$here/../record.py"
elements=${PEAT_BENCH_SIGNATURE_ELEMENTS:-67108864}  # 64 Mi f32 = 256 MiB per tensor
out=$(mktemp)
trap 'rm -f "$out"' EXIT

reps=${PEAT_BENCH_SIGNATURE_REPETITIONS:-5}
"$build/benchmarks/signature/bench_signature" --elements "$elements" --benchmark_repetitions="$reps" \
  --benchmark_format=json --benchmark_out="$out" --benchmark_out_format=json >/dev/null

# Medians over the repetitions (ms), and each ratio's spread: the ratio of
# repetition k of the stream read to repetition k of the signature, min..max.
read -r stream floor sig sigmap sig1 sparse sparse1 ident ident1 < <(python3 - "$out" <<'PY'
import json, statistics, sys
runs = {}
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    if b.get("run_type", "iteration") == "iteration":
        runs.setdefault(b["name"].split("/")[0], []).append(b["real_time"])
names = ("BM_StreamRead", "BM_AllcloseFloor", "BM_Signature", "BM_SignatureWithMap", "BM_Signature1Thread",
         "BM_SignatureSparse", "BM_SignatureSparse1Thread", "BM_SignatureIdentical", "BM_SignatureIdentical1Thread")
print(*(statistics.median(runs[n]) for n in names))  # ms
PY
)
spread() {  # $1 = benchmark: "min..max" of stream_k / benchmark_k
  python3 - "$out" "$1" <<'PY'
import json, sys
runs = {}
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    if b.get("run_type", "iteration") == "iteration":
        runs.setdefault(b["name"].split("/")[0], []).append(b["real_time"])
r = [s / x for s, x in zip(runs["BM_StreamRead"], runs[sys.argv[2]])]
print(f"{min(r):.3f}..{max(r):.3f} over {len(r)} repetitions")
PY
}
# Operations per element and per cycle (see the header), median and spread
# over the repetitions.
python3 - "$out" "$elements" <<'PY'
import json, statistics, sys
runs = {}
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    if b.get("run_type", "iteration") == "iteration":
        runs.setdefault(b["name"].split("/")[0], []).append(b)
n = int(sys.argv[2])
clocks = [b["adds"] / (b["cpu_time"] * 1e-3) for b in runs["BM_CoreClock"]]  # cycles per second
clock = statistics.median(clocks)
EQUAL, STAGE, STAGED = 25 / 16, 21 / 16, 220 / 16
print(f"core clock {clock / 1e9:.2f} GHz (dependent adds, CPU time; {min(clocks) / 1e9:.2f}..{max(clocks) / 1e9:.2f})")
for name, label in (("BM_Signature1Thread", "rounding-level"), ("BM_SignatureSparse1Thread", "sparse (1 % differing)"),
                    ("BM_SignatureIdentical1Thread", "identical")):
    share = runs[name][0]["differing_vector_share"]
    staged = runs[name][0]["bitwise_mismatches"] / n
    ops = EQUAL + share * STAGE + staged * STAGED
    how = f"differing, {staged:.4f} of pairs staged"
    cyc = sorted(b["cpu_time"] * 1e-3 * clock / n for b in runs[name])
    med = statistics.median(cyc)
    print(f"{label}: {share:.3f} of vectors {how}, about {ops:.1f} vector ops/element, "
          f"{med:.2f} cycles/element on 1 thread ({cyc[0]:.2f}..{cyc[-1]:.2f}) -> about {ops / med:.2f} ops/cycle "
          f"({ops / cyc[-1]:.2f}..{ops / cyc[0]:.2f})")
PY
echo "medians of $reps repetitions: stream read ${stream} ms, signature ${sig} ms, signature+map ${sigmap} ms (2 x $((elements * 4 / 1048576)) MiB, 2 threads); signature on 1 thread ${sig1} ms"
echo "sparse (1 % of pairs differing): ${sparse} ms (1 thread ${sparse1} ms); identical: ${ident} ms (1 thread ${ident1} ms)"
echo "load average while measuring: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
ratio=$(python3 -c "print($stream / $sig)")
ratio_sparse=$(python3 -c "print($stream / $sparse)")
ratio_ident=$(python3 -c "print($stream / $ident)")
ratio_map=$(python3 -c "print($stream / $sigmap)")
ratio_floor=$(python3 -c "print($stream / $floor)")
echo "signature_vs_stream_read = $ratio, spread $(spread BM_Signature) (with spatial map: $ratio_map)"
echo "signature_sparse_vs_stream_read = $ratio_sparse, spread $(spread BM_SignatureSparse) (no pair differing: $ratio_ident, spread $(spread BM_SignatureIdentical))"
echo "allclose floor ${floor} ms (max |e|, tolerance and mismatch counts only): allclose_floor_vs_stream_read = $ratio_floor"
python3 "$record" signature --metric signature_vs_stream_read --value "$sig" --unit ms --baseline "$stream" \
  --ratio "$ratio" --target ">=0.3" --note "2 x 256 MiB f32, 2 threads, no spatial map; ratio = stream time / signature time"
python3 "$record" signature --metric signature_sparse_vs_stream_read --value "$sparse" --unit ms --baseline "$stream" \
  --ratio "$ratio_sparse" --target ">=0.7" \
  --note "as signature_vs_stream_read with 1 % of the pairs (random) a few ulps off, the rest bitwise equal; no pair differing: ${ident} ms, ratio $ratio_ident"
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
