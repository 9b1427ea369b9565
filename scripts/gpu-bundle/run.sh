#!/usr/bin/env bash
# The first GPU run, from the bundle scripts/gpu-bundle.sh wrote (this file is
# copied to its root as run.sh). Nothing is built: the programs, libpeat, the
# CUDA plugin and the runtime libraries a bare machine lacks are in the bundle.
#
# usage: run.sh [RESULTS_DIR]      (default: ./peat-gpu-results)
# Runs, in order, each step under its own timeout; a failed step does not stop
# the others:
#   1 plugin       the CUDA plugin loads, enumerates, round trips and staging
#                  (c_test_device_backends), and carries sm_80, sm_90 and PTX
#   2 conformance  the CUDA backend against the CPU backend: signatures with
#                  byte-identical exact sums, injections with bit-identical
#                  Philox bits, every dtype and error model
#   3 bandwidth    gpu_signature_vs_memcpy (target >= 0.7), with its spread
#   4 interpose    the cuBLAS interposer over the real cuBLAS (record, inject,
#                  candidate) and the CUPTI tracer
#   5 torch        peat.torch on PyTorch 2.x with CUDA tensors
#                  (torch_cuda_check.py)
#   6 summary      one line per step: ok / failed / skipped, with the reason
# RESULTS_DIR gets results.jsonl (one JSON object per step, and the figures),
# run.log (everything), <step>.log, summary.txt and the steps' own files.
#
# Exit status: 0 no step failed; 1 a step failed; 2 no GPU here (nothing run,
# within seconds); 3 the bundle is incomplete.
# Environment: PYTHON (default python3), PEAT_BUNDLE_FORCE=1 (run the steps
# even where no GPU is seen: they skip; tests run.sh itself), PEAT_BUNDLE_BUDGET (seconds for all
# steps, default 450), PEAT_GPU_BENCH_ELEMENTS (default 67108864 f32 per tensor),
# CUDA_HOME (where libcublas and libcupti are looked for first).
set -uo pipefail
bundle=$(cd "$(dirname "$0")" && pwd)
results=${1:-$PWD/peat-gpu-results}
mkdir -p "$results" && results=$(cd "$results" && pwd)
log=$results/run.log
jsonl=$results/results.jsonl
: >"$log"
: >"$jsonl"
python=${PYTHON:-python3}
budget=${PEAT_BUNDLE_BUDGET:-450}
start=$SECONDS

