/* A test-only stand-in for cuBLAS: the cuBLAS GEMM entry points (prototypes
 * from the real cublas_api.h) computed on the CPU over host memory, with a
 * handle struct of its own. It is NOT cuBLAS; it lets the interposition tests
 * run a cuBLAS client under LD_PRELOAD=libpeat-interpose-cublas.so on a
 * machine without a GPU. Only f32 and f64 are implemented. */
#include <cublas_api.h>

#include <stdint.h>
#include <stdlib.h>

#include "standin_gemm.h"

#define EXPORT __attribute__((visibility("default")))

struct cublasContext {
  uint32_t magic;
  cudaStream_t stream;
  cublasPointerMode_t mode;
};

enum { STANDIN_MAGIC = 0x5CB1A5u };

static int valid(cublasHandle_t h) { return h != NULL && h->magic == STANDIN_MAGIC; }
static int trans(cublasOperation_t op, int* out) {
  if (op == CUBLAS_OP_N) *out = 0;
  else if (op == CUBLAS_OP_T || op == CUBLAS_OP_C) *out = 1; /* real types: C == T */
  else return 0;
  return 1;
}

EXPORT cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  if (handle == NULL) return CUBLAS_STATUS_INVALID_VALUE;
  struct cublasContext* h = calloc(1, sizeof *h);
  if (h == NULL) return CUBLAS_STATUS_ALLOC_FAILED;
  h->magic = STANDIN_MAGIC;
  h->mode = CUBLAS_POINTER_MODE_HOST;
  *handle = h;
  return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  if (!valid(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->magic = 0;
  free(handle);
  return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t* stream) {
  if (!valid(handle) || stream == NULL) return CUBLAS_STATUS_NOT_INITIALIZED;
  *stream = handle->stream;
  return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t* mode) {
  if (!valid(handle) || mode == NULL) return CUBLAS_STATUS_NOT_INITIALIZED;
  *mode = handle->mode;
  return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                     int n, int k, const float* alpha, const float* A, int lda, const float* B,
                                     int ldb, const float* beta, float* C, int ldc) {
  int ta, tb;
  if (!valid(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!trans(transa, &ta) || !trans(transb, &tb) || m < 0 || n < 0 || k < 0) return CUBLAS_STATUS_INVALID_VALUE;
  standin_gemm_f32(ta, tb, m, n, k, *alpha, A, lda, B, ldb, *beta, C, ldc, C, ldc);
  return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasDgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                     int n, int k, const double* alpha, const double* A, int lda, const double* B,
                                     int ldb, const double* beta, double* C, int ldc) {
  int ta, tb;
  if (!valid(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!trans(transa, &ta) || !trans(transb, &tb) || m < 0 || n < 0 || k < 0) return CUBLAS_STATUS_INVALID_VALUE;
  standin_gemm_f64(ta, tb, m, n, k, *alpha, A, lda, B, ldb, *beta, C, ldc, C, ldc);
  return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                                cublasOperation_t transb, int m, int n, int k, const float* alpha,
                                                const float* A, int lda, long long int strideA, const float* B,
                                                int ldb, long long int strideB, const float* beta, float* C, int ldc,
                                                long long int strideC, int batchCount) {
  int ta, tb;
  if (!valid(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!trans(transa, &ta) || !trans(transb, &tb) || batchCount < 0) return CUBLAS_STATUS_INVALID_VALUE;
  for (int b = 0; b < batchCount; ++b)
    standin_gemm_f32(ta, tb, m, n, k, *alpha, A + b * strideA, lda, B + b * strideB, ldb, *beta, C + b * strideC, ldc,
                     C + b * strideC, ldc);
  return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                                cublasOperation_t transb, int m, int n, int k, const double* alpha,
                                                const double* A, int lda, long long int strideA, const double* B,
                                                int ldb, long long int strideB, const double* beta, double* C,
                                                int ldc, long long int strideC, int batchCount) {
  int ta, tb;
  if (!valid(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!trans(transa, &ta) || !trans(transb, &tb) || batchCount < 0) return CUBLAS_STATUS_INVALID_VALUE;
  for (int b = 0; b < batchCount; ++b)
    standin_gemm_f64(ta, tb, m, n, k, *alpha, A + b * strideA, lda, B + b * strideB, ldb, *beta, C + b * strideC, ldc,
                     C + b * strideC, ldc);
  return CUBLAS_STATUS_SUCCESS;
}

/* Ex variants: all operands of one type (f32 with a 32F compute type, or f64). */
static cublasStatus_t gemm_ex(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                              int k, const void* alpha, const void* A, cudaDataType Atype, int lda, long long sa,
                              const void* B, cudaDataType Btype, int ldb, long long sb, const void* beta, void* C,
                              cudaDataType Ctype, int ldc, long long sc, int batch, cublasComputeType_t compute) {
  int ta, tb;
  if (!valid(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!trans(transa, &ta) || !trans(transb, &tb) || batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
  if (Atype != Btype || Atype != Ctype) return CUBLAS_STATUS_NOT_SUPPORTED;
  for (int b = 0; b < batch; ++b) {
    if (Atype == CUDA_R_32F && compute == CUBLAS_COMPUTE_32F) {
      float* c = (float*)C + b * sc;
      standin_gemm_f32(ta, tb, m, n, k, *(const float*)alpha, (const float*)A + b * sa, lda, (const float*)B + b * sb,
                       ldb, *(const float*)beta, c, ldc, c, ldc);
    } else if (Atype == CUDA_R_64F && compute == CUBLAS_COMPUTE_64F) {
      double* c = (double*)C + b * sc;
      standin_gemm_f64(ta, tb, m, n, k, *(const double*)alpha, (const double*)A + b * sa, lda,
                       (const double*)B + b * sb, ldb, *(const double*)beta, c, ldc, c, ldc);
    } else {
      return CUBLAS_STATUS_NOT_SUPPORTED;
    }
  }
  return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                   int n, int k, const void* alpha, const void* A, cudaDataType Atype, int lda,
                                   const void* B, cudaDataType Btype, int ldb, const void* beta, void* C,
                                   cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                                   cublasGemmAlgo_t algo) {
  (void)algo;
  return gemm_ex(handle, transa, transb, m, n, k, alpha, A, Atype, lda, 0, B, Btype, ldb, 0, beta, C, Ctype, ldc, 0, 1,
                 computeType);
}

EXPORT cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
                                                 cublasOperation_t transb, int m, int n, int k, const void* alpha,
                                                 const void* A, cudaDataType Atype, int lda, long long int strideA,
                                                 const void* B, cudaDataType Btype, int ldb, long long int strideB,
                                                 const void* beta, void* C, cudaDataType Ctype, int ldc,
                                                 long long int strideC, int batchCount,
                                                 cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  (void)algo;
  return gemm_ex(handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB, beta, C,
                 Ctype, ldc, strideC, batchCount, computeType);
}
