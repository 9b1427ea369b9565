#!/usr/bin/env bash
# Runs bench_torch_mode.py with Debian's python3 against the built library and
# records torch_mode_overhead_us_per_op (idle mode, per intercepted op) and the
# per-step figures, against the same work without the mode in the same run.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  echo "torch_mode: python3-torch is not installed; skipped" >&2
  exit 0
fi
json=$(PEAT_LIBRARY="$build/lib/libpeat.so" PYTHONPATH="$here/../../bindings/python" \
  /usr/bin/python3 "$here/bench_torch_mode.py" 5000)
# get FIELD [JSON]: a field of this run's JSON ($json unless given)
get() { python3 -c "import json,sys; print(json.loads(sys.argv[1])['$1'])" "${2:-$json}"; }
python3 "$here/../record.py" torch_mode --metric torch_mode_overhead_us_per_op \
  --value "$(get overhead_us_per_op)" --unit us --baseline "$(get op_plain_us)" \
  --ratio "$(python3 -c "print($(get op_idle_us) / $(get op_plain_us))")" --target report \
  --note "PeatMode idle (no policy, no profiler), 8x8 torch.mm loop, 1 thread; CPU time, median of 5; baseline: the same loop without the mode (us per op)"
python3 "$here/../record.py" torch_mode --metric torch_mode_peat_share_us_per_op \
  --value "$(python3 -c "print($(get op_idle_us) - $(get op_passthrough_us))")" --unit us \
  --baseline "$(get op_passthrough_us)" --target report \
  --note "PeatMode idle minus a pass-through TorchDispatchMode (torch's own cost, the baseline, us per op): what PEAT's Python adds per intercepted op"
python3 "$here/../record.py" torch_mode --metric torch_mode_native_overhead_us_per_op \
  --value "$(python3 -c "print($(get op_native_idle_us) - $(get op_native_plain_us))")" --unit us \
  --baseline "$(get op_native_plain_us)" \
  --ratio "$(python3 -c "print($(get op_native_idle_us) / $(get op_native_plain_us))")" --target report \
  --note "NativeMode attached idle (no profiler), the same 8x8 torch.mm loop; baseline: the loop just before its kernel was registered (us per op). Once registered (for the rest of the process), with no mode attached: $(python3 -c "print(round($(get op_native_detached_us) - $(get op_native_plain_us), 3))") us per op added"
python3 "$here/../record.py" torch_mode --metric torch_mode_step_idle_ms \
  --value "$(get step_idle_ms)" --unit ms --baseline "$(get step_plain_ms)" \
  --ratio "$(python3 -c "print($(get step_idle_ms) / $(get step_plain_ms))")" --target report \
  --note "small CNN training step (batch 32, 8x8 images), mode idle; baseline: without the mode"
python3 "$here/../record.py" torch_mode --metric torch_mode_step_record_1pct_ms \
  --value "$(get step_record1pct_ms)" --unit ms --baseline "$(get step_plain_ms)" \
  --ratio "$(python3 -c "print($(get step_record1pct_ms) / $(get step_plain_ms))")" --target report \
  --note "same step, mode recording every 100th call of each op (profiler rule '*' every_n=100)"
fi=$(PEAT_LIBRARY="$build/lib/libpeat.so" PYTHONPATH="$here/../../bindings/python" \
  /usr/bin/python3 "$here/bench_fi_step.py" 20)
python3 "$here/../record.py" torch_mode --metric torch_mode_fi_run_candidate_step_ms \
  --value "$(get step_run_candidate_ms "$fi")" --unit ms --baseline "$(get step_idle_ms "$fi")" \
  --ratio "$(python3 -c "print($(get step_run_candidate_ms "$fi") / $(get step_idle_ms "$fi"))")" --target report \
  --note "digits CNN step, bf16 candidate at every GEMM/convolution call as run_candidate (the candidate alone); baseline: the mode idle"
python3 "$here/../record.py" torch_mode --metric torch_mode_fi_run_both_step_ms \
  --value "$(get step_run_both_ms "$fi")" --unit ms --baseline "$(get step_idle_ms "$fi")" \
  --ratio "$(python3 -c "print($(get step_run_both_ms "$fi") / $(get step_idle_ms "$fi"))")" --target report \
  --note "the same with run_both (golden, candidate and the analyzer on every call: what run_candidate cost before 0.2)"