say() { echo "[run.sh $((SECONDS - start))s] $*" | tee -a "$log"; }
json_str() {  # a JSON string literal of $1 (other control characters dropped)
  local s
  s=$(printf '%s' "$1" | tr -d '\000-\010\013\014\016-\037')
  s=${s//\\/\\\\}
  s=${s//\"/\\\"}
  s=${s//$'\t'/ }
  s=${s//$'\r'/}
  s=${s//$'\n'/ | }
  printf '"%s"' "$s"
}
record() {  # step status reason seconds [extra JSON members]
  printf '{"step": %s, "status": %s, "reason": %s, "seconds": %s%s}\n' "$(json_str "$1")" "$(json_str "$2")" \
    "$(json_str "$3")" "$4" "${5:+, $5}" >>"$jsonl"
}

# --- the bundle is whole -----------------------------------------------------
for f in lib/libpeat.so.0 lib/libpeat-backend-cuda.so lib/libpeat-interpose-cublas.so lib/libpeat-test-gemm-candidate-cuda.so bin/c_test_device_backends \
         bin/gpu_test_device_conformance bin/bench_gpu_signature bin/peat_test_app_cublas_device python/peat/__init__.py \
         scripts/torch_cuda_check.py scripts/run_interpose_test.sh; do
  [[ -e $bundle/$f ]] || { say "the bundle lacks $f: rebuild it with scripts/gpu-bundle.sh"; record bundle failed "missing $f" 0; exit 3; }
done
export LD_LIBRARY_PATH="$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PEAT_LIBRARY=$bundle/lib/libpeat.so.0 PYTHONPATH=$bundle/python${PYTHONPATH:+:$PYTHONPATH}
export PYTHONDONTWRITEBYTECODE=1

# --- no GPU: say so at once ----------------------------------------------------
gpus=$(timeout 10 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null)
no_gpu=0
if [[ -z $gpus ]] && ! compgen -G "/dev/nvidia[0-9]*" >/dev/null; then
  if [[ ${PEAT_BUNDLE_FORCE:-0} != 1 ]]; then
    say "no GPU: no /dev/nvidia* device and nvidia-smi lists none; nothing run (exit 2)"
    record preflight no_gpu "no /dev/nvidia* device and nvidia-smi lists none" $((SECONDS - start))
    exit 2
  fi
  say "no GPU, PEAT_BUNDLE_FORCE=1: the steps run anyway (and skip)"
  no_gpu=1
fi
(( no_gpu )) || say "GPU: ${gpus:-(nvidia-smi unavailable; /dev/nvidia* present)}"
say "bundle: $(head -1 "$bundle/BUILD-INFO" 2>/dev/null); results in $results"
cat "$bundle/BUILD-INFO" >>"$log" 2>/dev/null

declare -a summary=()
failed=0
# run_step <name> <timeout s> <command...>: runs it with its output in
# <name>.log (and run.log); exit 0 ok, 77 skipped, anything else failed. The
# reason is the command's last output line.
run_step() {
  local name=$1 limit=$2; shift 2
  local left=$((budget - (SECONDS - start)))
  (( limit > left )) && limit=$left
  if (( limit < 10 )); then
    record "$name" skipped "out of time: the budget of ${budget}s is spent" 0
    summary+=("$name: skipped (out of time: the budget of ${budget}s is spent)")
    return
  fi
  say "step $name (timeout ${limit}s)"
  local t0=$SECONDS rc
  timeout -k 10 "$limit" bash -c '"$@"' "$name" "$@" >"$results/$name.log" 2>&1
  rc=$?
  local secs=$((SECONDS - t0)) status reason
  reason=$(grep -v '^[[:space:]]*$' "$results/$name.log" | tail -1 | cut -c1-300)
  case $rc in
    0) status=ok ;;
    77) status=skipped ;;
    124 | 137) status=failed reason="timed out after ${limit}s; last line: $reason" ;;
    *) status=failed reason="exit $rc: $reason" ;;
  esac
  [[ $status == failed ]] && failed=1
  { echo "----- $name (exit $rc, ${secs}s) -----"; cat "$results/$name.log"; } >>"$log"
  record "$name" "$status" "$reason" "$secs" "\"exit\": $rc"
  summary+=("$name: $status ($reason) [${secs}s]")
  say "step $name: $status [${secs}s]"
}

# Directories holding the CUDA libraries the machine has (cuBLAS, CUPTI), for
# the interposer's test program only: PyTorch keeps its own.
cuda_lib_dirs() {
  local want=$1 d
  for d in ${CUDA_HOME:+$CUDA_HOME/lib64 $CUDA_HOME/extras/CUPTI/lib64} /usr/local/cuda/lib64 \
           /usr/local/cuda/extras/CUPTI/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/lib/x86_64-linux-gnu; do
    [[ -e $d/$want ]] && { echo "$d"; return; }
  done
  ldconfig -p 2>/dev/null | grep -q "$want" && return
  # PyTorch's wheels (nvidia/*/lib)
  "$python" - "$want" 2>/dev/null <<'PY'
import glob, os, site, sys
for base in site.getsitepackages() + [site.getusersitepackages()]:
    for hit in glob.glob(os.path.join(base, "nvidia", "**", sys.argv[1]), recursive=True):
        print(os.path.dirname(hit)); sys.exit(0)
PY
}

step_plugin() {
  local out
  out=$("$bundle/bin/c_test_device_backends" cuda 2>&1) || { echo "$out"; return 1; }
  echo "$out"
  if grep -q "device part skipped" <<<"$out"; then
    (( no_gpu )) && { echo "SKIP: no GPU: the device part did not run"; return 77; }
    echo "the plugin sees no device although this machine has a GPU"; return 1
  fi
  "$python" "$bundle/scripts/check_device_code.py" "$bundle/lib/libpeat-backend-cuda.so" cuda sm_80 sm_90 ptx:sm_90 || return $?
  echo "plugin: loads, enumerates, round trips and staging passed; carries sm_80, sm_90, ptx:sm_90"
}

step_bandwidth() {
  local line
  line=$("$bundle/bin/bench_gpu_signature" cuda "${PEAT_GPU_BENCH_ELEMENTS:-67108864}") || return $?
  echo "$line"
  echo "$line" >>"$results/gpu_signature_vs_memcpy.jsonl"
  "$python" - "$line" <<'PY'
import json, sys
d = json.loads(sys.argv[1])
lo, hi = d.get("ratio_range", [d["ratio"], d["ratio"]])
print(f"gpu_signature_vs_memcpy: ratio {d['ratio']:.3f} (spread {lo:.3f} .. {hi:.3f} over the runs), "
      f"signature {d['signature_GBps']:.0f} GB/s, copy {d['memcpy_GBps']:.0f} GB/s, target >= 0.7: "
      + ("met" if d["ratio"] >= 0.7 else "NOT met"))
sys.exit(0 if d["ratio"] >= 0.7 else 1)
PY
}

step_interpose() {
  local dirs="" d lib
  for lib in libcublas.so.13 libcupti.so.13; do
    d=$(cuda_lib_dirs "$lib")
    [[ -n $d && :$dirs: != *:$d:* ]] && dirs="$dirs:$d"
  done
  echo "CUDA library folders added for this step: ${dirs:-(none: the loader finds them)}"
  local work=$results/interpose rc=0 c r line=""
  mkdir -p "$work"
  for c in cublas_device_record cublas_device_inject cublas_device_candidate cupti; do
    LD_LIBRARY_PATH="$LD_LIBRARY_PATH$dirs" APP_CUBLAS_DEVICE=$bundle/bin/peat_test_app_cublas_device \
      LIB_CUBLAS=$bundle/lib/libpeat-interpose-cublas.so CHECK_TRACE=$bundle/bin/peat_interpose_check_trace \
      CANDIDATE=$bundle/lib/libpeat-test-gemm-candidate.so CUPTI_TEST=$bundle/bin/peat_test_cupti_loader \
      CANDIDATE_DEVICE=$bundle/lib/libpeat-test-gemm-candidate-cuda.so \
      LIB_CUPTI=$bundle/lib/libpeat-cupti-tracer.so PYTHON=$python \
      "$bundle/scripts/run_interpose_test.sh" "$c" "$work"
    r=$?
    case $r in 0) line="$line $c=ok" ;; 77) line="$line $c=skipped" ;; *) line="$line $c=FAILED($r)" ;; esac
    # a failure wins over a skip
    (( r != 0 && (rc == 0 || rc == 77) )) && rc=$r
  done
  echo "interpose:$line"
  return $rc
}

# The steps run in child shells (timeout), which need these.
export bundle results python no_gpu
export -f step_plugin step_bandwidth step_interpose cuda_lib_dirs

run_step plugin 40 step_plugin
run_step conformance 110 "$bundle/bin/gpu_test_device_conformance" cuda
run_step bandwidth 60 step_bandwidth
run_step interpose 100 step_interpose
run_step torch 150 "$python" "$bundle/scripts/torch_cuda_check.py" --out "$results/torch" --jsonl "$results/torch_cuda_check.jsonl"

# Figures in results.jsonl too: the benchmark's line and the torch checks'.
[[ -s $results/gpu_signature_vs_memcpy.jsonl ]] && cat "$results/gpu_signature_vs_memcpy.jsonl" >>"$jsonl"
[[ -s $results/torch_cuda_check.jsonl ]] && cat "$results/torch_cuda_check.jsonl" >>"$jsonl"

say "summary ($((SECONDS - start))s in all):"
printf '%s\n' "${summary[@]}" | tee "$results/summary.txt" | tee -a "$log"
record summary "$([[ $failed == 0 ]] && echo ok || echo failed)" "$(printf '%s; ' "${summary[@]}")" $((SECONDS - start))
exit $failed
