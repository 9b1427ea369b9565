#!/usr/bin/env bash
# Recording throughput against its limits (recording_vs_limit.cpp), then the
# trace size of every op of 2 ResNet-18 training steps (bench_trace_bytes.py).
#   recording_vs_limit  profiler MB/s over min(plain write + fdatasync, codec on
#                       the worker threads), same stream, same disk, same run
#   trace_bytes_vs_raw  trace file bytes over the raw bytes of the recorded
#                       tensors (torch.save of the same tensors in the note)
# Usage: run.sh [BUILD_DIR] [SIZE_MIB]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd)
# 1 GiB: four times the profiler's default queue, so that the figure is the
# sustained rate (queue full, then drained at close), not a burst into memory.
size=${2:-${RECORDING_MIB:-1024}}
dir=$(mktemp -d "${TMPDIR:-/tmp}/peat-recording.XXXXXX")
trap 'rm -rf "$dir"' EXIT
line=$("$build/benchmarks/recording/peat_bench_recording_vs_limit" "$size" "$dir" 5)
echo "$line"
get() { python3 -c "import json,sys; print(json.loads(sys.argv[1])['$1'])" "$2"; }
python3 "$here/../record.py" recording --metric recording_vs_limit \
  --value "$(get record_mb_s "$line")" --unit MB/s \
  --baseline "$(python3 -c "print(min($(get write_mb_s "$line"), $(get codec_mb_s "$line")))")" \
  --ratio "$(get ratio "$line")" --target ">=0.7" \
  --note "$(get stream_mb "$line") MB stream (weights, ReLU activations, gradients; distinct tensors, generated before timing), default profiler options, closed + fdatasync (close + fdatasync, the queue's drain: $(get close_s "$line") s); medians of $(get rounds "$line") rounds: write+fdatasync $(get write_mb_s "$line") MB/s, codec on $(get threads "$line") worker threads $(get codec_mb_s "$line") MB/s; per-round ratio $(get ratio_min "$line")..$(get ratio_max "$line"); file $(get file_mb "$line") MB; process CPU per stream: codec $(get codec_cpu_s "$line") s, record $(get record_cpu_s "$line") s on $(get record_cores "$line") cores (codec/record CPU $(get cpu_bound_ratio "$line"): the ratio with every core busy)"
if ! /usr/bin/python3 -c "import torch, torchvision" 2>/dev/null; then
  echo "trace_bytes_vs_raw: python3-torch / python3-torchvision not installed; skipped" >&2
  exit 0
fi
json=$(PEAT_LIBRARY="$build/lib/libpeat.so" PYTHONPATH="$here/../../bindings/python" \
  /usr/bin/python3 "$here/bench_trace_bytes.py" "$dir")
echo "$json"
python3 "$here/../record.py" recording --metric trace_bytes_vs_raw \
  --value "$(get file_bytes "$json")" --unit bytes --baseline "$(get raw_bytes "$json")" \
  --ratio "$(get ratio "$json")" --target "<=0.40" \
  --note "torchvision resnet18 (10 classes), batch 16, 3x32x32, SGD; every op of 2 training steps recorded by peat.torch ($(get records "$json") records, $(get references "$json") of $(get tensors "$json") tensors stored as references, $(get deltas "$json") as XOR deltas); torch.save of the same tensors: $(get torch_save_bytes "$json") bytes (ratio $(get torch_save_ratio "$json")); without references and deltas (content_index_entries=0): ratio $(get ratio_no_refs "$json")"
