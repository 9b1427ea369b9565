/*
 * rocblas_api.h — the part of the rocBLAS and hipBLAS C APIs that the PEAT
 * interposer wraps, declared by hand because Debian ships neither library's
 * headers. Written from the public API documentation of rocBLAS 4.x (ROCm 6.x;
 * the GEMM prototypes and enum values below are unchanged since rocBLAS 2.x)
 * and hipBLAS 2.x (ROCm 6.x). The enum values are part of those libraries'
 * ABI (they follow CBLAS numbering: 111/112/113 for the operations); a test
 * stand-in (tests/interpose/standin_rocblas.c) is built from this header too.
 * Only what the wrappers need is here.
 */
#ifndef PEAT_INTERPOSE_ROCBLAS_API_H
#define PEAT_INTERPOSE_ROCBLAS_API_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- rocBLAS -- */
typedef struct _rocblas_handle* rocblas_handle;
typedef int32_t rocblas_int;
typedef int64_t rocblas_stride;
typedef struct rocblas_half { uint16_t data; } rocblas_half;
typedef struct ihipStream_t* hipStream_t;

typedef enum rocblas_status_ {
  rocblas_status_success = 0,
  rocblas_status_invalid_handle = 1,
  rocblas_status_not_implemented = 2,
  rocblas_status_invalid_pointer = 3,
  rocblas_status_invalid_size = 4,
  rocblas_status_memory_error = 5,
  rocblas_status_internal_error = 6
} rocblas_status;

typedef enum rocblas_operation_ {
  rocblas_operation_none = 111,
  rocblas_operation_transpose = 112,
  rocblas_operation_conjugate_transpose = 113
} rocblas_operation;

typedef enum rocblas_datatype_ {
  rocblas_datatype_f16_r = 150,
  rocblas_datatype_f32_r = 151,
  rocblas_datatype_f64_r = 152,
  rocblas_datatype_f16_c = 153,
  rocblas_datatype_f32_c = 154,
  rocblas_datatype_f64_c = 155,
  rocblas_datatype_i8_r = 160,
  rocblas_datatype_u8_r = 161,
  rocblas_datatype_i32_r = 162,
  rocblas_datatype_u32_r = 163,
  rocblas_datatype_bf16_r = 168,
  rocblas_datatype_bf16_c = 169
} rocblas_datatype;

typedef enum rocblas_pointer_mode_ { rocblas_pointer_mode_host = 0, rocblas_pointer_mode_device = 1 } rocblas_pointer_mode;
typedef enum rocblas_gemm_algo_ { rocblas_gemm_algo_standard = 0, rocblas_gemm_algo_solution_index = 1 } rocblas_gemm_algo;

rocblas_status rocblas_create_handle(rocblas_handle* handle);
rocblas_status rocblas_destroy_handle(rocblas_handle handle);
rocblas_status rocblas_get_stream(rocblas_handle handle, hipStream_t* stream);
rocblas_status rocblas_get_pointer_mode(rocblas_handle handle, rocblas_pointer_mode* pointer_mode);

rocblas_status rocblas_sgemm(rocblas_handle handle, rocblas_operation transA, rocblas_operation transB, rocblas_int m,
                             rocblas_int n, rocblas_int k, const float* alpha, const float* A, rocblas_int lda,
                             const float* B, rocblas_int ldb, const float* beta, float* C, rocblas_int ldc);
rocblas_status rocblas_dgemm(rocblas_handle handle, rocblas_operation transA, rocblas_operation transB, rocblas_int m,
                             rocblas_int n, rocblas_int k, const double* alpha, const double* A, rocblas_int lda,
                             const double* B, rocblas_int ldb, const double* beta, double* C, rocblas_int ldc);
rocblas_status rocblas_hgemm(rocblas_handle handle, rocblas_operation transA, rocblas_operation transB, rocblas_int m,
                             rocblas_int n, rocblas_int k, const rocblas_half* alpha, const rocblas_half* A,
                             rocblas_int lda, const rocblas_half* B, rocblas_int ldb, const rocblas_half* beta,
                             rocblas_half* C, rocblas_int ldc);
rocblas_status rocblas_sgemm_strided_batched(rocblas_handle handle, rocblas_operation transA, rocblas_operation transB,
                                             rocblas_int m, rocblas_int n, rocblas_int k, const float* alpha,
                                             const float* A, rocblas_int lda, rocblas_stride stride_a, const float* B,
                                             rocblas_int ldb, rocblas_stride stride_b, const float* beta, float* C,
                                             rocblas_int ldc, rocblas_stride stride_c, rocblas_int batch_count);
