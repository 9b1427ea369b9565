#!/usr/bin/env bash
# Per-op cost of PEAT in a framework fork (examples/libtorch: aten CPU kernel
# overrides routed through the injector, C++) beside PEAT's Python dispatch
# mode (benchmarks/torch_mode: PeatMode), both idle on a loop of 8x8 torch.mm
# calls on 1 thread, each against plain torch measured in the same process.
# Prints both and records libtorch_override_overhead_us_per_op.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
bench="$build/examples/libtorch/peat_libtorch_bench"
if [[ ! -x "$bench" ]]; then
  echo "libtorch: $bench was not built (libtorch-dev missing?); skipped" >&2
  exit 0
fi
cpp=$(LD_LIBRARY_PATH="$build/lib" "$bench" 20000 "$build/libtorch_bench.peat")
get() { python3 -c "import json,sys; print(json.loads(sys.argv[1])['$1'])" "$2"; }
py='{}'
if /usr/bin/python3 -c "import torch" 2>/dev/null; then
  py=$(PEAT_LIBRARY="$build/lib/libpeat.so" PYTHONPATH="$here/../../bindings/python" \
    /usr/bin/python3 "$here/../torch_mode/bench_torch_mode.py" 5000)
fi
echo "libtorch override (C++): plain $(get op_plain_us "$cpp") us/op, idle $(get op_idle_us "$cpp") us/op," \
     "overhead $(get overhead_us_per_op "$cpp") us/op, recording every call $(get op_record_all_us "$cpp") us/op"
if [[ "$py" != '{}' ]]; then
  echo "Python dispatch mode:     plain $(get op_plain_us "$py") us/op, idle $(get op_idle_us "$py") us/op," \
       "overhead $(get overhead_us_per_op "$py") us/op"
fi
python3 "$here/../record.py" libtorch --metric libtorch_override_overhead_us_per_op \
  --value "$(get overhead_us_per_op "$cpp")" --unit us --baseline "$(get op_plain_us "$cpp")" \
  --ratio "$(python3 -c "print($(get op_idle_us "$cpp") / $(get op_plain_us "$cpp"))")" --target report \
  --note "examples/libtorch aten::mm override attached idle (injector dispatch, no policy, no profiler), 8x8 torch::mm loop, 1 thread, median of 5; baseline: the same loop before libpeat_aten.so is loaded (us per op)"
