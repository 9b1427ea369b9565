/*
 * peat_interpose.h — what a candidate GEMM kernel receives from the PEAT
 * library interposers (libpeat-interpose-cublas.so, libpeat-interpose-rocblas.so).
 *
 * An intercepted GEMM (D = alpha * op(A) * op(B) + beta * C, column-major as
 * in BLAS) reaches the injector as one op call. A candidate registered with
 * PEAT_INTERPOSE_FI="...,candidate=libx.so:symbol" is a peat_kernel_fn
 * (peat/injector.h) called with
 *   inputs[0] = A, inputs[1] = B, and inputs[2] = the C operand before the
 *               call when n_in == 3 (beta != 0 or unknown);
 *   outputs[0] = D (the output, which is C itself for cuBLAS and for rocBLAS
 *               gemm_ex with c == d);
 *   attrs     = a const peat_interpose_gemm_t* describing the call.
 * Every matrix is a DLTensor view of the vendor's column-major storage, seen
 * row-major: a rows x cols matrix with leading dimension ld has shape
 * [cols, rows] and strides [ld, 1] (so element (i, j) is at j * ld + i);
 * strided-batched calls add a leading [batch] dimension with the batch stride.
 * Under a run_both policy outputs[0] is a compact scratch tensor of the same
 * shape (strides NULL: row-major [batch,] n, m). A is stored as (transa == 'N' ? m x k : k x m), B as (transb == 'N' ? k x n :
 * n x k), C and D as m x n. Tensors live where the vendor library has them
 * (device memory for the real libraries). The candidate writes outputs[0] and
 * returns 0, or non-zero to have the golden result kept.
 */
#ifndef PEAT_INTERPOSE_H
#define PEAT_INTERPOSE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct peat_interpose_gemm {
  uint32_t struct_size;   /* sizeof(peat_interpose_gemm_t) of the interposer */
  const char* entry;      /* the intercepted entry point, e.g. "cublasSgemm_v2" (the op name) */
  const char* vendor;     /* "cublas", "rocblas" or "hipblas" */
  char transa, transb;    /* 'N', 'T' or 'C' */
  int64_t m, n, k;        /* op(A) is m x k, op(B) is k x n, C and D are m x n */
  int64_t lda, ldb, ldc, ldd;             /* leading dimensions, in elements */
  int64_t batch;                          /* 1 for a plain GEMM */
  int64_t stride_a, stride_b, stride_c, stride_d; /* batch strides in elements (0 when batch == 1) */
  double alpha, beta;     /* the scalars, widened; NaN when they live in device memory */
  int32_t scalars_on_device; /* 1 when the handle's pointer mode is device */
  int32_t compute_type;   /* the vendor's compute type argument, or -1 when the entry has none */
  void* handle;           /* the vendor handle of the call (cublasHandle_t, rocblas_handle, ...) */
  void* stream;           /* the handle's stream (cudaStream_t, hipStream_t), NULL = default */
} peat_interpose_gemm_t;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PEAT_INTERPOSE_H */
