// candidates.cpp — the nine candidate GEMMs of libpeat_candidates.so (see
// peat_candidates.h for what each does and which error model it should produce).
#include "peat_candidates.h"

#include "float_bits.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace {

using peat::hd::bit_cast;

// op(A) as M x K rows and op(B) as K x N rows, both contiguous, every element
// passed through `round` (identity for the fp32 kernels).
struct Packed {
  std::vector<float> a, b;
  int64_t M, N, K;
  const float* row_a(int64_t i) const { return a.data() + i * K; }
  const float* row_b(int64_t k) const { return b.data() + k * N; }
};

template <typename Round>
Packed pack(int ta, int tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
            Round round) {
  Packed p{std::vector<float>(static_cast<size_t>(M * K)), std::vector<float>(static_cast<size_t>(K * N)), M, N, K};
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k) p.a[i * K + k] = round(ta ? A[k * lda + i] : A[i * lda + k]);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t j = 0; j < N; ++j) p.b[k * N + j] = round(tb ? B[j * ldb + k] : B[k * ldb + j]);
  return p;
}

inline float identity(float x) { return x; }

inline void finish(float acc, float alpha, float beta, float* c) { *c = beta == 0.0f ? alpha * acc : alpha * acc + beta * *c; }

// acc[j] += sum over k in [k0, k1) of a_ik * b_kj for j in [0, n), each element
// in increasing k (the loop runs over j innermost, so it vectorises without
// reordering any element's sum).
inline void row_sequential(const Packed& p, int64_t i, int64_t k0, int64_t k1, int64_t n, float* acc) {
  const float* a = p.row_a(i);
  for (int64_t k = k0; k < k1; ++k) {
    const float av = a[k];
    const float* b = p.row_b(k);
    for (int64_t j = 0; j < n; ++j) acc[j] += av * b[j];
  }
}

template <typename Round>
void sequential(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, const float* B,
                int64_t ldb, float beta, float* C, int64_t ldc, Round round) {
  if (M <= 0 || N <= 0) return;
  const Packed p = pack(ta, tb, M, N, K, A, lda, B, ldb, round);
  std::vector<float> acc(static_cast<size_t>(N));
  for (int64_t i = 0; i < M; ++i) {
    std::fill(acc.begin(), acc.end(), 0.0f);
    row_sequential(p, i, 0, K, N, acc.data());
    for (int64_t j = 0; j < N; ++j) finish(acc[j], alpha, beta, C + i * ldc + j);
  }
}

// tf32: keep 10 of the 23 mantissa bits, round to nearest even (float_bits.h has
// no tf32 conversion; this is the same rounding as its float_to_bf16 at bit 13).
inline float round_tf32(float x) {
  uint32_t u = bit_cast<uint32_t>(x);
  if ((u & 0x7F800000u) == 0x7F800000u) return x;  // Inf, NaN unchanged
  u += 0xFFFu + ((u >> 13) & 1u);
  u &= ~0x1FFFu;
  return bit_cast<float>(u);
}

inline float round_bf16(float x) { return peat::hd::bf16_to_float(peat::hd::float_to_bf16(x)); }
inline float round_f16(float x) { return peat::hd::f16_to_float(peat::hd::float_to_f16(x)); }

// Pairwise sum of p[0], p[stride], ..., p[(n-1) stride]: halves summed
// recursively, leaves of up to 4 terms summed in order.
float pairwise_sum(const float* p, int64_t n, int64_t stride) {
  if (n <= 4) {
    float s = 0.0f;
    for (int64_t i = 0; i < n; ++i) s += p[i * stride];
    return s;
  }
  const int64_t half = n / 2;
  return pairwise_sum(p, half, stride) + pairwise_sum(p + half * stride, n - half, stride);
}

constexpr int64_t kTile = 32;
constexpr int64_t kDepth = 64;

}  // namespace

