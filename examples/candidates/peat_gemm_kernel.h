/* peat_gemm_kernel.h — a GEMM as a PEAT kernel: the convention by which a GEMM
 * is called through peat_kernel_fn (include/peat/injector.h), so that PEAT's
 * injector can dispatch golden and candidate GEMMs and its profiler can record
 * their operands as tensors.
 *
 *   int32_t kernel(void* ctx, const DLTensor* inputs, int32_t n_in,
 *                  DLTensor* outputs, int32_t n_out, const void* attrs);
 *
 *   inputs[0]  op(A), float32, 2-D [M, K], on the CPU
 *   inputs[1]  op(B), float32, 2-D [K, N]
 *   outputs[0] C,     float32, 2-D [M, N], rows contiguous (strides {ldc, 1} or NULL)
 *   attrs      NULL (alpha = 1, beta = 0) or a peat_gemm_attrs_t
 * A transposed operand is a strided view: op(A) = A^T with A stored K x M
 * (leading dimension lda) has shape {M, K} and strides {1, lda}; the untransposed
 * one has strides {lda, 1} (NULL strides: compact row-major). byte_offset is
 * honoured. When beta != 0, outputs[0] is read as well as written.
 * Returns 0 on success, 1 when the arguments do not follow this convention
 * (nothing is written then).
 *
 * The helpers are static inline so that a kernel author needs nothing but this
 * header and <dlpack/dlpack.h>. C11 and C++. */
#ifndef PEAT_GEMM_KERNEL_H
#define PEAT_GEMM_KERNEL_H

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Per-call scalars of a GEMM kernel. struct_size = sizeof(peat_gemm_attrs_t). */
typedef struct peat_gemm_attrs {
  uint32_t struct_size;
  float alpha; /* C = alpha * op(A) op(B) + beta * C */
  float beta;  /* 0: C is not read */
} peat_gemm_attrs_t;

/* Same type as peat_kernel_fn in include/peat/injector.h. */
typedef int32_t (*peat_gemm_kernel_fn)(void* ctx, const DLTensor* inputs, int32_t n_in, DLTensor* outputs,
                                       int32_t n_out, const void* attrs);

/* A matrix operand as a plain GEMM sees it: op(X) is rows x cols; X is stored
 * row-major with leading dimension ld, transposed when trans is 1. */
typedef struct peat_gemm_operand {
  float* data;
  int64_t rows, cols, ld;
  int trans;
} peat_gemm_operand_t;

/* Reads a 2-D float32 CPU tensor as an operand. Returns 0, or 1 when the tensor
 * is not 2-D float32 on the CPU or its strides are neither {ld, 1} nor {1, ld}. */
static inline int peat_gemm_operand_of(const DLTensor* t, peat_gemm_operand_t* out) {
  if (t == NULL || out == NULL || t->data == NULL || t->ndim != 2 || t->shape == NULL) return 1;
  if (t->dtype.code != kDLFloat || t->dtype.bits != 32 || t->dtype.lanes != 1 || t->device.device_type != kDLCPU) return 1;
  const int64_t rows = t->shape[0], cols = t->shape[1];
  if (rows < 0 || cols < 0) return 1;
  out->data = (float*)((char*)t->data + t->byte_offset);
  out->rows = rows;
  out->cols = cols;
  if (t->strides == NULL) {
    out->trans = 0;
    out->ld = cols > 0 ? cols : 1;
  } else if (t->strides[1] == 1 && t->strides[0] >= (cols > 0 ? cols : 1)) {
    out->trans = 0;
    out->ld = t->strides[0];
  } else if (t->strides[0] == 1 && t->strides[1] >= (rows > 0 ? rows : 1)) {
    out->trans = 1;
    out->ld = t->strides[1];
  } else {
    return 1;
  }
  return 0;
}

/* Fills *t (with shape[2] and strides[2], which the caller owns and keeps alive)
 * as the view of op(X) = rows x cols over `data` stored with leading dimension ld,
 * transposed when trans is non-zero. */
static inline void peat_gemm_tensor(DLTensor* t, int64_t shape[2], int64_t strides[2], const float* data, int64_t rows,
                                    int64_t cols, int trans, int64_t ld) {
  shape[0] = rows;
  shape[1] = cols;
  strides[0] = trans ? 1 : ld;
  strides[1] = trans ? ld : 1;
  t->data = (void*)data;
  t->device.device_type = kDLCPU;
  t->device.device_id = 0;
  t->ndim = 2;
  t->dtype.code = kDLFloat;
  t->dtype.bits = 32;
  t->dtype.lanes = 1;
  t->shape = shape;
  t->strides = strides;
  t->byte_offset = 0;
}

/* The arguments of a plain GEMM call decoded from the kernel convention above.
 * Returns 0, or 1 (bad counts, operands, shapes that do not chain, C not
 * row-contiguous, attrs with a struct_size too small). */
typedef struct peat_gemm_args {
  peat_gemm_operand_t a, b, c;
  float alpha, beta;
} peat_gemm_args_t;

static inline int peat_gemm_args_of(const DLTensor* inputs, int32_t n_in, DLTensor* outputs, int32_t n_out,
                                    const void* attrs, peat_gemm_args_t* out) {
  if (inputs == NULL || outputs == NULL || out == NULL || n_in < 2 || n_out < 1) return 1;
  if (peat_gemm_operand_of(&inputs[0], &out->a) || peat_gemm_operand_of(&inputs[1], &out->b) ||
      peat_gemm_operand_of(&outputs[0], &out->c))
    return 1;
  if (out->c.trans) return 1;
  if (out->a.cols != out->b.rows || out->a.rows != out->c.rows || out->b.cols != out->c.cols) return 1;
  out->alpha = 1.0f;
  out->beta = 0.0f;
  if (attrs != NULL) {
    const peat_gemm_attrs_t* at = (const peat_gemm_attrs_t*)attrs;
    if (at->struct_size < offsetof(peat_gemm_attrs_t, beta) + sizeof(float)) return 1;
    out->alpha = at->alpha;
    out->beta = at->beta;
  }
  return 0;
}

#ifdef __cplusplus
}
#endif

#endif
