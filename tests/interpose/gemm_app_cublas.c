/* A cuBLAS client (linked against the test stand-in, not against PEAT) that
 * the interposition tests run under LD_PRELOAD=libpeat-interpose-cublas.so. */
#include <cublas_api.h>

#include "gemm_app.h"

static cublasHandle_t handle;

static cublasOperation_t op(char t) { return t == 'N' ? CUBLAS_OP_N : CUBLAS_OP_T; }

static int call(int c, const void* A, const void* B, void* C, void* D) {
  const gemm_case* g = &GEMM_CASES[c];
  (void)D;
  const float af = (float)g->alpha, bf = (float)g->beta;
  const double ad = g->alpha, bd = g->beta;
  switch (g->kind) {
    case 0:
      return cublasSgemm_v2(handle, op(g->ta), op(g->tb), g->m, g->n, g->k, &af, A, g->lda, B, g->ldb, &bf, C, g->ldc);
    case 1:
      return cublasDgemm_v2(handle, op(g->ta), op(g->tb), g->m, g->n, g->k, &ad, A, g->lda, B, g->ldb, &bd, C, g->ldc);
    case 2:
      return cublasGemmEx(handle, op(g->ta), op(g->tb), g->m, g->n, g->k, &af, A, CUDA_R_32F, g->lda, B, CUDA_R_32F,
                          g->ldb, &bf, C, CUDA_R_32F, g->ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    default:
      return cublasSgemmStridedBatched(handle, op(g->ta), op(g->tb), g->m, g->n, g->k, &af, A, g->lda, g->sa, B,
                                       g->ldb, g->sb, &bf, C, g->ldc, g->sc, g->batch);
  }
}

int main(void) {
  static const char* const names[GEMM_KINDS] = {"cublasSgemm_v2", "cublasDgemm_v2", "cublasGemmEx",
                                                "cublasSgemmStridedBatched"};
  int separate_d[GEMM_KINDS] = {0, 0, 0, 0};
  if (cublasCreate_v2(&handle) != CUBLAS_STATUS_SUCCESS) return 2;
  const int rc = gemm_app_main(names, separate_d, call);
  cublasDestroy_v2(handle);
  return rc;
}
