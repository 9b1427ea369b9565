/* A candidate GEMM kernel for the interposition tests, loaded by the injector
 * as "libpeat-test-gemm-candidate.so:peat_test_candidate_gemm". It computes
 * the GEMM from the DLTensor views the interposer documents
 * (backends/interpose/peat_interpose.h) and adds 0.25 to every element, so the
 * host program can tell its result from the golden one. Host memory; built
 * with PEAT_TEST_CANDIDATE_CUDA (libpeat-test-gemm-candidate-cuda.so, linked
 * with the CUDA runtime) it also takes CUDA device memory, which it stages
 * through the host: the arithmetic stays the same code. */
#include <peat/injector.h>

#include "peat_interpose.h"

#include <stdint.h>
#include <stdlib.h>
#ifdef PEAT_TEST_CANDIDATE_CUDA
#include <cuda_runtime_api.h>
#endif

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

static void compute(const peat_interpose_gemm_t* g, const DLTensor* inputs, DLTensor* D);

#ifdef PEAT_TEST_CANDIDATE_CUDA
/* Bytes from a tensor's first to one past its last element. */
static size_t span_bytes(const DLTensor* t) {
  int64_t last = 0, numel = 1;
  for (int d = 0; d < t->ndim; ++d) {
    numel *= t->shape[d];
    if (t->strides != NULL) last += (t->shape[d] - 1) * t->strides[d];
  }
  if (numel == 0) return 0;
  return (size_t)(t->strides != NULL ? last + 1 : numel) * (size_t)(t->dtype.bits / 8);
}

/* A host copy of a device tensor (same shape and strides): 0 on success. */
static int stage_in(const DLTensor* t, DLTensor* host) {
  *host = *t;
  host->device.device_type = kDLCPU;
  host->byte_offset = 0;
  const size_t bytes = span_bytes(t);
  host->data = malloc(bytes > 0 ? bytes : 1);
  if (host->data == NULL) return 1;
  return cudaMemcpy(host->data, (const char*)t->data + t->byte_offset, bytes, cudaMemcpyDeviceToHost) != cudaSuccess;
}
#endif

__attribute__((visibility("default"))) int32_t peat_test_candidate_gemm(void* ctx, const DLTensor* inputs, int32_t n_in,
                                                                        DLTensor* outputs, int32_t n_out,
                                                                        const void* attrs) {
  (void)ctx;
  const peat_interpose_gemm_t* g = (const peat_interpose_gemm_t*)attrs;
  if (g == NULL || g->struct_size < sizeof(peat_interpose_gemm_t) || n_in < 2 || n_out != 1) return 1;
  if (g->beta != 0.0 && n_in < 3) return 2; /* C is needed and was not given */
#ifdef PEAT_TEST_CANDIDATE_CUDA
  if (outputs[0].device.device_type == kDLCUDA) {
    /* Inputs and the output (its padding must survive) to the host, the same
     * computation, the output back. */
    DLTensor host_in[3], host_out;
    int status = 0;
    for (int32_t i = 0; i < n_in && i < 3; ++i) status |= stage_in(&inputs[i], &host_in[i]);
    status |= stage_in(&outputs[0], &host_out);
    if (status == 0) {
      compute(g, host_in, &host_out);
      status = cudaMemcpy((char*)outputs[0].data + outputs[0].byte_offset, host_out.data, span_bytes(&outputs[0]),
                          cudaMemcpyHostToDevice) != cudaSuccess;
    }
    for (int32_t i = 0; i < n_in && i < 3; ++i) free(host_in[i].data);
    free(host_out.data);
    return status == 0 ? 0 : 3;
  }
#endif
  compute(g, inputs, &outputs[0]);
  return 0;
}

static void compute(const peat_interpose_gemm_t* g, const DLTensor* inputs, DLTensor* D) {
  const DLTensor *A = &inputs[0], *B = &inputs[1];
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
}
