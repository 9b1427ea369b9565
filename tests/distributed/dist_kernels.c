/* Candidate GEMM kernels for the distributed tests (peat_kernel_fn, the GEMM
 * convention of examples/candidates/peat_gemm_kernel.h).
 *
 * dist_gemm_die_kernel: a sequential fp32 GEMM, except on the MPI rank named
 * by PEAT_TEST_DIE_RANK (OMPI_COMM_WORLD_RANK / PMIX_RANK), where the first
 * call ends the process: a rank that dies in the middle of its playback. */
#include "peat_gemm_kernel.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int my_rank(void) {
  const char* r = getenv("OMPI_COMM_WORLD_RANK");
  if (r == NULL) r = getenv("PMIX_RANK");
  return r != NULL ? atoi(r) : -1;
}

static int32_t sequential(const DLTensor* in, int32_t n_in, DLTensor* out, int32_t n_out, const void* attrs) {
  peat_gemm_args_t g;
  int64_t i, j, p;
  if (peat_gemm_args_of(in, n_in, out, n_out, attrs, &g) != 0) return 1;
  for (i = 0; i < g.a.rows; ++i)
    for (j = 0; j < g.b.cols; ++j) {
      float acc = 0.0f;
      for (p = 0; p < g.a.cols; ++p) {
        const float a = g.a.trans ? g.a.data[p * g.a.ld + i] : g.a.data[i * g.a.ld + p];
        const float b = g.b.trans ? g.b.data[j * g.b.ld + p] : g.b.data[p * g.b.ld + j];
        acc += a * b;
      }
      float* c = &g.c.data[i * g.c.ld + j];
      *c = g.alpha * acc + (g.beta != 0.0f ? g.beta * *c : 0.0f);
    }
  return 0;
}

__attribute__((visibility("default"))) int32_t dist_gemm_die_kernel(void* ctx, const DLTensor* in, int32_t n_in,
                                                                    DLTensor* out, int32_t n_out, const void* attrs) {
  const char* die = getenv("PEAT_TEST_DIE_RANK");
  (void)ctx;
  if (die != NULL && atoi(die) == my_rank()) _exit(7);
  return sequential(in, n_in, out, n_out, attrs);
}
