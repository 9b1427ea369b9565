#!/usr/bin/env bash
# Step time of the example trainer (CNN, pretraining only) with PEAT detached,
# attached but idle (every GEMM through peat_injector_dispatch, nothing fires),
# recording 1 % of the GEMM calls (--record-every 100) and runtime FI at 1/10
# (bf16 candidate). Each mode runs REPS times, interleaved; the median ms/step
# is compared with the detached median of the same run.
# Usage: run.sh BUILD_DIR   (REPS, default 5, and IMAGES, default 16000, from the environment)
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
record="$here/../record.py"
train="$build/examples/cpp_trainer/peat_train"
cands="$build/examples/candidates/libpeat_candidates.so"
reps=${REPS:-5}
images=${IMAGES:-16000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
common=(--model cnn --epochs 1 --finetune-epochs 0 --train-size "$images" --test-size 200 --checkpoint "$tmp/ckpt")
declare -A extra=(
  [detached]=""
  [idle]="--attach"
  [record1]="--trace $tmp/t.peat --record-every 100"
  [fi10]="--fi-candidate $cands:peat_cand_bf16_kernel --fi-every 10"
)
declare -A times
for ((r = 0; r < reps; r++)); do
  for mode in detached idle record1 fi10; do
    # shellcheck disable=SC2086
    ms=$("$train" "${common[@]}" ${extra[$mode]} | sed -n 's/.*(\([0-9.]*\) ms\/step).*/\1/p')
    times[$mode]="${times[$mode]:-} $ms"
  done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
base=$(echo "${times[detached]}" | median)
note="peat_train CNN, 1 epoch of $images images ($(( (images + 63) / 64 )) steps), median of $reps interleaved runs; ms/step detached $base"
for pair in "idle attached_idle_overhead 0.02" "record1 record_1pct_overhead 0.05" "fi10 runtime_fi_10pct_overhead -"; do
  read -r mode metric target <<<"$pair"
  t=$(echo "${times[$mode]}" | median)
  ratio=$(python3 -c "print(f'{$t / $base - 1:.4f}')")
  args=(trainer --metric "$metric" --value "$ratio" --unit ratio --baseline "$base" --note "$note; ms/step $mode $t")
  [[ $target != - ]] && args+=(--target "$target")
  python3 "$record" "${args[@]}"
done
