/* Cost of an intercepted GEMM call: times cublasSgemm_v2 (the test stand-in,
 * 1x1x1, host memory) in a loop and prints the median ns per call of 5 runs
 * (thread CPU time, so that other programs on the machine do not count).
 * run.sh runs it without the interposer (the baseline) and under it with
 * different PEAT_INTERPOSE_* settings. */
#define _POSIX_C_SOURCE 199309L
#include <cublas_api.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); /* CPU time: what the call costs, whatever else runs */
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
  const long calls = argc > 1 ? atol(argv[1]) : 200000;
  cublasHandle_t h;
  if (cublasCreate_v2(&h) != CUBLAS_STATUS_SUCCESS) return 1;
  float a = 1.5f, b = 2.0f, c = 0.0f;
  const float alpha = 1.0f, beta = 0.0f;
  double runs[5];
  for (int r = 0; r < 5; ++r) {
    const double t0 = now_ns();
    for (long i = 0; i < calls; ++i)
      if (cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &alpha, &a, 1, &b, 1, &beta, &c, 1) != 0) return 1;
    runs[r] = (now_ns() - t0) / (double)calls;
  }
  qsort(runs, 5, sizeof runs[0], cmp);
  printf("%.2f\n", runs[2]);
  cublasDestroy_v2(h);
  return c == 3.0f ? 0 : 1;
}
