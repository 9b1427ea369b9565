#!/usr/bin/env bash
# Step time of the example trainer (CNN, pretraining only) with PEAT detached,
# attached but idle (every GEMM through peat_injector_dispatch, nothing fires),
# recording 1 % and 10 % of the GEMM calls (--record-every 100 / 10) and
# runtime FI at 1/10 (bf16 candidate).
#
# Robust on a shared machine: each repetition runs every mode once, in an order
# rotated from one repetition to the next (no mode always runs first or after
# the same neighbour); each mode's ratio is taken against the detached run of
# the SAME repetition (paired: a load change between repetitions cancels), and
# the reported overhead is the median of those per-repetition ratios (the note
# gives their range). Besides wall time per step, peat_train reports the CPU
# time per step of its training thread and of the whole process: these do not
# grow when other programs take the cores, so their ratios stay meaningful on a
# busy machine (the training thread's is the step time on an otherwise idle
# core; the process's adds the profiler's workers and writer).
#
# Usage: run.sh BUILD_DIR   (from the environment: REPS, default 7; IMAGES,
# default 16000; BASELINE_LIBDIR: a folder with another libpeat.so.0 (say, of
# the previous commit) — then the recording mode also runs against it, in the
# same repetitions, and its overhead is printed, not recorded: a before/after
# comparison under identical conditions)
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
record="$here/../record.py"
train="$build/examples/cpp_trainer/peat_train"
cands="$build/examples/candidates/libpeat_candidates.so"
reps=${REPS:-7}
images=${IMAGES:-16000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
common=(--model cnn --epochs 1 --finetune-epochs 0 --train-size "$images" --test-size 200 --checkpoint "$tmp/ckpt")
declare -A extra=(
  [detached]=""
  [idle]="--attach"
  [record1]="--trace $tmp/t.peat --record-every 100"
  [record1_baseline]="--trace $tmp/t.peat --record-every 100"
  [record10]="--trace $tmp/t.peat --record-every 10"
  [fi10]="--fi-candidate $cands:peat_cand_bf16_kernel --fi-every 10"
)
modes=(detached idle record1 record10 fi10)
[[ -n ${BASELINE_LIBDIR:-} ]] && modes+=(record1_baseline)
declare -A times ratios
kinds=(wall thread process)  # ms/step: wall time, training-thread CPU, process CPU
for ((r = 0; r < reps; r++)); do
  declare -A ms=()
  n=${#modes[@]}
  for ((i = 0; i < n; i++)); do
    mode=${modes[$(((i + r) % n))]}
    env=()
    [[ $mode == record1_baseline ]] && env=(env "LD_LIBRARY_PATH=$BASELINE_LIBDIR")
    # shellcheck disable=SC2086
    line=$("${env[@]}" "$train" "${common[@]}" ${extra[$mode]} | grep '^done:')
    read -r ms[$mode,wall] ms[$mode,thread] ms[$mode,process] < <(echo "$line" |
      sed -n 's/.*(\([0-9.]*\) ms\/step; CPU \([0-9.]*\) ms\/step training thread, \([0-9.]*\) ms\/step process).*/\1 \2 \3/p')
    for k in "${kinds[@]}"; do times[$mode,$k]="${times[$mode,$k]:-} ${ms[$mode,$k]}"; done
  done
  for mode in "${modes[@]}"; do
    for k in "${kinds[@]}"; do
      ratios[$mode,$k]="${ratios[$mode,$k]:-} $(python3 -c "print(${ms[$mode,$k]} / ${ms[detached,$k]} - 1)")"
    done
  done
  unset ms
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
range() { tr ' ' '\n' | grep . | sort -g | awk 'NR==1 {lo=$1} {hi=$1} END {printf "%.3f..%.3f", lo, hi}'; }
base=$(echo "${times[detached,wall]}" | median)
note="peat_train CNN, 1 epoch of $images images ($(( (images + 63) / 64 )) steps), $reps repetitions (modes in rotated order); overhead = median of per-repetition ratios to that repetition's detached run"
for pair in "idle attached_idle 0.02" "record1 record_1pct 0.05" "record10 record_10pct -" "fi10 runtime_fi_10pct -"; do
  read -r mode metric target <<<"$pair"
  for k in "${kinds[@]}"; do
    name=${metric}_overhead
    [[ $k != wall ]] && name=${metric}_${k}_cpu_overhead
    t=$(echo "${times[$mode,$k]}" | median)
    b=$(echo "${times[detached,$k]}" | median)
    ratio=$(python3 -c "print(f'{$(echo "${ratios[$mode,$k]}" | median):.4f}')")
    args=(trainer --metric "$name" --value "$ratio" --unit ratio --baseline "$b"
          --note "$note; $k ms/step: median detached $b, $mode $t; ratios $(echo "${ratios[$mode,$k]}" | range)")
    [[ $target != - && $k == wall ]] && args+=(--target "$target")
    python3 "$record" "${args[@]}"
  done
done
if [[ -n ${BASELINE_LIBDIR:-} ]]; then
  for k in "${kinds[@]}"; do
    echo "record_1pct $k overhead with $BASELINE_LIBDIR/libpeat.so.0 (not recorded):" \
         "$(python3 -c "print(f'{$(echo "${ratios[record1_baseline,$k]}" | median):.4f}')")" \
         "(ratios $(echo "${ratios[record1_baseline,$k]}" | range); $k ms/step $(echo "${times[record1_baseline,$k]}" | median))"
  done
fi