rocblas_status rocblas_dgemm_strided_batched(rocblas_handle handle, rocblas_operation transA, rocblas_operation transB,
                                             rocblas_int m, rocblas_int n, rocblas_int k, const double* alpha,
                                             const double* A, rocblas_int lda, rocblas_stride stride_a, const double* B,
                                             rocblas_int ldb, rocblas_stride stride_b, const double* beta, double* C,
                                             rocblas_int ldc, rocblas_stride stride_c, rocblas_int batch_count);
/* D = alpha * op(A) op(B) + beta * C; D may be C (then ldd == ldc). compute_type
 * is a rocblas_datatype (f32_r for float accumulation, ...). */
rocblas_status rocblas_gemm_ex(rocblas_handle handle, rocblas_operation transA, rocblas_operation transB, rocblas_int m,
                               rocblas_int n, rocblas_int k, const void* alpha, const void* a, rocblas_datatype a_type,
                               rocblas_int lda, const void* b, rocblas_datatype b_type, rocblas_int ldb,
                               const void* beta, const void* c, rocblas_datatype c_type, rocblas_int ldc, void* d,
                               rocblas_datatype d_type, rocblas_int ldd, rocblas_datatype compute_type,
                               rocblas_gemm_algo algo, int32_t solution_index, uint32_t flags);
rocblas_status rocblas_gemm_strided_batched_ex(
    rocblas_handle handle, rocblas_operation transA, rocblas_operation transB, rocblas_int m, rocblas_int n,
    rocblas_int k, const void* alpha, const void* a, rocblas_datatype a_type, rocblas_int lda, rocblas_stride stride_a,
    const void* b, rocblas_datatype b_type, rocblas_int ldb, rocblas_stride stride_b, const void* beta, const void* c,
    rocblas_datatype c_type, rocblas_int ldc, rocblas_stride stride_c, void* d, rocblas_datatype d_type,
    rocblas_int ldd, rocblas_stride stride_d, rocblas_int batch_count, rocblas_datatype compute_type,
    rocblas_gemm_algo algo, int32_t solution_index, uint32_t flags);

/* ---------------------------------------------------------------- hipBLAS -- */
typedef void* hipblasHandle_t;
typedef int64_t hipblasStride;
typedef enum { HIPBLAS_STATUS_SUCCESS = 0, HIPBLAS_STATUS_NOT_INITIALIZED = 1 } hipblasStatus_t;
typedef enum { HIPBLAS_OP_N = 111, HIPBLAS_OP_T = 112, HIPBLAS_OP_C = 113 } hipblasOperation_t;
typedef enum { HIPBLAS_POINTER_MODE_HOST = 0, HIPBLAS_POINTER_MODE_DEVICE = 1 } hipblasPointerMode_t;

hipblasStatus_t hipblasCreate(hipblasHandle_t* handle);
hipblasStatus_t hipblasDestroy(hipblasHandle_t handle);
hipblasStatus_t hipblasGetStream(hipblasHandle_t handle, hipStream_t* stream);
hipblasStatus_t hipblasGetPointerMode(hipblasHandle_t handle, hipblasPointerMode_t* mode);
hipblasStatus_t hipblasSgemm(hipblasHandle_t handle, hipblasOperation_t transa, hipblasOperation_t transb, int m,
                             int n, int k, const float* alpha, const float* A, int lda, const float* B, int ldb,
                             const float* beta, float* C, int ldc);
hipblasStatus_t hipblasDgemm(hipblasHandle_t handle, hipblasOperation_t transa, hipblasOperation_t transb, int m,
                             int n, int k, const double* alpha, const double* A, int lda, const double* B, int ldb,
                             const double* beta, double* C, int ldc);
hipblasStatus_t hipblasSgemmStridedBatched(hipblasHandle_t handle, hipblasOperation_t transa,
                                           hipblasOperation_t transb, int m, int n, int k, const float* alpha,
                                           const float* A, int lda, hipblasStride strideA, const float* B, int ldb,
                                           hipblasStride strideB, const float* beta, float* C, int ldc,
                                           hipblasStride strideC, int batchCount);
hipblasStatus_t hipblasDgemmStridedBatched(hipblasHandle_t handle, hipblasOperation_t transa,
                                           hipblasOperation_t transb, int m, int n, int k, const double* alpha,
                                           const double* A, int lda, hipblasStride strideA, const double* B, int ldb,
                                           hipblasStride strideB, const double* beta, double* C, int ldc,
                                           hipblasStride strideC, int batchCount);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PEAT_INTERPOSE_ROCBLAS_API_H */