extern "C" {

void peat_gemm_sequential(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                          const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  sequential(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, identity);
}

void peat_cand_blocked(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                       const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  const Packed p = pack(ta, tb, M, N, K, A, lda, B, ldb, identity);
  float total[kTile * kTile];
  float s[4][kTile];
  for (int64_t i0 = 0; i0 < M; i0 += kTile) {
    const int64_t mi = std::min(kTile, M - i0);
    for (int64_t j0 = 0; j0 < N; j0 += kTile) {
      const int64_t nj = std::min(kTile, N - j0);
      std::fill(total, total + kTile * kTile, 0.0f);
      // A 32 x 64 block of op(A) and a 64 x 32 block of op(B) stay in L1 for a whole tile.
      for (int64_t k0 = 0; k0 < K; k0 += kDepth) {
        const int64_t kd = std::min(kDepth, K - k0);
        for (int64_t i = 0; i < mi; ++i) {
          const float* a = p.row_a(i0 + i) + k0;
          for (auto& lane : s) std::fill(lane, lane + kTile, 0.0f);
          for (int64_t k = 0; k < kd; ++k) {
            const float av = a[k];
            const float* b = p.row_b(k0 + k) + j0;
            float* sk = s[k & 3];
            for (int64_t j = 0; j < nj; ++j) sk[j] += av * b[j];
          }
          for (int64_t j = 0; j < nj; ++j) total[i * kTile + j] += (s[0][j] + s[1][j]) + (s[2][j] + s[3][j]);
        }
      }
      for (int64_t i = 0; i < mi; ++i)
        for (int64_t j = 0; j < nj; ++j) finish(total[i * kTile + j], alpha, beta, C + (i0 + i) * ldc + j0 + j);
    }
  }
}

void peat_cand_pairwise(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                        const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  const Packed p = pack(ta, tb, M, N, K, A, lda, B, ldb, identity);
  // The K products of a row i and 32 columns, k-major, then one pairwise sum per column.
  std::vector<float> products(static_cast<size_t>(K * kTile));
  for (int64_t i = 0; i < M; ++i) {
    const float* a = p.row_a(i);
    for (int64_t j0 = 0; j0 < N; j0 += kTile) {
      const int64_t nj = std::min(kTile, N - j0);
      for (int64_t k = 0; k < K; ++k) {
        const float* b = p.row_b(k) + j0;
        for (int64_t j = 0; j < nj; ++j) products[k * kTile + j] = a[k] * b[j];
      }
      for (int64_t j = 0; j < nj; ++j) finish(pairwise_sum(products.data() + j, K, kTile), alpha, beta, C + i * ldc + j0 + j);
    }
  }
}

void peat_cand_bf16(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                    const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  sequential(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, round_bf16);
}

void peat_cand_tf32(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                    const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  sequential(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, round_tf32);
}

void peat_cand_fp16acc(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                       const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  const Packed p = pack(ta, tb, M, N, K, A, lda, B, ldb, round_f16);
  std::vector<float> acc(static_cast<size_t>(N));  // fp16 accumulators (every value an fp16 value)
  for (int64_t i = 0; i < M; ++i) {
    const float* a = p.row_a(i);
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int64_t k = 0; k < K; ++k) {
      const float av = a[k];
      const float* b = p.row_b(k);
      for (int64_t j = 0; j < N; ++j) acc[j] = round_f16(acc[j] + av * b[j]);  // fp16 x fp16 is exact in fp32
    }
    for (int64_t j = 0; j < N; ++j) finish(acc[j], alpha, beta, C + i * ldc + j);
  }
}

void peat_cand_splitk_racy(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                           const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  const Packed p = pack(ta, tb, M, N, K, A, lda, B, ldb, identity);
  std::vector<float> acc(static_cast<size_t>(M * N), 0.0f);
  const int64_t splits = std::clamp<int64_t>(K / 128, 1, 8);  // one thread per 128 of K, at most 8
  auto work = [&](int64_t s) {
    const int64_t k0 = K * s / splits, k1 = K * (s + 1) / splits;
    std::vector<float> row(static_cast<size_t>(N));
    for (int64_t i = 0; i < M; ++i) {
      std::fill(row.begin(), row.end(), 0.0f);
      row_sequential(p, i, k0, k1, N, row.data());
      // Add the finished row into the shared accumulator, element by element, in whatever order threads get here.
      for (int64_t j = 0; j < N; ++j) {
        std::atomic_ref<float> target(acc[static_cast<size_t>(i * N + j)]);
        float old = target.load(std::memory_order_relaxed);
        while (!target.compare_exchange_weak(old, old + row[j], std::memory_order_relaxed)) {
        }
      }
    }
  };
  std::vector<std::thread> threads;
  for (int64_t s = 1; s < splits; ++s) threads.emplace_back(work, s);
  work(0);
  for (auto& t : threads) t.join();
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) finish(acc[static_cast<size_t>(i * N + j)], alpha, beta, C + i * ldc + j);
}

void peat_cand_tile_drop(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                         const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  const Packed p = pack(ta, tb, M, N, K, A, lda, B, ldb, identity);
  const int64_t row_tiles = M / kTile, col_tiles = N / kTile;  // the defect: should round up
  float acc[kTile];
  for (int64_t ti = 0; ti < row_tiles; ++ti)
    for (int64_t tj = 0; tj < col_tiles; ++tj)
      for (int64_t i = ti * kTile; i < (ti + 1) * kTile; ++i) {
        std::fill(acc, acc + kTile, 0.0f);
        const float* a = p.row_a(i);
        for (int64_t k = 0; k < K; ++k) {
          const float* b = p.row_b(k) + tj * kTile;
          for (int64_t j = 0; j < kTile; ++j) acc[j] += a[k] * b[j];
        }
        for (int64_t j = 0; j < kTile; ++j) finish(acc[j], alpha, beta, C + i * ldc + tj * kTile + j);
      }
}

