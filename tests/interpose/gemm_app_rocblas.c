/* A rocBLAS/hipBLAS client (linked against the test stand-in, not against
 * PEAT) that the interposition tests run under
 * LD_PRELOAD=libpeat-interpose-rocblas.so. Entry 0 is a hipBLAS call (which
 * the stand-in forwards to rocBLAS); rocblas_gemm_ex writes a separate D. */
#include "rocblas/rocblas_api.h"

#include "gemm_app.h"

static rocblas_handle roc;
static hipblasHandle_t hip;

static rocblas_operation rop(char t) { return t == 'N' ? rocblas_operation_none : rocblas_operation_transpose; }
static hipblasOperation_t hop(char t) { return t == 'N' ? HIPBLAS_OP_N : HIPBLAS_OP_T; }

static int call(int c, const void* A, const void* B, void* C, void* D) {
  const gemm_case* g = &GEMM_CASES[c];
  const float af = (float)g->alpha, bf = (float)g->beta;
  const double ad = g->alpha, bd = g->beta;
  switch (g->kind) {
    case 0:
      return hipblasSgemm(hip, hop(g->ta), hop(g->tb), g->m, g->n, g->k, &af, A, g->lda, B, g->ldb, &bf, C, g->ldc);
    case 1:
      return rocblas_dgemm(roc, rop(g->ta), rop(g->tb), g->m, g->n, g->k, &ad, A, g->lda, B, g->ldb, &bd, C, g->ldc);
    case 2:
      return rocblas_gemm_ex(roc, rop(g->ta), rop(g->tb), g->m, g->n, g->k, &af, A, rocblas_datatype_f32_r, g->lda, B,
                             rocblas_datatype_f32_r, g->ldb, &bf, C, rocblas_datatype_f32_r, g->ldc, D,
                             rocblas_datatype_f32_r, g->ldc, rocblas_datatype_f32_r, rocblas_gemm_algo_standard, 0, 0);
    default:
      return rocblas_sgemm_strided_batched(roc, rop(g->ta), rop(g->tb), g->m, g->n, g->k, &af, A, g->lda, g->sa, B,
                                           g->ldb, g->sb, &bf, C, g->ldc, g->sc, g->batch);
  }
}

int main(void) {
  static const char* const names[GEMM_KINDS] = {"hipblasSgemm", "rocblas_dgemm", "rocblas_gemm_ex",
                                                "rocblas_sgemm_strided_batched"};
  int separate_d[GEMM_KINDS] = {0, 0, 1, 0};
  if (rocblas_create_handle(&roc) != rocblas_status_success || hipblasCreate(&hip) != HIPBLAS_STATUS_SUCCESS)
    return 2;
  const int rc = gemm_app_main(names, separate_d, call);
  rocblas_destroy_handle(roc);
  hipblasDestroy(hip);
  return rc;
}
