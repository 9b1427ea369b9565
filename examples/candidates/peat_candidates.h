/* peat_candidates.h — nine candidate GEMM kernels with known defects, for PEAT's
 * playback and runtime fault injection (libpeat_candidates.so; each symbol can be
 * named as "libpeat_candidates.so:<symbol>").
 *
 * Each candidate is a real implementation of a GEMM, not an edit of a correct
 * result: the defect comes from how it computes. All share the plain C signature
 * peat_cand_gemm_fn, row-major float, BLAS convention:
 *
 *   C[M x N] = alpha * op(A)[M x K] * op(B)[K x N] + beta * C
 *   op(A) = A (M x K, lda >= K) when trans_a == 0, A^T (A stored K x M, lda >= M) otherwise;
 *   op(B) = B (K x N, ldb >= N) when trans_b == 0, B^T (B stored N x K, ldb >= K) otherwise;
 *   C is M x N with ldc >= N; when beta == 0, C is not read.
 *
 * "Sequential order" below means: acc = 0; for k = 0..K-1: acc += a_ik * b_kj
 * (fp32, no FMA contraction); then c_ij = alpha * acc (+ beta * c_ij when beta != 0).
 * peat_gemm_sequential computes exactly that and is the reference the defects are
 * stated against.
 *
 * Each kernel is exported twice: under the plain signature above, and as
 * <symbol>_kernel with the peat_kernel_fn signature of PEAT's injector, under
 * the GEMM convention of peat_gemm_kernel.h (inputs op(A), op(B) as strided
 * DLTensors, output C, attrs a peat_gemm_attrs_t or NULL; ctx unused).
 *
 * Thread safety: every function may be called from several threads at once on
 * distinct outputs. peat_cand_splitk_racy starts its own threads. */
#ifndef PEAT_CANDIDATES_H
#define PEAT_CANDIDATES_H

#include "peat_gemm_kernel.h"

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#  define PEAT_CAND_API __declspec(dllexport)
#else
#  define PEAT_CAND_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The plain C GEMM signature of every kernel in this library. */
typedef void (*peat_cand_gemm_fn)(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                                  const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                                  int64_t ldc);

/* The reference: sequential order in fp32 (see above). Not a candidate. */
PEAT_CAND_API void peat_gemm_sequential(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                                        const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
                                        float* C, int64_t ldc);

/* (1) Cache-blocked (32x32 output tiles, 64-deep K blocks) with 4 interleaved
 * accumulators per K block, combined as (s0+s1)+(s2+s3), K-block partials added
 * in order: a different summation order, within the fp32 rounding bound
 * gamma_K * sum_k |a_ik||b_kj|. Expected verdict: ROUNDING. */
PEAT_CAND_API void peat_cand_blocked(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                                     const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                                     int64_t ldc);

/* (2) Pairwise (recursive halving, leaves of <= 4 products) summation of the K
 * products. Within the fp32 bound (tighter: ~log2 K u). Expected: ROUNDING. */
PEAT_CAND_API void peat_cand_pairwise(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                                      const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                                      int64_t ldc);

/* (3) Inputs rounded to bf16 (round to nearest even, backends/common/float_bits.h),
 * then the sequential fp32 order. Relative input error <= 2^-8 each.
 * Expected: REDUCED_PRECISION, ~7-8 effective mantissa bits. */
PEAT_CAND_API void peat_cand_bf16(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                                  const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                                  int64_t ldc);

/* (4) Inputs rounded to tf32 (10 mantissa bits, round to nearest even), then the
 * sequential fp32 order. Relative input error <= 2^-11. Expected: REDUCED_PRECISION (~10 bits). */
PEAT_CAND_API void peat_cand_tf32(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                                  const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                                  int64_t ldc);

/* (5) fp16 inputs and fp16 accumulation: a and b rounded to fp16, each partial
 * sum acc + a*b rounded to fp16 (overflow past 65504 gives Inf), alpha and beta
 * applied in fp32. Expected: REDUCED_PRECISION (fp16 accumulation; NONFINITE when it overflows). */
