/* The GEMM calls the interposition test programs make, shared by the host
 * programs (which call the stand-in vendor library) and the trace checker
 * (which regenerates the same operands). Operands are small integers (and
 * alpha/beta halves), so every result is exact in f32 and f64 whatever the
 * summation order: a changed element means the interposer changed it. */
#ifndef PEAT_TEST_GEMM_CASES_H
#define PEAT_TEST_GEMM_CASES_H

#include <stdint.h>
#include <string.h>

typedef struct gemm_case {
  int kind;              /* index into the vendor's entry-point names */
  char ta, tb;           /* 'N' or 'T' */
  int m, n, k, lda, ldb, ldc, batch;
  long long sa, sb, sc;  /* batch strides */
  double alpha, beta;
  int bits;              /* 32: float, 64: double */
} gemm_case;

enum { GEMM_KINDS = 4, GEMM_CALLS = 13 };

/* Call number c of the program (0..GEMM_CALLS-1). Kind 0 is called 6 times,
 * kind 1 3 times, kinds 2 and 3 twice, in that order. Leading dimensions
 * are padded in kinds 0 (lda) and 1 (ldc) so strided views are exercised. */
static const gemm_case GEMM_CASES[GEMM_CALLS] = {
    {0, 'N', 'T', 4, 3, 5, 6, 3, 4, 1, 0, 0, 0, 1.5, 0.0, 32}, {0, 'N', 'T', 4, 3, 5, 6, 3, 4, 1, 0, 0, 0, 1.5, 0.0, 32},
    {0, 'N', 'T', 4, 3, 5, 6, 3, 4, 1, 0, 0, 0, 1.5, 0.0, 32}, {0, 'N', 'T', 4, 3, 5, 6, 3, 4, 1, 0, 0, 0, 1.5, 0.0, 32},
    {0, 'N', 'T', 4, 3, 5, 6, 3, 4, 1, 0, 0, 0, 1.5, 0.0, 32}, {0, 'N', 'T', 4, 3, 5, 6, 3, 4, 1, 0, 0, 0, 1.5, 0.0, 32},
    {1, 'T', 'N', 3, 4, 2, 2, 2, 5, 1, 0, 0, 0, 1.0, 0.5, 64}, {1, 'T', 'N', 3, 4, 2, 2, 2, 5, 1, 0, 0, 0, 1.0, 0.5, 64},
    {1, 'T', 'N', 3, 4, 2, 2, 2, 5, 1, 0, 0, 0, 1.0, 0.5, 64}, {2, 'N', 'N', 5, 2, 3, 5, 3, 5, 1, 0, 0, 0, 2.0, 0.0, 32},
    {2, 'N', 'N', 5, 2, 3, 5, 3, 5, 1, 0, 0, 0, 2.0, 0.0, 32}, {3, 'N', 'N', 2, 3, 4, 2, 4, 2, 2, 8, 12, 6, 1.0, 0.0, 32},
    {3, 'N', 'N', 2, 3, 4, 2, 4, 2, 2, 8, 12, 6, 1.0, 0.0, 32}};

/* First call number of each kind, so (kind, per-op call index) -> call number. */
static const int GEMM_KIND_FIRST[GEMM_KINDS] = {0, 6, 9, 11};
static const int GEMM_KIND_COUNT[GEMM_KINDS] = {6, 3, 2, 2};

/* Stored rows and columns of A and B (column-major, as the BLAS sees them). */
static inline int gemm_rows_a(const gemm_case* g) { return g->ta == 'N' ? g->m : g->k; }
static inline int gemm_cols_a(const gemm_case* g) { return g->ta == 'N' ? g->k : g->m; }
static inline int gemm_rows_b(const gemm_case* g) { return g->tb == 'N' ? g->k : g->n; }
static inline int gemm_cols_b(const gemm_case* g) { return g->tb == 'N' ? g->n : g->k; }

/* Elements spanned by each operand's storage. */
static inline long long gemm_size(int rows, int cols, int ld, int batch, long long stride) {
  return (long long)(batch - 1) * stride + (long long)(cols - 1) * ld + rows;
}
static inline long long gemm_size_a(const gemm_case* g) {
  return gemm_size(gemm_rows_a(g), gemm_cols_a(g), g->lda, g->batch, g->sa);
}
static inline long long gemm_size_b(const gemm_case* g) {
  return gemm_size(gemm_rows_b(g), gemm_cols_b(g), g->ldb, g->batch, g->sb);
}
static inline long long gemm_size_c(const gemm_case* g) { return gemm_size(g->m, g->n, g->ldc, g->batch, g->sc); }

/* Value of storage element idx of operand x (0 = A, 1 = B, 2 = C) of call c. */
static inline double gemm_value(int x, int c, long long idx) {
  return (double)((idx * 7 + c * 5 + x * 3) % 9) - 4.0;
}

/* The exact result D(i, j) of batch b of call c. */
static inline double gemm_expected(int c, int b, int i, int j) {
  const gemm_case* g = &GEMM_CASES[c];
  double sum = 0;
  for (int p = 0; p < g->k; ++p) {
    const long long ia = (long long)b * g->sa + (g->ta == 'N' ? (long long)p * g->lda + i : (long long)i * g->lda + p);
    const long long ib = (long long)b * g->sb + (g->tb == 'N' ? (long long)j * g->ldb + p : (long long)p * g->ldb + j);
    sum += gemm_value(0, c, ia) * gemm_value(1, c, ib);
  }
  const double cin = gemm_value(2, c, (long long)b * g->sc + (long long)j * g->ldc + i);
  return g->alpha * sum + (g->beta != 0.0 ? g->beta * cin : 0.0);
}

#endif /* PEAT_TEST_GEMM_CASES_H */
