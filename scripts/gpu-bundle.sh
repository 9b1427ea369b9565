#!/usr/bin/env bash
# Collects, into one folder of at most 64 MiB, what the first run on a bare
# GPU machine needs (docs/gpu-backends.md, "The GPU bundle"): libpeat, the
# CUDA plugin, the cuBLAS interposer and the CUPTI tracer, the device test
# programs, the bandwidth benchmark, the Python package, the runtime libraries
# a bare machine lacks (found with ldd), and OUT_DIR/run.sh, which runs the
# device checks from the bundle with nothing built.
#
# usage: scripts/gpu-bundle.sh [--build-dir DIR [--no-build]] OUT_DIR
#   --build-dir DIR  reuse a configured build (make test passes the main one):
#                    the bundle's targets are built there if needed, then
#                    copied with their debug info stripped;
#   --no-build       with --build-dir: only collect (the targets must exist;
#                    the ctest uses it, since make test built everything);
#   without --build-dir: a Release build of the bundle's targets only, in
#                    OUT_DIR.build (CUDA on, HIP off).
# Exit status: 0 bundle written; 1 build failed or a file is missing;
# 2 bad usage; 3 the bundle exceeds 64 MiB.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build="" no_build=0
while (( $# > 1 )); do
  case $1 in
    --build-dir) build=$(cd "$2" && pwd); shift 2 ;;
    --no-build) no_build=1; shift ;;
    *) echo "gpu-bundle.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
(( $# == 1 )) || { echo "usage: scripts/gpu-bundle.sh [--build-dir DIR [--no-build]] OUT_DIR" >&2; exit 2; }
out=$1
limit_bytes=$((64 * 1024 * 1024))
fail() { echo "gpu-bundle.sh: $*" >&2; exit 1; }

# The targets the bundle takes, and where a build puts them.
targets=(peat peat-backend-cuda peat-interpose-cublas peat-cupti-tracer c_test_device_backends
         gpu_test_device_conformance bench_gpu_signature peat_test_app_cublas_device
         peat_interpose_check_trace peat_test_gemm_candidate peat_test_gemm_candidate_cuda peat_test_cupti_loader)
libs=(lib/libpeat.so.0 lib/libpeat-backend-cuda.so lib/libpeat-interpose-cublas.so lib/libpeat-cupti-tracer.so
      tests/interpose/libpeat-test-gemm-candidate.so tests/interpose/libpeat-test-gemm-candidate-cuda.so)
bins=(tests/gpu/c_test_device_backends tests/gpu/gpu_test_device_conformance benchmarks/gpu/bench_gpu_signature
      tests/interpose/peat_test_app_cublas_device tests/interpose/peat_interpose_check_trace
      tests/interpose/peat_test_cupti_loader)

if [[ -z $build ]]; then
  build=$(mkdir -p "$out.build" && cd "$out.build" && pwd)
  generator=(); command -v ninja >/dev/null && generator=(-G Ninja)
  echo "gpu-bundle.sh: Release build of the bundle's targets in $build"
  cmake -S "$repo" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DPEAT_WITH_CUDA=ON -DPEAT_WITH_HIP=OFF \
    -DPEAT_BUILD_EXAMPLES=OFF -DPEAT_BUILD_TOOLS=OFF -DPEAT_TEST_SUITES="gpu;interpose" >"$build/bundle-configure.log" 2>&1 ||
    { tail -20 "$build/bundle-configure.log" >&2; fail "configure failed (log: $build/bundle-configure.log)"; }
fi
if (( ! no_build )); then
  cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" >"$build/bundle-build.log" 2>&1 ||
    { tail -30 "$build/bundle-build.log" >&2; fail "build failed (log: $build/bundle-build.log)"; }
fi
arch=$(sed -n 's/^PEAT_CUDA_ARCHITECTURES:STRING=//p' "$build/CMakeCache.txt")

# OUT_DIR is replaced: only an earlier bundle or an empty folder.
if [[ -d $out && -n $(ls -A "$out") && ! -f $out/BUILD-INFO ]]; then
  echo "gpu-bundle.sh: refusing to replace $out: it is not empty and not a bundle (no BUILD-INFO)" >&2; exit 2
fi
rm -rf "$out"
mkdir -p "$out/lib" "$out/bin" "$out/python" "$out/scripts"
for f in "${libs[@]}" "${bins[@]}"; do
  [[ -f $build/$f ]] || fail "$build/$f is missing (build the targets: ${targets[*]})"
done
# Debug info is most of a RelWithDebInfo build; the symbols stay (backtraces).
for f in "${libs[@]}"; do strip --strip-debug -o "$out/lib/$(basename "$f")" "$build/$f"; done
for f in "${bins[@]}"; do strip --strip-debug -o "$out/bin/$(basename "$f")" "$build/$f"; done

# Runtime libraries from ldd, except what every machine with the CUDA 13
# driver and toolkit has: glibc, libstdc++, libgcc_s, and the CUDA driver,
# runtime, cuBLAS and CUPTI (the same major version as here; run.sh checks).
system='^(linux-vdso|ld-linux-x86-64|ld-linux-aarch64|libc|libm|libdl|libpthread|librt|libresolv|libutil|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcublasLt|libcupti|libnvidia-.*)\.so'
declare -A bundled=()
for f in "$out"/lib/*.so* "$out"/bin/*; do
  while read -r name arrow path _; do
    [[ $name == *.so* ]] || continue
    name=${name##*/}  # the loader is listed by its path
    [[ $name =~ $system ]] && continue
    [[ -e $out/lib/$name || -n ${bundled[$name]:-} ]] && continue
    [[ $arrow == "=>" && $path == /* ]] || fail "$(basename "$f") needs $name, which ldd does not find here"
    cp -L "$path" "$out/lib/$name"
    bundled[$name]=$path
  done < <(LD_LIBRARY_PATH="$out/lib" ldd "$f")
done

cp -r "$repo/bindings/python/peat" "$out/python/peat"
find "$out/python" -name __pycache__ -prune -exec rm -rf {} +
cp "$repo/scripts/gpu-bundle/run.sh" "$out/run.sh"
cp "$repo/scripts/gpu-bundle/torch_cuda_check.py" "$repo/tests/interpose/run_interpose_test.sh" \
   "$repo/tests/gpu/check_device_code.py" "$out/scripts/"
chmod +x "$out/run.sh" "$out/scripts/run_interpose_test.sh"
{
  echo "commit $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$repo" diff --quiet HEAD 2>/dev/null || echo ' (modified)')"
  echo "built on $(uname -srm), $(ldd --version | head -1)"
  echo "build dir $build ($(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$build/CMakeCache.txt")), CUDA architectures $arch"
  echo "nvcc $(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p' || echo '?')"
  for name in "${!bundled[@]}"; do echo "bundled $name from ${bundled[$name]}"; done | sort
} >"$out/BUILD-INFO"

size=$(du -sb "$out" | cut -f1)
echo "gpu-bundle.sh: $out: $((size / 1024)) KiB ($(find "$out" -type f | wc -l) files)"
(( size <= limit_bytes )) || { echo "gpu-bundle.sh: $out is $size bytes, over the 64 MiB limit" >&2; exit 3; }
