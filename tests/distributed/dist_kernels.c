/* Candidate GEMM kernels for the distributed tests (peat_kernel_fn, the GEMM
 * convention of examples/candidates/peat_gemm_kernel.h).
 *
 * dist_gemm_die_kernel: a sequential fp32 GEMM, except on the MPI rank named
 * by PEAT_TEST_DIE_RANK (OMPI_COMM_WORLD_RANK / PMIX_RANK), where the first
 * call ends the process: a rank that dies in the middle of its playback.
 *
 * dist_gemm_device_kernel: the same GEMM as it runs on this rank's "device":
 * on the rank named by PEAT_TEST_FAULTY_RANK the device is faulty, and the
 * injector's STUCK_AT model (bit PEAT_TEST_STUCK_BIT, default 21, stuck at 1
 * on lane 3 of every 32) corrupts every output. A process outside MPI takes
 * its rank from PEAT_TEST_RANK (to record a rank's trace without mpirun). */
#include "peat_gemm_kernel.h"

#include <peat/injector.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int my_rank(void) {
  const char* r = getenv("OMPI_COMM_WORLD_RANK");
  if (r == NULL) r = getenv("PMIX_RANK");
  if (r == NULL) r = getenv("PEAT_TEST_RANK");
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

__attribute__((visibility("default"))) int32_t dist_gemm_device_kernel(void* ctx, const DLTensor* in, int32_t n_in,
                                                                       DLTensor* out, int32_t n_out,
                                                                       const void* attrs) {
  const char* faulty = getenv("PEAT_TEST_FAULTY_RANK");
  const char* bit = getenv("PEAT_TEST_STUCK_BIT");
  peat_inject_spec_t spec;
  int32_t rc;
  (void)ctx;
  rc = sequential(in, n_in, out, n_out, attrs);
  if (rc != 0 || faulty == NULL || atoi(faulty) != my_rank()) return rc;
  peat_inject_spec_init(&spec, PEAT_INJECT_STUCK_AT);
  spec.bit = bit != NULL ? atoi(bit) : 21;
  spec.stuck_value = 1;
  spec.scope = PEAT_STUCK_LANE;
  spec.lane_period = 32;
  spec.lane = 3;
  return peat_inject_apply(&spec, &out[0], NULL, 1, 0, 0, NULL) == PEAT_STATUS_OK ? 0 : 2;
}

/* dist_gemm_slow_kernel: the sequential GEMM, PEAT_TEST_SLOW_MS milliseconds
 * slower per call on the rank named by PEAT_TEST_SLOW_RANK: a rank whose
 * share takes longer than the others' and than the rank timeout. */
__attribute__((visibility("default"))) int32_t dist_gemm_slow_kernel(void* ctx, const DLTensor* in, int32_t n_in,
                                                                     DLTensor* out, int32_t n_out, const void* attrs) {
  const char* slow = getenv("PEAT_TEST_SLOW_RANK");
  const char* ms = getenv("PEAT_TEST_SLOW_MS");
  (void)ctx;
  if (slow != NULL && atoi(slow) == my_rank()) usleep((useconds_t)(1000 * (ms != NULL ? atoi(ms) : 300)));
  return sequential(in, n_in, out, n_out, attrs);
}
