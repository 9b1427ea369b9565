/* The body of the test host programs: runs the GEMM_CASES through a vendor
 * API (the stand-in library, possibly under an interposer) and prints, for
 * each call, what came out compared with the exact result:
 *   <entry> <call index of that entry> golden | candidate | changed <n>
 * "candidate" means every element is the exact result + 0.25 (what the test
 * candidate computes); "changed n" that n elements differ otherwise. Padding
 * between columns must never change. The program knows nothing of PEAT. */
#ifndef PEAT_TEST_GEMM_APP_H
#define PEAT_TEST_GEMM_APP_H

#include "gemm_cases.h"

#include <stdio.h>
#include <stdlib.h>

/* Runs call c: A, B, C (and D, which is C for in-place entries) hold the
 * operands in the case's element type. Returns the vendor status (0 = success). */
typedef int (*gemm_call_fn)(int c, const void* A, const void* B, void* C, void* D);

static void* gemm_app_fill(int x, int c, long long n, int bits) {
  void* p = malloc((size_t)n * (size_t)(bits / 8));
  for (long long i = 0; i < n; ++i) {
    if (bits == 32) ((float*)p)[i] = (float)gemm_value(x, c, i);
    else ((double*)p)[i] = gemm_value(x, c, i);
  }
  return p;
}

static double gemm_app_get(const void* p, int bits, long long i) {
  return bits == 32 ? (double)((const float*)p)[i] : ((const double*)p)[i];
}

static int gemm_app_main(const char* const names[GEMM_KINDS], int separate_d[GEMM_KINDS], gemm_call_fn call) {
  int failures = 0;
  for (int c = 0; c < GEMM_CALLS; ++c) {
    const gemm_case* g = &GEMM_CASES[c];
    const long long nc = gemm_size_c(g);
    void* A = gemm_app_fill(0, c, gemm_size_a(g), g->bits);
    void* B = gemm_app_fill(1, c, gemm_size_b(g), g->bits);
    void* C = gemm_app_fill(2, c, nc, g->bits);
    void* C0 = gemm_app_fill(2, c, nc, g->bits);
    void* D = separate_d[g->kind] ? gemm_app_fill(2, c, nc, g->bits) : C;
    const int status = call(c, A, B, C, D);
    if (status != 0) {
      printf("%s %d status %d\n", names[g->kind], c - GEMM_KIND_FIRST[g->kind], status);
      ++failures;
    } else {
      long long changed = 0, plus_quarter = 0, total = 0, padding = 0;
      for (int b = 0; b < g->batch; ++b)
        for (int j = 0; j < g->n; ++j)
          for (int i = 0; i < g->ldc; ++i) {
            const long long idx = (long long)b * g->sc + (long long)j * g->ldc + i;
            if (idx >= nc) continue;
            const double got = gemm_app_get(D, g->bits, idx);
            if (i >= g->m) {  /* padding between columns */
              if (got != gemm_app_get(C0, g->bits, idx)) ++padding;
              continue;
            }
            double want = gemm_expected(c, b, i, j);
            if (g->bits == 32) want = (double)(float)want;
            ++total;
            if (got != want) ++changed;
            if (got == want + 0.25) ++plus_quarter;
          }
      if (D != C)  /* an out-of-place GEMM must leave C alone */
        for (long long i = 0; i < nc; ++i)
          if (gemm_app_get(C, g->bits, i) != gemm_app_get(C0, g->bits, i)) ++padding;
      printf("%s %d ", names[g->kind], c - GEMM_KIND_FIRST[g->kind]);
      if (padding != 0) printf("padding-changed %lld\n", padding), ++failures;
      else if (changed == 0) printf("golden\n");
      else if (plus_quarter == total) printf("candidate\n");
      else printf("changed %lld\n", changed);
    }
    if (D != C) free(D);
    free(A), free(B), free(C), free(C0);
  }
  return failures == 0 ? 0 : 1;
}

#endif /* PEAT_TEST_GEMM_APP_H */
