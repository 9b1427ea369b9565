/* The cuBLAS test client for a machine with a GPU: the same GEMM calls as
 * gemm_app_cublas.c, on device memory, through the REAL cuBLAS (this program
 * links libcublas and libcudart). Run under the interposer by
 * run_interpose_test.sh (cases cublas_device_*); exits 77 (ctest's skip code)
 * with a message when there is no CUDA device. */
#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include "gemm_app.h"

static cublasHandle_t handle;

static cublasOperation_t op(char t) { return t == 'N' ? CUBLAS_OP_N : CUBLAS_OP_T; }

static void* to_device(const void* host, size_t bytes) {
  void* p = NULL;
  if (cudaMalloc(&p, bytes) != cudaSuccess) return NULL;
  cudaMemcpy(p, host, bytes, cudaMemcpyHostToDevice);
  return p;
}

static int call(int c, const void* A, const void* B, void* C, void* D) {
  const gemm_case* g = &GEMM_CASES[c];
  const size_t e = (size_t)(g->bits / 8);
  const size_t sa = (size_t)gemm_size_a(g) * e, sb = (size_t)gemm_size_b(g) * e, sc = (size_t)gemm_size_c(g) * e;
  void *dA = to_device(A, sa), *dB = to_device(B, sb), *dC = to_device(C, sc);
  const float af = (float)g->alpha, bf = (float)g->beta;
  const double ad = g->alpha, bd = g->beta;
  (void)D;
  if (dA == NULL || dB == NULL || dC == NULL) return -1;
  int status;
  switch (g->kind) {
    case 0:
      status = cublasSgemm_v2(handle, op(g->ta), op(g->tb), g->m, g->n, g->k, &af, dA, g->lda, dB, g->ldb, &bf, dC,
                              g->ldc);
      break;
    case 1:
      status = cublasDgemm_v2(handle, op(g->ta), op(g->tb), g->m, g->n, g->k, &ad, dA, g->lda, dB, g->ldb, &bd, dC,
                              g->ldc);
      break;
    case 2:
      status = cublasGemmEx(handle, op(g->ta), op(g->tb), g->m, g->n, g->k, &af, dA, CUDA_R_32F, g->lda, dB,
                            CUDA_R_32F, g->ldb, &bf, dC, CUDA_R_32F, g->ldc, CUBLAS_COMPUTE_32F_PEDANTIC,
                            CUBLAS_GEMM_DEFAULT);
      break;
    default:
      status = cublasSgemmStridedBatched(handle, op(g->ta), op(g->tb), g->m, g->n, g->k, &af, dA, g->lda, g->sa, dB,
                                         g->ldb, g->sb, &bf, dC, g->ldc, g->sc, g->batch);
  }
  if (cudaMemcpy(C, dC, sc, cudaMemcpyDeviceToHost) != cudaSuccess) status = -2;
  cudaFree(dA), cudaFree(dB), cudaFree(dC);
  return status;
}

int main(void) {
  int devices = 0;
  const cudaError_t err = cudaGetDeviceCount(&devices);
  if (err != cudaSuccess || devices == 0) {
    printf("SKIP: no CUDA device (%s)\n", err != cudaSuccess ? cudaGetErrorString(err) : "0 devices");
    return 77;
  }
  static const char* const names[GEMM_KINDS] = {"cublasSgemm_v2", "cublasDgemm_v2", "cublasGemmEx",
                                                "cublasSgemmStridedBatched"};
  int separate_d[GEMM_KINDS] = {0, 0, 0, 0};
  if (cublasCreate_v2(&handle) != CUBLAS_STATUS_SUCCESS) return 2;
  /* Exact products: keep cuBLAS from using TF32 for f32. */
  cublasSetMathMode(handle, CUBLAS_PEDANTIC_MATH);
  const int rc = gemm_app_main(names, separate_d, call);
  cublasDestroy_v2(handle);
  return rc;
}
