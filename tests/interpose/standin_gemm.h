/* Column-major reference GEMM over host memory, shared by the test stand-ins
 * of cuBLAS and rocBLAS/hipBLAS: D = alpha * op(A) op(B) + beta * C, C not
 * read when beta == 0 (BLAS semantics). T is float or double. */
#ifndef PEAT_TEST_STANDIN_GEMM_H
#define PEAT_TEST_STANDIN_GEMM_H

#define STANDIN_GEMM(NAME, T)                                                                          \
  static void NAME(int ta, int tb, int m, int n, int k, T alpha, const T* A, int lda, const T* B,      \
                   int ldb, T beta, const T* C, int ldc, T* D, int ldd) {                              \
    for (int j = 0; j < n; ++j)                                                                        \
      for (int i = 0; i < m; ++i) {                                                                    \
        T sum = 0;                                                                                     \
        for (int p = 0; p < k; ++p) {                                                                  \
          const T a = ta ? A[(long long)i * lda + p] : A[(long long)p * lda + i];                      \
          const T b = tb ? B[(long long)p * ldb + j] : B[(long long)j * ldb + p];                      \
          sum += a * b;                                                                                \
        }                                                                                              \
        const T out = alpha * sum + (beta != 0 ? beta * C[(long long)j * ldc + i] : (T)0);             \
        D[(long long)j * ldd + i] = out;                                                               \
      }                                                                                                \
  }

STANDIN_GEMM(standin_gemm_f32, float)
STANDIN_GEMM(standin_gemm_f64, double)

#endif /* PEAT_TEST_STANDIN_GEMM_H */
