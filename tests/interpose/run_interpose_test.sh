#!/usr/bin/env bash
# The interposition tests: runs a test host program (linked against a
# stand-in vendor library over host memory) under LD_PRELOAD=<interposer> with
# PEAT_INTERPOSE_* settings, and checks what it printed (each call's outcome
# against the exact result), what the interposer wrote on stderr, the trace
# (read back by check_trace through the trace API) and the JSON-lines log.
# Usage: run_interpose_test.sh <case> <work dir>; paths come from the
# environment (APP_CUBLAS, APP_ROCBLAS, LIB_CUBLAS, LIB_ROCBLAS, CANDIDATE,
# CHECK_TRACE, PYTHON, APP_CUBLAS_DEVICE, CANDIDATE_DEVICE, CUPTI_TEST, LIB_CUPTI), set by
# tests/interpose/CMakeLists.txt.
set -euo pipefail
case_name=$1
work=$2/$case_name
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL ($case_name): $*" >&2; exit 1; }

# The outcome lines a program prints when nothing changed, except the
# overrides given as "entry:call=outcome".
expected() {
  local vendor=$1; shift
  declare -A o=()
  local kv
  for kv in "$@"; do o[${kv%%=*}]=${kv#*=}; done
  local spec
  if [[ $vendor == cublas ]]; then
    spec="cublasSgemm_v2:6 cublasDgemm_v2:3 cublasGemmEx:2 cublasSgemmStridedBatched:2"
  else
    spec="hipblasSgemm:6 rocblas_dgemm:3 rocblas_gemm_ex:2 rocblas_sgemm_strided_batched:2"
  fi
  local e name n i
  for e in $spec; do
    name=${e%%:*}; n=${e#*:}
    for ((i = 0; i < n; ++i)); do echo "$name $i ${o[$name:$i]:-golden}"; done
  done
}

# run <vendor> [VAR=value ...]: runs the program under the interposer; stdout,
# stderr and the exit status land in $work.
run() {
  local vendor=$1; shift
  local app lib
  if [[ $vendor == cublas ]]; then app=$APP_CUBLAS lib=$LIB_CUBLAS; else app=$APP_ROCBLAS lib=$LIB_ROCBLAS; fi
  set +e
  env -u PEAT_INTERPOSE -u PEAT_INTERPOSE_TRACE -u PEAT_INTERPOSE_FI -u PEAT_INTERPOSE_LOG -u PEAT_INTERPOSE_SAMPLE \
    PEAT_INTERPOSE_BACKEND=cpu "$@" LD_PRELOAD="$lib" "$app" >"$work/stdout" 2>"$work/stderr"
  echo $? >"$work/rc"
  set -e
}

check_outcomes() {  # check_outcomes <vendor> [overrides]
  expected "$@" >"$work/expected"
  if ! diff -u "$work/expected" "$work/stdout" >"$work/diff"; then
    cat "$work/diff" >&2; echo "stderr:" >&2; cat "$work/stderr" >&2
    fail "the calls' outcomes differ from the schedule"
  fi
  [[ $(cat "$work/rc") == 0 ]] || fail "the program exited with $(cat "$work/rc")"
}

no_stderr() { [[ ! -s $work/stderr ]] || { cat "$work/stderr" >&2; fail "unexpected output on stderr"; }; }

# log_check <python expression over `lines` (the log's JSON objects)> <what>
log_check() {
  "$PYTHON" - "$work/log.jsonl" "$1" "$2" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
calls = {l["op"]: l["calls"] for l in lines if l.get("event") == "calls"}
firings = [l for l in lines if "event" not in l]
if not eval(sys.argv[2]):
    print("log check failed: " + sys.argv[3], file=sys.stderr)
    for l in lines: print(json.dumps(l), file=sys.stderr)
    sys.exit(1)
PY
}

cand="$CANDIDATE:peat_test_candidate_gemm"
case $case_name in
  cublas_passthrough | rocblas_passthrough)
    vendor=${case_name%%_*}
    run "$vendor" PEAT_INTERPOSE=0 PEAT_INTERPOSE_TRACE="$work/t.peat" PEAT_INTERPOSE_LOG="$work/log.jsonl" \
      PEAT_INTERPOSE_FI="op=*,model=value,value=nan"
    check_outcomes "$vendor"
    no_stderr
    [[ ! -e $work/t.peat && ! -e $work/log.jsonl ]] || fail "PEAT_INTERPOSE=0 still wrote a trace or a log"
    ;;
  cublas_record | rocblas_record)
    vendor=${case_name%%_*}
    first=$([[ $vendor == cublas ]] && echo cublasSgemm_v2 || echo hipblasSgemm)
    run "$vendor" PEAT_INTERPOSE_TRACE="$work/t.peat" PEAT_INTERPOSE_LOG="$work/log.jsonl" \
      PEAT_INTERPOSE_SAMPLE="op=$first,every_n=2"
    check_outcomes "$vendor"
    no_stderr
    "$CHECK_TRACE" "$work/t.peat" "$vendor" 2
    if [[ $vendor == cublas ]]; then
      log_check 'calls == {"cublasSgemm_v2": 6, "cublasDgemm_v2": 3, "cublasGemmEx": 2, "cublasSgemmStridedBatched": 2}' \
        "per-op call counts"
    else
      # hipblasSgemm reaches the interposed rocblas_sgemm through the stand-in: counted once, as hipblasSgemm.
      log_check 'calls == {"hipblasSgemm": 6, "rocblas_dgemm": 3, "rocblas_gemm_ex": 2, "rocblas_sgemm_strided_batched": 2}' \
        "per-op call counts (a hipBLAS call that runs rocBLAS counts once)"
    fi
    ;;
  cublas_candidate)
    run cublas PEAT_INTERPOSE_LOG="$work/log.jsonl" PEAT_INTERPOSE_FI="op=cublasSgemm_v2,candidate=$cand,every_n=3;\
op=cublasDgemm_v2,action=run_candidate,candidate=$cand,every_n=2,phase_offset=1;\
op=cublasSgemmStridedBatched,action=run_both,candidate=$cand"
    check_outcomes cublas cublasSgemm_v2:0=candidate cublasSgemm_v2:3=candidate cublasDgemm_v2:1=candidate
    no_stderr
    log_check '[(f["op_name"], f["call"], f["action_name"], f["kept_golden"]) for f in firings] == [
        ("cublasSgemm_v2", 0, "run_candidate", 0), ("cublasSgemm_v2", 3, "run_candidate", 0),
        ("cublasDgemm_v2", 1, "run_candidate", 0),
        ("cublasSgemmStridedBatched", 0, "run_both", 1), ("cublasSgemmStridedBatched", 1, "run_both", 1)]' \
      "the firing log lists each swap on schedule"
    # run_both compares golden with the candidate: every element is 0.25 off.
    log_check 'all(f["compared"] == 1 and f["mismatches"] == 12 and f["max_abs_error"] == 0.25
                   for f in firings if f["action_name"] == "run_both")' "run_both comparisons"
    ;;
  rocblas_fi)
    run rocblas PEAT_INTERPOSE_LOG="$work/log.jsonl" PEAT_INTERPOSE_FI="op=hipblasSgemm,candidate=$cand,every_n=3;\
op=rocblas_gemm_ex,model=value,value=1e6,count=1;op=rocblas_dgemm,candidate=$cand,first_calls=1"
    check_outcomes rocblas hipblasSgemm:0=candidate hipblasSgemm:3=candidate "rocblas_gemm_ex:0=changed 1" \
      "rocblas_gemm_ex:1=changed 1" rocblas_dgemm:0=candidate
    no_stderr
    log_check 'len(firings) == 5 and calls["hipblasSgemm"] == 6 and "rocblas_sgemm" not in calls' \
      "five firings, hipBLAS calls counted once"
    ;;
  cublas_inject)
    run cublas PEAT_INTERPOSE_LOG="$work/log.jsonl" \
      PEAT_INTERPOSE_FI="op=cublasSgemm_v2,model=bitflip,bit=30,every_n=3,phase_offset=2;op=cublasGemmEx,action=inject,model=value,value=1e6,count=1"
    check_outcomes cublas "cublasSgemm_v2:2=changed 1" "cublasSgemm_v2:5=changed 1" "cublasGemmEx:0=changed 1" \
      "cublasGemmEx:1=changed 1"
    no_stderr
    log_check '[(f["op_name"], f["call"], f["injected"]) for f in firings] == [("cublasSgemm_v2", 2, 1),
        ("cublasSgemm_v2", 5, 1), ("cublasGemmEx", 0, 1), ("cublasGemmEx", 1, 1)]' "injections on schedule"
    ;;
  cublas_bad_spec | rocblas_bad_spec)
    vendor=${case_name%%_*}
    # Keys and values the grammar refuses, then values the injector refuses:
    # "VARIABLE=value|what the one line must say".
    specs=(
      "PEAT_INTERPOSE_FI=op=*,evry_n=3|PEAT_INTERPOSE_FI policy 1, key 'evry_n': unknown key"
      "PEAT_INTERPOSE_FI=op=*,model=bitflp|policy 1, key 'model': 'bitflp' is not an error model"
      "PEAT_INTERPOSE_FI=op=*,model=bitflip,every_n=x3|key 'every_n': 'x3' is not a non-negative integer"
      "PEAT_INTERPOSE_FI=op=*,bit=3|key 'bit': an error-model field needs model="
      "PEAT_INTERPOSE_FI=op=*,action=run_both|policy 1, key 'action': action run_both needs candidate="
      "PEAT_INTERPOSE_FI=op=*,model=bitflip,bit=3;op=*,model=bitflip,every_n=0|PEAT_INTERPOSE_FI policy 2: .*every_n"
      "PEAT_INTERPOSE_FI=op=*,candidate=/nonexistent/libx.so:f|policy 1, candidate '/nonexistent/libx.so:f'"
      "PEAT_INTERPOSE_SAMPLE=op=*,evry=2|PEAT_INTERPOSE_SAMPLE rule 1, key 'evry': unknown key"
    )
    for spec in "${specs[@]}"; do
      setting=${spec%%|*}
      run "$vendor" PEAT_INTERPOSE_TRACE="$work/t.peat" "$setting"
      check_outcomes "$vendor"
      [[ $(wc -l <"$work/stderr") == 1 ]] || { cat "$work/stderr" >&2; fail "$setting: expected exactly one line on stderr"; }
      grep -q -- "${spec#*|}" "$work/stderr" || { cat "$work/stderr" >&2; fail "$setting: the line does not name the problem"; }
      grep -q "calls pass through" "$work/stderr" || fail "$setting: the line does not say that calls pass through"
    done
    ;;
  cublas_no_device | rocblas_no_device)
    # The default session backend is the vendor's device backend; without a
    # device (or without its plugin) the interposer says so in one line.
    vendor=${case_name%%_*}
    backend=$([[ $vendor == cublas ]] && echo cuda || echo hip)
    run "$vendor" PEAT_INTERPOSE_BACKEND="$backend" PEAT_INTERPOSE_TRACE="$work/t.peat" \
      PEAT_INTERPOSE_FI="op=*,model=value,value=nan"
    if [[ ! -s $work/stderr ]]; then
      echo "SKIP: backend '$backend' has a device here; this test is for machines without one"
      exit 77
    fi
    check_outcomes "$vendor"
    [[ $(wc -l <"$work/stderr") == 1 ]] || { cat "$work/stderr" >&2; fail "expected exactly one line on stderr"; }
    grep -Eq "backend '$backend'.*interposition is off, calls pass through" "$work/stderr" ||
      { cat "$work/stderr" >&2; fail "the line does not name the backend and the pass-through"; }
    cat "$work/stderr"
    ;;
  cublas_device_record | cublas_device_inject | cublas_device_candidate)
    # The real cuBLAS on a GPU (APP_CUBLAS_DEVICE links libcublas): skipped,
    # with the program's message, where there is no CUDA device.
    if [[ $case_name == cublas_device_record ]]; then
      settings=(PEAT_INTERPOSE_TRACE="$work/t.peat" PEAT_INTERPOSE_SAMPLE="op=cublasSgemm_v2,every_n=2")
      overrides=()
    elif [[ $case_name == cublas_device_candidate ]]; then
      # The test candidate built with CUDA staging (CANDIDATE_DEVICE): the
      # schedule of cublas_candidate on device memory; run_both compares on
      # the CUDA backend.
      dcand="$CANDIDATE_DEVICE:peat_test_candidate_gemm"
      settings=(PEAT_INTERPOSE_LOG="$work/log.jsonl"
                PEAT_INTERPOSE_FI="op=cublasSgemm_v2,candidate=$dcand,every_n=3;\
op=cublasDgemm_v2,action=run_candidate,candidate=$dcand,every_n=2,phase_offset=1;\
op=cublasSgemmStridedBatched,action=run_both,candidate=$dcand")
      overrides=(cublasSgemm_v2:0=candidate cublasSgemm_v2:3=candidate cublasDgemm_v2:1=candidate)
    else
      settings=(PEAT_INTERPOSE_LOG="$work/log.jsonl"
                PEAT_INTERPOSE_FI="op=cublasGemmEx,model=value,value=1e6,count=1;op=cublasSgemmStridedBatched,model=bitflip,bit=30,every_n=2")
      overrides=("cublasGemmEx:0=changed 1" "cublasGemmEx:1=changed 1" "cublasSgemmStridedBatched:0=changed 1")
    fi
    set +e
    env -u PEAT_INTERPOSE PEAT_INTERPOSE_BACKEND=cuda "${settings[@]}" LD_PRELOAD="$LIB_CUBLAS" "$APP_CUBLAS_DEVICE" \
      >"$work/stdout" 2>"$work/stderr"
    rc=$?
    set -e
    if [[ $rc == 77 ]]; then cat "$work/stdout"; exit 77; fi
    echo $rc >"$work/rc"
    check_outcomes cublas "${overrides[@]}"
    no_stderr
    if [[ $case_name == cublas_device_record ]]; then
      "$CHECK_TRACE" "$work/t.peat" cublas 2
    elif [[ $case_name == cublas_device_candidate ]]; then
      log_check '[(f["op_name"], f["call"], f["action_name"], f["kept_golden"]) for f in firings] == [
          ("cublasSgemm_v2", 0, "run_candidate", 0), ("cublasSgemm_v2", 3, "run_candidate", 0),
          ("cublasDgemm_v2", 1, "run_candidate", 0),
          ("cublasSgemmStridedBatched", 0, "run_both", 1), ("cublasSgemmStridedBatched", 1, "run_both", 1)]' \
        "the firing log lists each swap on schedule"
      log_check 'all(f["compared"] == 1 and f["mismatches"] == 12 and f["max_abs_error"] == 0.25
                     for f in firings if f["action_name"] == "run_both")' "run_both comparisons on the device"
    else
      log_check 'len(firings) == 3 and all(f["injected"] == 1 for f in firings)' "three injections on the device"
    fi
    ;;
  cupti)
    # Loading the tracer and calling its entry point as the CUDA driver would:
    # it must return, and at exit report either tracing or, without a usable
    # driver or with another CUPTI subscriber, PEAT_STATUS_UNAVAILABLE with a reason.
    set +e
    PEAT_CUPTI_OUTPUT="$work/cupti.json" "$CUPTI_TEST" "$LIB_CUPTI" >"$work/stdout" 2>"$work/stderr"
    rc=$?
    set -e
    [[ $rc == 0 ]] || { cat "$work/stdout" "$work/stderr" >&2; fail "the loader program exited with $rc"; }
    "$PYTHON" - "$work/cupti.json" <<'PY' || { cat "$work/stderr" >&2; fail "the tracer's report is wrong"; }
import json, sys
r = json.load(open(sys.argv[1]))
assert r["tracer"] == "peat-cupti-tracer", r
if r["status"] == "ok":
    assert r["peat_status"] == 0 and r["launches"] == 0 and r["kernels"] == [], r
    print("cupti tracer: subscribed (a CUDA driver is present)")
else:
    assert r["status"] == "unavailable" and r["peat_status"] == 3, r
    assert "cupti" in r["message"].lower() and "not traced" in r["message"], r
    assert any("not traced" in line for line in r["log"]), r
    print("cupti tracer: UNAVAILABLE, reported: " + r["message"])
PY
    [[ $(wc -l <"$work/stderr") == 1 ]] || { cat "$work/stderr" >&2; fail "expected one status line on stderr"; }
    ;;
  *) fail "unknown case" ;;
esac
echo "ok: $case_name"
