#!/usr/bin/env bash
# The GPU bundle's checks without a GPU (tests/bundle/CMakeLists.txt).
# usage: check_bundle.sh <source dir> <build dir> <bundle dir> build|load|no-gpu|steps|torch-cpu
#   build   scripts/gpu-bundle.sh collects the bundle from the build (no
#           rebuild); it must be at most 64 MiB and hold what run.sh runs;
#   load    every ELF file resolves its libraries inside the bundle or among
#           those a GPU machine has; a bundled C program, the Python package
#           and the CUDA plugin load under env -i with LD_LIBRARY_PATH = the
#           bundle, and the loaded libraries come from the bundle;
#   no-gpu  run.sh exits 2 saying "no GPU" and records it (skipped, 77, on a
#           machine with a GPU);
#   steps   PEAT_BUNDLE_FORCE=1 run.sh runs all five steps, each skipped
#           (not failed) without a GPU, and writes the summary;
#   torch-cpu  the bundle's torch_cuda_check.py passes on the CPU backend.
set -euo pipefail
src=$1 build=$2 bundle=$3 what=$4
fail() { echo "FAIL (bundle $what): $*" >&2; exit 1; }
clean_env=(env -i PATH=/usr/bin:/bin HOME=/nonexistent LD_LIBRARY_PATH="$bundle/lib")
has_gpu() { compgen -G "/dev/nvidia[0-9]*" >/dev/null; }

