#!/usr/bin/env bash
# Builds the libFuzzer targets (CMake preset `fuzz`: clang-15, ASan + UBSan) and
# fuzzes each for SECONDS, growing a corpus under build-fuzz/corpus/<target>
# from the seeds the build writes. Prints one summary line per target with
# libFuzzer's final figures (executions, cov: edges, ft: features) and appends
# it as JSON to build-fuzz/fuzz-results.jsonl. A crash leaves its input under
# build-fuzz/artifacts/<target>/ and makes the script fail: copy the input to
# tests/fuzz/regressions/<target>/ with the fix, so every `make test` replays it.
#
# Usage: scripts/fuzz.sh [--build-only | --no-build] [SECONDS] [TARGET...]
#        (defaults: SECONDS=$FUZZ_SECONDS or 300, every target)
set -euo pipefail
cd "$(dirname "$0")/.."
mode=all
case "${1:-}" in
  --build-only) mode=build; shift ;;
  --no-build) mode=run; shift ;;
esac
seconds=${1:-${FUZZ_SECONDS:-300}}
[[ $# -gt 0 ]] && shift
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(trace_file trace_frame trace_meta analyze injector)
build=build-fuzz

if [[ $mode != run ]]; then
  cmake --preset fuzz >/dev/null
  cmake --build --preset fuzz -j "${JOBS:-$(nproc)}"
fi
[[ $mode == build ]] && exit 0

status=0
for t in "${targets[@]}"; do
  bin=$build/tests/fuzz/fuzz_$t
  [[ -x $bin ]] || { echo "fuzz.sh: $bin is not built (run scripts/fuzz.sh --build-only)"; exit 1; }
  corpus=$build/corpus/$t artifacts=$build/artifacts/$t/ log=$build/fuzz-$t.log
  mkdir -p "$corpus" "$artifacts"
  rc=0
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$artifacts" "$corpus" "$build/tests/fuzz/seeds/$t" tests/fuzz/regressions/$t >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")
  echo "fuzz $t: ${seconds}s execs=${execs:-?} cov=${cov:-?} ft=${ft:-?} corpus=${corp:-?} exit=$rc (log $log)"
  printf '{"target":"%s","seconds":%s,"execs":%s,"cov":%s,"ft":%s,"corpus":%s,"exit":%s,"date":"%s"}\n' \
    "$t" "$seconds" "${execs:-null}" "${cov:-null}" "${ft:-null}" "${corp:-null}" "$rc" "$(date -u +%FT%TZ)" \
    >>"$build/fuzz-results.jsonl"
  if [[ $rc -ne 0 ]]; then
    status=1
    grep -E 'ERROR|SUMMARY|Test unit written' "$log" | head -5
  fi
done
exit $status
