/* peat_hd.h — the one macro that lets per-element arithmetic be shared between
 * the CPU backend (plain C++) and the device kernels (nvcc, hipcc).
 * Code in backends/common/ is C++17 and must compile in all three. */
#ifndef PEAT_BACKENDS_COMMON_HD_H
#define PEAT_BACKENDS_COMMON_HD_H

#if defined(__CUDACC__) || defined(__HIPCC__)
#  define PEAT_HD __host__ __device__ __forceinline__
#  define PEAT_DEVICE_COMPILER 1
#else
#  define PEAT_HD inline
#  define PEAT_DEVICE_COMPILER 0
#endif

#endif
