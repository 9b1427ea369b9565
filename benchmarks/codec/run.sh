#!/usr/bin/env bash
# Trace codec benchmark: runs peat_bench_codec (one thread) and records
#   codec_mb_s_per_core  encode MB/s of byte-shuffle + zstd-1 over the four
#                        tensor kinds (total raw bytes / total time); baseline:
#                        the raw codec (a copy) in the same run
#   codec_size_ratio     encoded / raw bytes over the four kinds; baseline 1 (raw)
#   codec_decode_mb_s_per_core  the same for decoding
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd)
bin="$build/benchmarks/codec/peat_bench_codec"
json=$(mktemp)
trap 'rm -f "$json"' EXIT
"$bin" --benchmark_format=json --benchmark_out="$json" --benchmark_out_format=json >/dev/null
python3 - "$json" "$here/../record.py" <<'PY'
import json, subprocess, sys
data = json.load(open(sys.argv[1]))
record = sys.argv[2]
# name: BM_Encode/codec:1/tensor:2
stats = {}
for b in data["benchmarks"]:
    name = b["name"].split("/")
    op = name[0][3:].lower()
    codec = int(name[1].split(":")[1])
    tensor = int(name[2].split(":")[1])
    stats[(op, codec, tensor)] = b
def total_rate(op, codec):
    # total raw bytes over total time, each kind weighted by its raw size
    sizes = {0: 4, 1: 4, 2: 4, 3: 2}
    total_bytes = sum(sizes.values())
    total_time = sum(sizes[t] / stats[(op, codec, t)]["bytes_per_second"] for t in range(4))
    return total_bytes / total_time / 1e6
enc, enc_raw = total_rate("encode", 1), total_rate("encode", 0)
dec, dec_raw = total_rate("decode", 1), total_rate("decode", 0)
sizes = {0: 4, 1: 4, 2: 4, 3: 2}
ratio = sum(sizes[t] * stats[("encode", 1, t)]["size_ratio"] for t in range(4)) / sum(sizes.values())
per_kind = ", ".join(
    f"{['weights','activations','gradients','weights_bf16'][t]}: {stats[('encode',1,t)]['bytes_per_second']/1e6:.0f} MB/s ratio {stats[('encode',1,t)]['size_ratio']:.3f}"
    for t in range(4))
def rec(*args):
    subprocess.run([sys.executable, record, "codec", *args], check=True)
rec("--metric", "codec_mb_s_per_core", "--value", f"{enc:.1f}", "--unit", "MB/s", "--baseline", f"{enc_raw:.1f}",
    "--ratio", f"{enc / enc_raw:.4f}", "--target", "report",
    "--note", f"byte-shuffle + zstd level 1 encode, 1 thread, 16 MiB f32 / 8 MiB bf16 tensors; baseline raw codec (copy). {per_kind}")
rec("--metric", "codec_size_ratio", "--value", f"{ratio:.4f}", "--unit", "encoded/raw", "--baseline", "1.0",
    "--ratio", f"{ratio:.4f}", "--target", "report",
    "--note", "byte-shuffle + zstd level 1 over weights N(0,0.02), ReLU activations, gradients, bf16 weights")
rec("--metric", "codec_decode_mb_s_per_core", "--value", f"{dec:.1f}", "--unit", "MB/s", "--baseline", f"{dec_raw:.1f}",
    "--ratio", f"{dec / dec_raw:.4f}", "--target", "report",
    "--note", "byte-shuffle + zstd decode (codec only, no XXH3 check), 1 thread; baseline raw codec (copy)")
PY