PEAT_CAND_API void peat_cand_fp16acc(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                                     const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                                     int64_t ldc);

/* (6) Split-K over min(8, K / 128) threads (std::thread; one thread, hence
 * deterministic, when K < 256): each computes the partial sums of
 * its K range row by row and adds each finished row into a shared fp32
 * accumulator with an atomic compare-and-swap add, so the partials of an element
 * are summed in completion order, which varies from run to run.
 * Expected: NONDETERMINISM (and ROUNDING against the golden kernel). */
PEAT_CAND_API void peat_cand_splitk_racy(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                                         const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
                                         float* C, int64_t ldc);

/* (7) 32x32-tiled GEMM whose tile loops run over whole tiles only
 * (M / 32 and N / 32, rounded down): the trailing partial row tile and column
 * tile are never written when M or N is not a multiple of 32 (C keeps its old
 * contents there); the full tiles equal peat_gemm_sequential bit for bit.
 * Expected: REGION (edge tile) / DROPPED_WRITES. */
PEAT_CAND_API void peat_cand_tile_drop(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                                       const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                                       int64_t ldc);

/* (8) Forgets the alpha scaling: c = acc (+ beta * c). Equals the reference
 * divided by alpha (within rounding). Expected: SCALING with ratio 1/alpha
 * (EXACT when alpha == 1, which is what the example trainer uses). */
PEAT_CAND_API void peat_cand_no_alpha(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                                      const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                                      int64_t ldc);

/* (9) "Faulty ALU": the sequential result with bit 27 (an exponent bit of the
 * fp32 word) stuck at 1 on every 32nd output lane, lane = i * N + j (the flat
 * index of the logical M x N output) with lane % 32 == 0. Expected: STUCK_AT
 * bit 27, polarity 1, lane period 32. */
PEAT_CAND_API void peat_cand_stuck_bit27(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                                         const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
                                         float* C, int64_t ldc);

/* The same kernels as peat_kernel_fn (peat_gemm_kernel.h convention). */
#define PEAT_CAND_DECLARE_KERNEL(name) \
  PEAT_CAND_API int32_t name##_kernel(void* ctx, const DLTensor* inputs, int32_t n_in, DLTensor* outputs, int32_t n_out, \
                                      const void* attrs);
PEAT_CAND_DECLARE_KERNEL(peat_gemm_sequential)
PEAT_CAND_DECLARE_KERNEL(peat_cand_blocked)
PEAT_CAND_DECLARE_KERNEL(peat_cand_pairwise)
PEAT_CAND_DECLARE_KERNEL(peat_cand_bf16)
PEAT_CAND_DECLARE_KERNEL(peat_cand_tf32)
PEAT_CAND_DECLARE_KERNEL(peat_cand_fp16acc)
PEAT_CAND_DECLARE_KERNEL(peat_cand_splitk_racy)
PEAT_CAND_DECLARE_KERNEL(peat_cand_tile_drop)
PEAT_CAND_DECLARE_KERNEL(peat_cand_no_alpha)
PEAT_CAND_DECLARE_KERNEL(peat_cand_stuck_bit27)
#undef PEAT_CAND_DECLARE_KERNEL

/* One entry of the catalogue below. Strings are static. */
typedef struct peat_candidate_info {
  const char* symbol;    /* exported name, e.g. "peat_cand_bf16" */
  int32_t number;        /* 1..9, the numbering used above */
  const char* expected;  /* the error model a detector should report, e.g. "REDUCED_PRECISION" */
  const char* summary;   /* one line */
  peat_cand_gemm_fn fn;          /* the plain signature */
  peat_gemm_kernel_fn kernel;    /* the same kernel as peat_kernel_fn, exported as "<symbol>_kernel" */
} peat_candidate_info_t;

/* The nine candidates in order; *count receives 9 (count may be NULL). Never fails. */
PEAT_CAND_API const peat_candidate_info_t* peat_candidates(size_t* count);

#ifdef __cplusplus
}
#endif

#endif