void peat_cand_no_alpha(int ta, int tb, int64_t M, int64_t N, int64_t K, float /*alpha*/, const float* A, int64_t lda,
                        const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  sequential(ta, tb, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc, identity);
}

void peat_cand_stuck_bit27(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                           const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  sequential(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, identity);
  if (M <= 0 || N <= 0) return;
  // The stuck ALU lane: every 32nd output element (flat index i * N + j) gets bit 27 forced to 1.
  for (int64_t lane = 0; lane < M * N; lane += 32) {
    float* c = C + (lane / N) * ldc + lane % N;
    *c = bit_cast<float>(bit_cast<uint32_t>(*c) | (1u << 27));
  }
}

}  // extern "C"

namespace {

int32_t run_kernel(peat_cand_gemm_fn fn, const DLTensor* inputs, int32_t n_in, DLTensor* outputs, int32_t n_out, const void* attrs) {
  peat_gemm_args_t g;
  if (peat_gemm_args_of(inputs, n_in, outputs, n_out, attrs, &g) != 0) return 1;
  fn(g.a.trans, g.b.trans, g.a.rows, g.b.cols, g.a.cols, g.alpha, g.a.data, g.a.ld, g.b.data, g.b.ld, g.beta, g.c.data, g.c.ld);
  return 0;
}

}  // namespace

extern "C" {

#define PEAT_CAND_DEFINE_KERNEL(name)                                                                                 \
  int32_t name##_kernel(void*, const DLTensor* inputs, int32_t n_in, DLTensor* outputs, int32_t n_out, const void* attrs) { \
    return run_kernel(name, inputs, n_in, outputs, n_out, attrs);                                                     \
  }
PEAT_CAND_DEFINE_KERNEL(peat_gemm_sequential)
PEAT_CAND_DEFINE_KERNEL(peat_cand_blocked)
PEAT_CAND_DEFINE_KERNEL(peat_cand_pairwise)
PEAT_CAND_DEFINE_KERNEL(peat_cand_bf16)
PEAT_CAND_DEFINE_KERNEL(peat_cand_tf32)
PEAT_CAND_DEFINE_KERNEL(peat_cand_fp16acc)
PEAT_CAND_DEFINE_KERNEL(peat_cand_splitk_racy)
PEAT_CAND_DEFINE_KERNEL(peat_cand_tile_drop)
PEAT_CAND_DEFINE_KERNEL(peat_cand_no_alpha)
PEAT_CAND_DEFINE_KERNEL(peat_cand_stuck_bit27)
#undef PEAT_CAND_DEFINE_KERNEL

const peat_candidate_info_t* peat_candidates(size_t* count) {
  static const peat_candidate_info_t table[] = {
      {"peat_cand_blocked", 1, "ROUNDING", "cache-blocked GEMM, 4 interleaved accumulators per 64-deep K block", peat_cand_blocked, peat_cand_blocked_kernel},
      {"peat_cand_pairwise", 2, "ROUNDING", "pairwise summation of the K products", peat_cand_pairwise, peat_cand_pairwise_kernel},
      {"peat_cand_bf16", 3, "REDUCED_PRECISION", "inputs rounded to bf16, fp32 accumulation", peat_cand_bf16, peat_cand_bf16_kernel},
      {"peat_cand_tf32", 4, "REDUCED_PRECISION", "inputs rounded to tf32, fp32 accumulation", peat_cand_tf32, peat_cand_tf32_kernel},
      {"peat_cand_fp16acc", 5, "REDUCED_PRECISION", "fp16 inputs and fp16 accumulation", peat_cand_fp16acc, peat_cand_fp16acc_kernel},
      {"peat_cand_splitk_racy", 6, "NONDETERMINISM", "8-way split-K, partial sums added in completion order", peat_cand_splitk_racy, peat_cand_splitk_racy_kernel},
      {"peat_cand_tile_drop", 7, "REGION", "32x32 tiles, trailing partial tiles never written", peat_cand_tile_drop, peat_cand_tile_drop_kernel},
      {"peat_cand_no_alpha", 8, "SCALING", "alpha scaling forgotten", peat_cand_no_alpha, peat_cand_no_alpha_kernel},
      {"peat_cand_stuck_bit27", 9, "STUCK_AT", "bit 27 stuck at 1 on every 32nd output lane", peat_cand_stuck_bit27, peat_cand_stuck_bit27_kernel},
  };
  if (count) *count = sizeof table / sizeof table[0];
  return table;
}

}  // extern "C"
