/* A test-only stand-in for rocBLAS and hipBLAS: their GEMM entry points (the
 * prototypes of backends/interpose/rocblas/rocblas_api.h) computed on the CPU
 * over host memory. It is NOT rocBLAS. As the real hipBLAS does on AMD, its
 * hipBLAS entry points call the rocBLAS ones (through the PLT, so an
 * interposer sees both): the test checks that such a call counts once. */
#include "rocblas/rocblas_api.h"

#include <stdlib.h>

#include "standin_gemm.h"

#define EXPORT __attribute__((visibility("default")))

struct _rocblas_handle {
  uint32_t magic;
};
enum { STANDIN_MAGIC = 0x50CB1A5u };

static int valid(rocblas_handle h) { return h != NULL && h->magic == STANDIN_MAGIC; }
static int trans(int op, int* out) {
  if (op == rocblas_operation_none) *out = 0;
  else if (op == rocblas_operation_transpose || op == rocblas_operation_conjugate_transpose) *out = 1;
  else return 0;
  return 1;
}

EXPORT rocblas_status rocblas_create_handle(rocblas_handle* handle) {
  if (handle == NULL) return rocblas_status_invalid_pointer;
  *handle = calloc(1, sizeof **handle);
  if (*handle == NULL) return rocblas_status_memory_error;
  (*handle)->magic = STANDIN_MAGIC;
  return rocblas_status_success;
}
EXPORT rocblas_status rocblas_destroy_handle(rocblas_handle handle) {
  if (!valid(handle)) return rocblas_status_invalid_handle;
  free(handle);
  return rocblas_status_success;
}
EXPORT rocblas_status rocblas_get_stream(rocblas_handle handle, hipStream_t* stream) {
  if (!valid(handle)) return rocblas_status_invalid_handle;
  *stream = NULL;
  return rocblas_status_success;
}
EXPORT rocblas_status rocblas_get_pointer_mode(rocblas_handle handle, rocblas_pointer_mode* mode) {
  if (!valid(handle)) return rocblas_status_invalid_handle;
  *mode = rocblas_pointer_mode_host;
  return rocblas_status_success;
}

#define STRIDED(NAME, T, GEMM)                                                                                   \
  EXPORT rocblas_status NAME(rocblas_handle handle, rocblas_operation transA, rocblas_operation transB,          \
                             rocblas_int m, rocblas_int n, rocblas_int k, const T* alpha, const T* A,            \
                             rocblas_int lda, rocblas_stride sa, const T* B, rocblas_int ldb, rocblas_stride sb, \
                             const T* beta, T* C, rocblas_int ldc, rocblas_stride sc, rocblas_int batch) {       \
    int ta, tb;                                                                                                  \
    if (!valid(handle)) return rocblas_status_invalid_handle;                                                    \
    if (!trans(transA, &ta) || !trans(transB, &tb) || m < 0 || n < 0 || k < 0 || batch < 0)                      \
      return rocblas_status_invalid_size;                                                                        \
    for (int b = 0; b < batch; ++b)                                                                              \
      GEMM(ta, tb, m, n, k, *alpha, A + b * sa, lda, B + b * sb, ldb, *beta, C + b * sc, ldc, C + b * sc, ldc);  \
    return rocblas_status_success;                                                                               \
  }
STRIDED(rocblas_sgemm_strided_batched, float, standin_gemm_f32)
STRIDED(rocblas_dgemm_strided_batched, double, standin_gemm_f64)

EXPORT rocblas_status rocblas_sgemm(rocblas_handle handle, rocblas_operation transA, rocblas_operation transB,
                                    rocblas_int m, rocblas_int n, rocblas_int k, const float* alpha, const float* A,
                                    rocblas_int lda, const float* B, rocblas_int ldb, const float* beta, float* C,
                                    rocblas_int ldc) {
  return rocblas_sgemm_strided_batched(handle, transA, transB, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0,
                                       1);
}
EXPORT rocblas_status rocblas_dgemm(rocblas_handle handle, rocblas_operation transA, rocblas_operation transB,
                                    rocblas_int m, rocblas_int n, rocblas_int k, const double* alpha, const double* A,
                                    rocblas_int lda, const double* B, rocblas_int ldb, const double* beta, double* C,
                                    rocblas_int ldc) {
  return rocblas_dgemm_strided_batched(handle, transA, transB, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0,
                                       1);
}

EXPORT rocblas_status rocblas_gemm_strided_batched_ex(
    rocblas_handle handle, rocblas_operation transA, rocblas_operation transB, rocblas_int m, rocblas_int n,
    rocblas_int k, const void* alpha, const void* a, rocblas_datatype a_type, rocblas_int lda, rocblas_stride stride_a,
    const void* b, rocblas_datatype b_type, rocblas_int ldb, rocblas_stride stride_b, const void* beta, const void* c,
    rocblas_datatype c_type, rocblas_int ldc, rocblas_stride stride_c, void* d, rocblas_datatype d_type,
    rocblas_int ldd, rocblas_stride stride_d, rocblas_int batch_count, rocblas_datatype compute_type,
    rocblas_gemm_algo algo, int32_t solution_index, uint32_t flags) {
  int ta, tb;
  (void)algo, (void)solution_index, (void)flags;
  if (!valid(handle)) return rocblas_status_invalid_handle;
  if (!trans(transA, &ta) || !trans(transB, &tb) || batch_count < 0) return rocblas_status_invalid_size;
  if (a_type != b_type || a_type != c_type || a_type != d_type || a_type != compute_type)
    return rocblas_status_not_implemented;
  for (int i = 0; i < batch_count; ++i) {
    if (a_type == rocblas_datatype_f32_r)
      standin_gemm_f32(ta, tb, m, n, k, *(const float*)alpha, (const float*)a + i * stride_a, lda,
                       (const float*)b + i * stride_b, ldb, *(const float*)beta, (const float*)c + i * stride_c, ldc,
                       (float*)d + i * stride_d, ldd);
    else if (a_type == rocblas_datatype_f64_r)
      standin_gemm_f64(ta, tb, m, n, k, *(const double*)alpha, (const double*)a + i * stride_a, lda,
                       (const double*)b + i * stride_b, ldb, *(const double*)beta, (const double*)c + i * stride_c,
                       ldc, (double*)d + i * stride_d, ldd);
    else
      return rocblas_status_not_implemented;
  }
  return rocblas_status_success;
}

