#!/usr/bin/env bash
# The GPU check in one go, for a machine with an NVIDIA GPU (DESIGN.md §9,
# gpu_signature_vs_memcpy). Builds libpeat and the CUDA plugin (HIP off, tests
# and benchmarks of the CPU side off: only what this needs, -j$(nproc)), then
# compiles the device programs against them and runs:
#   1. the plugin test (load, enumerate, round trips),
#   2. the conformance suite against the CPU backend (signatures, injections),
#   3. the bandwidth benchmark, recorded in benchmarks/results/gpu.jsonl.
# Figures and logs also go to $OUT when it is set.
#
# usage: benchmarks/gpu/run.sh
# It always builds in its own directory (PEAT_GPU_BUILD_DIR, default
# build-gpu), configured for this job only. `make bench` calls it with the main
# build directory as $1: that argument only marks the call as part of the
# whole benchmark run, where a machine without a GPU is skipped (exit 0)
# instead of failing.
# Environment: CUDA_HOME (default /usr/local/cuda), PEAT_GPU_BENCH_ELEMENTS
# (default 67108864 = 256 MiB of f32 per tensor).
# Exit status: 0 all passed; 2 no GPU; 3 missing toolchain or packages;
# 1 a build, test or benchmark failed. Budget: about 8 minutes on 16 cores.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=${PEAT_GPU_BUILD_DIR:-$repo/build-gpu}
from_make_bench=$(( $# > 0 ))
cuda=${CUDA_HOME:-/usr/local/cuda}
out=${OUT:-}
jobs=$(nproc)
elements=${PEAT_GPU_BENCH_ELEMENTS:-67108864}
start=$(date +%s)
say() { echo "[gpu/run.sh $(( $(date +%s) - start ))s] $*"; }
fail() { echo "gpu/run.sh: $2" >&2; exit "$1"; }

# --- fail fast: a device, a driver, a toolkit ----------------------------------
if ! ls /dev/nvidia0 >/dev/null 2>&1 && ! nvidia-smi -L >/dev/null 2>&1; then
  if (( from_make_bench )); then echo "gpu: no NVIDIA GPU on this machine: gpu_signature_vs_memcpy skipped"; exit 0; fi
  fail 2 "no NVIDIA GPU on this machine (no /dev/nvidia0, nvidia-smi sees nothing): nothing to measure"
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || true
[[ -x "$cuda/bin/nvcc" ]] || fail 3 "nvcc not found at $cuda/bin/nvcc (set CUDA_HOME)"
"$cuda/bin/nvcc" --version | tail -1  # the driver must be new enough for this runtime (CUDA 13: driver >= 580)
command -v cmake >/dev/null || fail 3 "cmake is not installed"
generator=(); command -v ninja >/dev/null && generator=(-G Ninja)

# --- configure + build: libpeat and the CUDA plugin only -------------------------
say "configuring in $build"
mkdir -p "$build"
if ! cmake -S "$repo" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DPEAT_WITH_CUDA=ON -DPEAT_WITH_HIP=OFF -DBUILD_TESTING=OFF -DPEAT_BUILD_BENCHMARKS=OFF \
      -DPEAT_BUILD_EXAMPLES=OFF -DCMAKE_CUDA_COMPILER="$cuda/bin/nvcc" -DCUDAToolkit_ROOT="$cuda" \
      >"$build/configure.log" 2>&1; then
  grep -E "Could NOT find|not found|Error" "$build/configure.log" | head -20 >&2 || true
  fail 3 "configure failed (log: $build/configure.log); libpeat needs the Debian packages of scripts/install-deps.sh"
fi
say "building libpeat and libpeat-backend-cuda with -j$jobs"
cmake --build "$build" -j "$jobs" --target peat peat-backend-cuda >"$build/build.log" 2>&1 ||
  { tail -40 "$build/build.log" >&2; fail 1 "build failed (log: $build/build.log)"; }
say "built"

# The device programs use only the public API: compile them directly, so that
# the test framework and Google Benchmark are not needed here.
bin=$build/gpu-bin
mkdir -p "$bin"
cxx=${CXX:-c++}
cc=${CC:-cc}
common=(-O2 -I"$repo" -I"$repo/include" -I"$repo/backends/common" -L"$build/lib" -lpeat -Wl,-rpath,"$build/lib")
"$cxx" -std=c++17 "$repo/tests/gpu/test_device_conformance.cpp" -o "$bin/conformance" "${common[@]}"
"$cc" -std=c11 -I"$repo/tests/c_api" "$repo/tests/gpu/test_device_backends.c" "$repo/tests/c_api/check.c" \
  -o "$bin/device_backends" "${common[@]}"
"$cxx" -std=c++17 "$here/bench_gpu_signature.cpp" -o "$bin/bench" "${common[@]}"
say "device programs compiled"

status=0
run_step() {  # name, command...
  local name=$1; shift
  say "running $name"
  if "$@" 2>&1 | tee "$build/$name.log"; then say "$name: passed"; else status=1; say "$name: FAILED"; fi
  [[ -n "$out" ]] && cp "$build/$name.log" "$out/" || true
}
run_step device_backends "$bin/device_backends" cuda
run_step conformance "$bin/conformance" cuda
python3 "$here/../../tests/gpu/check_device_code.py" "$build/lib/libpeat-backend-cuda.so" cuda sm_80 sm_90 ptx:sm_90 || status=1

say "benchmark: signature of 2 x $((elements * 4 / 1048576)) MiB f32 vs device-to-device copy"
line=$("$bin/bench" cuda "$elements") || { status=1; line=""; }
if [[ -n "$line" ]]; then
  echo "$line"
  [[ -n "$out" ]] && echo "$line" >>"$out/gpu_signature_vs_memcpy.jsonl"
  read -r value baseline ratio < <(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(d["value"], d["baseline"], d["ratio"])' "$line")
  python3 "$here/../record.py" gpu --metric gpu_signature_vs_memcpy --value "$value" --unit ms --baseline "$baseline" \
    --ratio "$ratio" --target ">=0.7" \
    --note "$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print("2 x %d MiB f32 on %s; signature %.0f GB/s read, copy %.0f GB/s read+write" % (d["elements"]*4>>20, d["device"], d["signature_GBps"], d["memcpy_GBps"]))' "$line")" || true
fi
say "done (status $status)"
exit $status