# ResNet-18 training step (bench_resnet_overhead.py): NativeMode (the C++
# hook) and PeatMode (the Python dispatch mode), idle and recording 1/10,
# against the same step without a mode, training-thread CPU time, conditions
# interleaved; the spread is printed beside the median. The target rows are
# NativeMode's, the mode for recording at scale; PeatMode's (which also runs
# candidates and fault injection) are rows of their own.
# glibc keeps freed memory (no trimming, no per-tensor mmap) in this run: by
# default it hands the step's large tensor buffers back to the kernel and maps
# them again, and on a virtual machine where the first touch of a page is
# costly the step then measures page faults (2026-12-06, this project's VM:
# 192-198 ms per plain step by default, 55-57 ms with these settings). Any
# change in allocation order, such as a dispatch mode, changes those faults,
# so the comparison would be between fault patterns, not of PEAT's cost.
rn=$(MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296 \
  PEAT_LIBRARY="$build/lib/libpeat.so" PYTHONPATH="$here/../../bindings/python" \
  /usr/bin/python3 "$here/bench_resnet_overhead.py" "${TORCH_MODE_ROUNDS:-61}")
echo "$rn"
spread() { python3 -c "import json,sys; s=json.loads(sys.argv[1])['$1']; lo, hi = s['median_ci95']; print(f\"median 95 % CI {lo:.3f}..{hi:.3f}; per round: min {s['min']:.3f}, q1 {s['q1']:.3f}, q3 {s['q3']:.3f}, max {s['max']:.3f}\")" "$rn"; }
common="torchvision resnet18, batch 16, 3x32x32, SGD, 1 thread, glibc keeping freed memory (MALLOC_MMAP_THRESHOLD_/MALLOC_TRIM_THRESHOLD_ 4 GiB); training-thread CPU time per step with the mode attached, median over $(get rounds "$rn") interleaved rounds of per-round ratios - 1"
python3 "$here/../record.py" torch_mode --metric torch_mode_idle_overhead \
  --value "$(get step_native_idle_ms "$rn")" --unit ms --baseline "$(get step_plain_ms "$rn")" \
  --ratio "$(get native_idle_overhead "$rn")" --target "<=0.03" \
  --note "peat.torch.NativeMode attached idle (module hooks, no profiler); $common ($(spread native_idle_spread)); wall clock: $(get wall_native_idle_overhead "$rn"); entering + leaving the mode (module hooks added and removed, the hook attached and detached; its kernels stay registered after the first entry): $(get native_enter_exit_ms "$rn") ms, not in the steps"
python3 "$here/../record.py" torch_mode --metric torch_mode_record_10pct_overhead \
  --value "$(get step_native_record_10pct_ms "$rn")" --unit ms --baseline "$(get step_plain_ms "$rn")" \
  --ratio "$(get native_record_10pct_overhead "$rn")" --target "<=0.10" \
  --note "NativeMode recording every 10th call of each op (rule '*' every_n=10; $(get native_records_written "$rn") records, as many as PeatMode's); $common ($(spread native_record_10pct_spread)); the profiler's background threads: $(get native_record_background_cpu_ms "$rn") ms CPU per step; wall clock: $(get wall_native_record_10pct_overhead "$rn")"
python3 "$here/../record.py" torch_mode --metric torch_mode_python_idle_overhead \
  --value "$(get step_idle_ms "$rn")" --unit ms --baseline "$(get step_plain_ms "$rn")" \
  --ratio "$(get idle_overhead "$rn")" --target report \
  --note "peat.torch.PeatMode (Python TorchDispatchMode) attached idle; $common ($(spread idle_spread)); a pass-through TorchDispatchMode alone: $(get passthrough_overhead "$rn"); PeatMode over the pass-through mode: $(get idle_over_passthrough "$rn"); wall clock: $(get wall_idle_overhead "$rn")"
python3 "$here/../record.py" torch_mode --metric torch_mode_python_record_10pct_overhead \
  --value "$(get step_record_10pct_ms "$rn")" --unit ms --baseline "$(get step_plain_ms "$rn")" \
  --ratio "$(get record_10pct_overhead "$rn")" --target report \
  --note "PeatMode recording every 10th call of each op; $common ($(spread record_10pct_spread)); the profiler's background threads: $(get record_background_cpu_ms "$rn") ms CPU per step; wall clock: $(get wall_record_10pct_overhead "$rn")"