EXPORT rocblas_status rocblas_gemm_ex(rocblas_handle handle, rocblas_operation transA, rocblas_operation transB,
                                      rocblas_int m, rocblas_int n, rocblas_int k, const void* alpha, const void* a,
                                      rocblas_datatype a_type, rocblas_int lda, const void* b, rocblas_datatype b_type,
                                      rocblas_int ldb, const void* beta, const void* c, rocblas_datatype c_type,
                                      rocblas_int ldc, void* d, rocblas_datatype d_type, rocblas_int ldd,
                                      rocblas_datatype compute_type, rocblas_gemm_algo algo, int32_t solution_index,
                                      uint32_t flags) {
  return rocblas_gemm_strided_batched_ex(handle, transA, transB, m, n, k, alpha, a, a_type, lda, 0, b, b_type, ldb, 0,
                                         beta, c, c_type, ldc, 0, d, d_type, ldd, 0, 1, compute_type, algo,
                                         solution_index, flags);
}

/* hipBLAS: a handle that wraps a rocBLAS handle, as on AMD. */
EXPORT hipblasStatus_t hipblasCreate(hipblasHandle_t* handle) {
  rocblas_handle h = NULL;
  if (handle == NULL || rocblas_create_handle(&h) != rocblas_status_success) return HIPBLAS_STATUS_NOT_INITIALIZED;
  *handle = h;
  return HIPBLAS_STATUS_SUCCESS;
}
EXPORT hipblasStatus_t hipblasDestroy(hipblasHandle_t handle) {
  return rocblas_destroy_handle((rocblas_handle)handle) == rocblas_status_success ? HIPBLAS_STATUS_SUCCESS
                                                                                  : HIPBLAS_STATUS_NOT_INITIALIZED;
}
EXPORT hipblasStatus_t hipblasGetStream(hipblasHandle_t handle, hipStream_t* stream) {
  return (hipblasStatus_t)rocblas_get_stream((rocblas_handle)handle, stream);
}
EXPORT hipblasStatus_t hipblasGetPointerMode(hipblasHandle_t handle, hipblasPointerMode_t* mode) {
  rocblas_pointer_mode m;
  const rocblas_status s = rocblas_get_pointer_mode((rocblas_handle)handle, &m);
  *mode = m == rocblas_pointer_mode_device ? HIPBLAS_POINTER_MODE_DEVICE : HIPBLAS_POINTER_MODE_HOST;
  return (hipblasStatus_t)s;
}
static rocblas_operation roc_op(hipblasOperation_t op) { return (rocblas_operation)(int)op; } /* same values */

EXPORT hipblasStatus_t hipblasSgemm(hipblasHandle_t handle, hipblasOperation_t transa, hipblasOperation_t transb,
                                    int m, int n, int k, const float* alpha, const float* A, int lda, const float* B,
                                    int ldb, const float* beta, float* C, int ldc) {
  return (hipblasStatus_t)rocblas_sgemm((rocblas_handle)handle, roc_op(transa), roc_op(transb), m, n, k, alpha, A,
                                        lda, B, ldb, beta, C, ldc);
}
EXPORT hipblasStatus_t hipblasDgemm(hipblasHandle_t handle, hipblasOperation_t transa, hipblasOperation_t transb,
                                    int m, int n, int k, const double* alpha, const double* A, int lda,
                                    const double* B, int ldb, const double* beta, double* C, int ldc) {
  return (hipblasStatus_t)rocblas_dgemm((rocblas_handle)handle, roc_op(transa), roc_op(transb), m, n, k, alpha, A,
                                        lda, B, ldb, beta, C, ldc);
}
EXPORT hipblasStatus_t hipblasSgemmStridedBatched(hipblasHandle_t handle, hipblasOperation_t transa,
                                                  hipblasOperation_t transb, int m, int n, int k, const float* alpha,
                                                  const float* A, int lda, hipblasStride strideA, const float* B,
                                                  int ldb, hipblasStride strideB, const float* beta, float* C,
                                                  int ldc, hipblasStride strideC, int batchCount) {
  return (hipblasStatus_t)rocblas_sgemm_strided_batched((rocblas_handle)handle, roc_op(transa), roc_op(transb), m, n,
                                                        k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc,
                                                        strideC, batchCount);
}
EXPORT hipblasStatus_t hipblasDgemmStridedBatched(hipblasHandle_t handle, hipblasOperation_t transa,
                                                  hipblasOperation_t transb, int m, int n, int k, const double* alpha,
                                                  const double* A, int lda, hipblasStride strideA, const double* B,
                                                  int ldb, hipblasStride strideB, const double* beta, double* C,
                                                  int ldc, hipblasStride strideC, int batchCount) {
  return (hipblasStatus_t)rocblas_dgemm_strided_batched((rocblas_handle)handle, roc_op(transa), roc_op(transb), m, n,
                                                        k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc,
                                                        strideC, batchCount);
}
