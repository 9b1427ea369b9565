// gpu_portability.h — the few differences between CUDA and HIP that the
// single-source kernels of this directory meet, mapped to one spelling.
//
// The kernel sources (*.cu) are compiled twice: by nvcc for the CUDA plugin
// and by clang (-x hip) for the HIP plugin. Both dialects share threadIdx,
// blockIdx, blockDim, gridDim, __syncthreads, __shared__ and the triple-chevron
// launch; what differs is the runtime header, the runtime's names and the
// 64-bit atomics, which are wrapped here. C++17.
#pragma once

#include <cstdint>

#if defined(__HIP__) || defined(__HIPCC__)
#  include <hip/hip_runtime.h>
#  define PEAT_GPU_HIP 1
namespace peat::kernels {
using gpu_error_t = hipError_t;
using gpu_stream_t = hipStream_t;
constexpr gpu_error_t kGpuSuccess = hipSuccess;
inline gpu_error_t gpu_last_launch_error() { return hipGetLastError(); }
inline const char* gpu_error_string(gpu_error_t e) { return hipGetErrorString(e); }
}  // namespace peat::kernels
#else
#  include <cuda_runtime.h>
#  define PEAT_GPU_HIP 0
namespace peat::kernels {
using gpu_error_t = cudaError_t;
using gpu_stream_t = cudaStream_t;
constexpr gpu_error_t kGpuSuccess = cudaSuccess;
inline gpu_error_t gpu_last_launch_error() { return cudaGetLastError(); }
inline const char* gpu_error_string(gpu_error_t e) { return cudaGetErrorString(e); }
}  // namespace peat::kernels
#endif

namespace peat::kernels {

// 64-bit atomics on global or shared memory. Both runtimes provide these
// overloads for unsigned long long; uint64_t is unsigned long on LP64, hence
// the casts.
__device__ __forceinline__ void atomic_add_u64(uint64_t* p, uint64_t v) {
  atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}
__device__ __forceinline__ void atomic_min_u64(uint64_t* p, uint64_t v) {
  atomicMin(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}
__device__ __forceinline__ void atomic_max_u64(uint64_t* p, uint64_t v) {
  atomicMax(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}
__device__ __forceinline__ void atomic_or_u32(uint32_t* p, uint32_t v) {
  atomicOr(reinterpret_cast<unsigned int*>(p), static_cast<unsigned int>(v));
}

}  // namespace peat::kernels
