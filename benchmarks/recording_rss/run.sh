#!/usr/bin/env bash
# Peak RSS of a long recording: SIZE_GIB (default 10) GiB of 16 MiB f32 tensors
# through the profiler with its default options (256 MiB queue, BLOCK,
# shuffle+zstd), written to a temporary trace that is deleted afterwards.
#   recording_peak_rss_mib  peak RSS (getrusage) of the whole run; baseline:
#                           RSS before recording started (the 64 MiB of source
#                           tensors, the library); the ratio shows what
#                           recording added, which must not grow with SIZE_GIB.
# Usage: run.sh [BUILD_DIR] [SIZE_GIB]   (quick check: run.sh build 0.5)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd)
size=${2:-${RECORDING_GIB:-10}}
dir=$(mktemp -d "${TMPDIR:-/tmp}/peat-rss.XXXXXX")
trap 'rm -rf "$dir"' EXIT
line=$("$build/benchmarks/recording_rss/peat_bench_recording_rss" "$size" "$dir/trace.peat")
echo "$line"
python3 - "$line" "$here/../record.py" <<'PY'
import json, subprocess, sys
r = json.loads(sys.argv[1])
subprocess.run([sys.executable, sys.argv[2], "recording_rss", "--metric", "recording_peak_rss_mib",
                "--value", f"{r['peak_rss_mib']:.1f}", "--unit", "MiB", "--baseline", f"{r['rss_before_mib']:.1f}",
                "--ratio", f"{r['peak_rss_mib'] / r['rss_before_mib']:.2f}", "--target", "report",
                "--note", f"{r['tensor_bytes_recorded'] / 2**30:.2f} GiB of tensors recorded in {r['seconds']:.1f} s "
                          f"({r['gib_per_s']:.2f} GiB/s), file {r['file_bytes'] / 2**30:.2f} GiB, "
                          f"{r['records_written']} records; default profiler options"], check=True)
PY
