/* Test candidate kernels, built as a shared object so that the injector's
 * "libx.so:symbol" loading path is exercised. Each has the peat_kernel_fn
 * signature and handles compact f32 tensors: output[i] from input[i].
 *   peat_test_exact       output = input (bitwise equal to the golden copy)
 *   peat_test_next_ulp    output = the next float above input (1 ULP)
 *   peat_test_scaled      output = 2 * input
 *   peat_test_fail        returns 3 without writing
 *   peat_test_nan         writes NaN into every output element */
#include <peat/injector.h>

#include <math.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

static int64_t numel(const DLTensor* t) {
  int64_t n = 1;
  int32_t d;
  for (d = 0; d < t->ndim; ++d) n *= t->shape[d];
  return n;
}

static int32_t map(const DLTensor* inputs, int32_t n_in, DLTensor* outputs, int32_t n_out, int mode) {
  int64_t i, n;
  const float* in;
  float* out;
  if (n_in < 1 || n_out < 1 || inputs[0].dtype.code != kDLFloat || inputs[0].dtype.bits != 32) return 22;
  n = numel(&outputs[0]);
  if (numel(&inputs[0]) != n) return 22;
  in = (const float*)((const char*)inputs[0].data + inputs[0].byte_offset);
  out = (float*)((char*)outputs[0].data + outputs[0].byte_offset);
  for (i = 0; i < n; ++i) {
    switch (mode) {
      case 0: out[i] = in[i]; break;
      case 1: out[i] = nextafterf(in[i], INFINITY); break;
      case 2: out[i] = 2.0f * in[i]; break;
      default: out[i] = NAN; break;
    }
  }
  return 0;
}

EXPORT int32_t peat_test_exact(void* ctx, const DLTensor* inputs, int32_t n_in, DLTensor* outputs, int32_t n_out,
                               const void* attrs) {
  (void)ctx;
  (void)attrs;
  return map(inputs, n_in, outputs, n_out, 0);
}

EXPORT int32_t peat_test_next_ulp(void* ctx, const DLTensor* inputs, int32_t n_in, DLTensor* outputs, int32_t n_out,
                                  const void* attrs) {
  (void)ctx;
  (void)attrs;
  return map(inputs, n_in, outputs, n_out, 1);
}

EXPORT int32_t peat_test_scaled(void* ctx, const DLTensor* inputs, int32_t n_in, DLTensor* outputs, int32_t n_out,
                                const void* attrs) {
  (void)ctx;
  (void)attrs;
  return map(inputs, n_in, outputs, n_out, 2);
}

EXPORT int32_t peat_test_fail(void* ctx, const DLTensor* inputs, int32_t n_in, DLTensor* outputs, int32_t n_out,
                              const void* attrs) {
  (void)ctx;
  (void)inputs;
  (void)n_in;
  (void)outputs;
  (void)n_out;
  (void)attrs;
  return 3;
}

EXPORT int32_t peat_test_nan(void* ctx, const DLTensor* inputs, int32_t n_in, DLTensor* outputs, int32_t n_out,
                             const void* attrs) {
  (void)ctx;
  (void)attrs;
  return map(inputs, n_in, outputs, n_out, 3);
}

/* Counts its calls through ctx (an int64_t*) and copies: checks that ctx and
 * attrs travel through dispatch unchanged. attrs must point to the int 42. */
EXPORT int32_t peat_test_counting(void* ctx, const DLTensor* inputs, int32_t n_in, DLTensor* outputs, int32_t n_out,
                                  const void* attrs) {
  if (ctx == NULL || attrs == NULL || *(const int*)attrs != 42) return 9;
  ++*(int64_t*)ctx;
  return map(inputs, n_in, outputs, n_out, 0);
}
