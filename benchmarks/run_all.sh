#!/usr/bin/env bash
# make bench: runs every benchmarks/*/run.sh with the build directory as $1.
# Each run.sh runs its programs and appends JSON lines through record.py to
# benchmarks/results/<benchmark>.jsonl (DESIGN.md §9).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd)
status=0
shopt -s nullglob
for script in "$here"/*/run.sh; do
  echo "== $(basename "$(dirname "$script")")"
  bash "$script" "$build" || { echo "benchmark $(dirname "$script") failed" >&2; status=1; }
done
echo "results: $here/results/"
exit $status