case $what in
  build)
    "$src/scripts/gpu-bundle.sh" --build-dir "$build" --no-build "$bundle"
    size=$(du -sb "$bundle" | cut -f1)
    (( size <= 64 * 1024 * 1024 )) || fail "the bundle is $size bytes, over 64 MiB"
    for f in run.sh BUILD-INFO lib/libpeat.so.0 lib/libpeat-backend-cuda.so lib/libpeat-interpose-cublas.so \
             lib/libpeat-cupti-tracer.so lib/libpeat-test-gemm-candidate.so lib/libpeat-test-gemm-candidate-cuda.so \
             bin/c_test_device_backends bin/gpu_test_device_conformance bin/bench_gpu_signature \
             bin/peat_test_app_cublas_device bin/peat_interpose_check_trace bin/peat_test_cupti_loader \
             python/peat/__init__.py python/peat/torch.py scripts/torch_cuda_check.py scripts/run_interpose_test.sh \
             scripts/check_device_code.py; do
      [[ -e $bundle/$f ]] || fail "the bundle lacks $f"
    done
    # No symbolic links (they may not survive the transfer) and no debug info.
    [[ -z $(find "$bundle" -type l) ]] || fail "symbolic links in the bundle: $(find "$bundle" -type l)"
    if readelf -S "$bundle/lib/libpeat.so.0" | grep -q '\.debug_info'; then fail "libpeat.so.0 still has debug info"; fi
    # The device code: SASS for sm_80 and sm_90, PTX for sm_90.
    /usr/bin/python3 "$bundle/scripts/check_device_code.py" "$bundle/lib/libpeat-backend-cuda.so" cuda sm_80 sm_90 ptx:sm_90
    echo "bundle: $((size / 1024)) KiB, $(find "$bundle" -type f | wc -l) files"
    ;;
  load)
    # What a GPU machine has: glibc, libstdc++, libgcc_s, the CUDA driver and toolkit libraries.
    system='^(linux-vdso|ld-linux-x86-64|libc|libm|libdl|libpthread|librt|libresolv|libutil|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcublasLt|libcupti)\.so'
    while IFS= read -r -d '' f; do
      while read -r name arrow path _; do
        [[ $name == *.so* ]] || continue
        base=${name##*/}
        [[ $base =~ $system ]] && continue
        [[ $arrow == "=>" && $path == "$bundle/lib/"* ]] ||
          fail "$(basename "$f") loads $base from '${path:-nowhere}', not from the bundle"
      done < <("${clean_env[@]}" ldd "$f")
    done < <(find "$bundle/lib" "$bundle/bin" -type f -print0)
    # A bundled C program: loads libpeat and the CUDA plugin, reports no device.
    out=$("${clean_env[@]}" "$bundle/bin/c_test_device_backends" cuda) || fail "c_test_device_backends: $out"
    echo "$out"
    # The Python package from the bundle: version, a signature on the CPU
    # backend, the CUDA plugin found next to libpeat; every PEAT library
    # mapped comes from the bundle.
    "${clean_env[@]}" PEAT_LIBRARY="$bundle/lib/libpeat.so.0" PYTHONPATH="$bundle/python" PYTHONDONTWRITEBYTECODE=1 \
      /usr/bin/python3 - "$bundle" <<'PY' || fail "the Python package does not load from the bundle"
import sys
bundle = sys.argv[1]
import numpy as np
import peat
assert peat.library_path == bundle + "/lib/libpeat.so.0", peat.library_path
g = np.arange(1000, dtype=np.float32)
c = g.copy()
c[7] += 1
sig = peat.analyze(g, c)
assert sig.count == 1000 and sig.value_mismatch_count == 1, sig
cuda = peat.Backend.get("cuda")
assert cuda.path == bundle + "/lib/libpeat-backend-cuda.so", cuda.path
try:
    n = cuda.device_count
except peat.PeatError as exc:
    n = f"none ({exc})"
maps = [line.split()[-1] for line in open("/proc/self/maps") if ".so" in line]
for lib in ("libpeat.so", "libtbb", "libzstd", "libxxhash", "libfmt", "libhwy", "libpeat-backend-cuda"):
    paths = {m for m in maps if m.rsplit("/", 1)[-1].startswith(lib)}
    assert paths and all(p.startswith(bundle + "/lib/") for p in paths), (lib, paths)
print(f"python: peat {peat.version()} from the bundle; CPU signature ok; cuda plugin at {cuda.path}, devices: {n}")
PY
    ;;
  no-gpu)
    if has_gpu; then echo "SKIP: this machine has a GPU"; exit 77; fi
    results=$bundle.no-gpu-results
    rm -rf "$results"
    set +e
    out=$("${clean_env[@]}" "$bundle/run.sh" "$results" 2>&1)
    rc=$?
    set -e
    echo "$out"
    [[ $rc == 2 ]] || fail "run.sh exited $rc, not 2 (no GPU)"
    grep -q "no GPU" <<<"$out" || fail "run.sh does not say 'no GPU'"
    grep -q '"status": "no_gpu"' "$results/results.jsonl" || fail "results.jsonl does not record no_gpu"
    ;;
  steps)
    if has_gpu; then echo "SKIP: this machine has a GPU"; exit 77; fi
    results=$bundle.forced-results
    rm -rf "$results"
    set +e
    "${clean_env[@]}" PEAT_BUNDLE_FORCE=1 PYTHON=/usr/bin/python3 "$bundle/run.sh" "$results"
    rc=$?
    set -e
    /usr/bin/python3 - "$results" <<'PY' || fail "the steps' records are wrong"
import json, sys
res = sys.argv[1]
lines = [json.loads(l) for l in open(res + "/results.jsonl")]
steps = {l["step"]: l for l in lines if "step" in l}
for name in ("plugin", "conformance", "bandwidth", "interpose", "torch"):
    s = steps[name]
    assert s["status"] == "skipped", s
    assert s["reason"], s
assert steps["summary"]["status"] == "ok", steps["summary"]
summary = open(res + "/summary.txt").read().splitlines()
assert len(summary) == 5 and all(": skipped (" in l for l in summary), summary
print("\n".join(summary))
PY
    [[ $rc == 0 ]] || fail "run.sh exited $rc with every step skipped"
    ;;
  torch-cpu)
    # torch_cuda_check.py from the bundle on the CPU backend (Debian's torch
    # 1.13 has no CUDA): the same recording, replays and verdicts.
    "${clean_env[@]}" PEAT_LIBRARY="$bundle/lib/libpeat.so.0" PYTHONPATH="$bundle/python" PYTHONDONTWRITEBYTECODE=1 \
      OMP_NUM_THREADS=2 /usr/bin/python3 "$bundle/scripts/torch_cuda_check.py" --device cpu --out "$bundle.torch-cpu"
    ;;
  *) fail "unknown check" ;;
esac
echo "ok: bundle $what"
