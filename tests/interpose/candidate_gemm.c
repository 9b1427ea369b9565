/* A candidate GEMM kernel for the interposition tests, loaded by the injector
 * as "libpeat-test-gemm-candidate.so:peat_test_candidate_gemm". It computes
 * the GEMM from the DLTensor views the interposer documents
 * (backends/interpose/peat_interpose.h) and adds 0.25 to every element, so the
 * host program can tell its result from the golden one. Host memory only. */
#include <peat/injector.h>

#include "peat_interpose.h"

#include <stdint.h>

/* Offset of element (b, i, j) of a column-major operand seen as [batch,] cols,
 * rows; strides NULL means compact (the scratch outputs of run_both). */
static int64_t offset(const DLTensor* t, int64_t b, int64_t i, int64_t j) {
  const int64_t* sh = t->shape;
  if (t->ndim == 3) {
    if (t->strides == NULL) return (b * sh[1] + j) * sh[2] + i;
    return b * t->strides[0] + j * t->strides[1] + i * t->strides[2];
  }
  if (t->strides == NULL) return j * sh[1] + i;
  return j * t->strides[0] + i * t->strides[1];
}

static double at(const DLTensor* t, int64_t b, int64_t i, int64_t j) {
  const int64_t off = offset(t, b, i, j);
  if (t->dtype.bits == 32) return ((const float*)t->data)[off];
  return ((const double*)t->data)[off];
}

static void put(DLTensor* t, int64_t b, int64_t i, int64_t j, double v) {
  const int64_t off = offset(t, b, i, j);
  if (t->dtype.bits == 32) ((float*)t->data)[off] = (float)v;
  else ((double*)t->data)[off] = v;
}

__attribute__((visibility("default"))) int32_t peat_test_candidate_gemm(void* ctx, const DLTensor* inputs, int32_t n_in,
                                                                        DLTensor* outputs, int32_t n_out,
                                                                        const void* attrs) {
  (void)ctx;
  const peat_interpose_gemm_t* g = (const peat_interpose_gemm_t*)attrs;
  if (g == NULL || g->struct_size < sizeof(peat_interpose_gemm_t) || n_in < 2 || n_out != 1) return 1;
  if (g->beta != 0.0 && n_in < 3) return 2; /* C is needed and was not given */
  const DLTensor *A = &inputs[0], *B = &inputs[1];
  DLTensor* D = &outputs[0];
  /* When C aliases D (run_candidate without a snapshot), read each element before writing it. */
  for (int64_t b = 0; b < g->batch; ++b)
    for (int64_t j = 0; j < g->n; ++j)
      for (int64_t i = 0; i < g->m; ++i) {
        double sum = 0;
        for (int64_t p = 0; p < g->k; ++p) {
          const double a = g->transa == 'N' ? at(A, b, i, p) : at(A, b, p, i);
          const double x = g->transb == 'N' ? at(B, b, p, j) : at(B, b, j, p);
          sum += a * x;
        }
        const double cin = g->beta != 0.0 ? g->beta * at(&inputs[2], b, i, j) : 0.0;
        put(D, b, i, j, g->alpha * sum + cin + 0.25);
      }
  return 0;
}
