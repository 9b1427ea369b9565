// The SIMD fast path of the signature for f32 golden and f32 candidate (and
// bf16 with bf16, f16 with f16), both contiguous (Highway, dynamic dispatch to
// the best target of the CPU).
//
// It handles bitwise-equal finite pairs and "ordinary" differing pairs: both
// finite, golden normal and at least ratio_min_abs, candidate of the same
// sign within a factor 2 of the golden (so c - g is exact in f32, Sterbenz),
// and the error zero or normal. For those pairs every signature field is
// computed exactly as peat::hd::classify_pair defines it (the maxima are
// screened in SIMD and confirmed in scalar double arithmetic). A
// bitwise-equal pair costs only the golden's share (a square and a few
// counts); the differing pairs of a vector are compressed into a stage and
// take the rest of the work 16 (a vector) at a time (simd_f32.cpp). It stops
// at the first vector that holds any other pair; the caller runs the scalar
// path over that vector and calls again.
#pragma once

#include <cstdint>

namespace peat::impl::analyzer {

struct ExactAcc;  // exact_acc.hpp

// The exact sums of a signature, in the order of the accumulators a chunk keeps.
enum SumIndex : int {
  kSumError = 0,       // e
  kSumAbsError,        // |e|
  kSumSqError,         // e*e
  kSumSqGolden,        // g*g
  kSumSqCandidate,     // c*c
  kSumGoldenCandidate, // g*c
  kSumRatioDev,        // d = c/g - 1
  kSumRatioDevSq,      // d*d
  kSumCount
};

struct F32FastParams {
  double rtol = 0, atol = 0;
  float ratio_min_abs = 0;      // smallest float >= the config's ratio_min_abs
  bool stop_on_tolerance_fail = false;  // (spatial map) leave failing vectors to the scalar path
};

struct F32FastState {
  uint64_t count = 0, bitwise = 0, tolerance_fail = 0, finite = 0;
  double max_abs = 0, max_abs_g = 0, max_abs_c = 0, max_rel = 0, max_abs_golden = 0;
  int64_t max_abs_index = -1, max_rel_index = -1;
  uint64_t ratio_n = 0;          // ratios so far (this chunk); min/max valid when > 0
  double ratio_min = 0, ratio_max = 0;
  ExactAcc* acc = nullptr;        // [kSumCount] exact accumulators the sums go to
  uint64_t* ulp_hist = nullptr;
  uint64_t* rel_hist = nullptr;
  uint64_t* xor_bit_hist = nullptr;
  uint64_t* popcount_hist = nullptr;
  uint64_t* top_bit_hist = nullptr;      // highest differing bit
  uint64_t* top_bit_set_hist = nullptr;  // ... set in the candidate
  uint64_t* low_bit_hist = nullptr;      // the candidate's lowest set bit (sign cleared)
  uint64_t staged = 0;  // differing pairs taken through the stage (see simd_f32.cpp; for tests)
};

// Processes whole vectors of ordinary pairs from the start of g[0, n), c[0, n)
// (element index index0 + i) and returns how many elements it consumed (a
// multiple of the vector length, possibly 0).
int64_t f32_fast(const uint32_t* g, const uint32_t* c, int64_t n, int64_t index0, const F32FastParams& params,
                 F32FastState& state);

// The same for bf16 golden and bf16 candidate (exact widening to f32; ULP
// distances and bit positions in bf16 units).
int64_t bf16_fast(const uint16_t* g, const uint16_t* c, int64_t n, int64_t index0, const F32FastParams& params,
                  F32FastState& state);

// The same for f16 golden and f16 candidate (normal f16 values only; the
// rest goes to the scalar path).
int64_t f16_fast(const uint16_t* g, const uint16_t* c, int64_t n, int64_t index0, const F32FastParams& params,
                 F32FastState& state);

// Number of f32 lanes of the target the fast paths dispatch to.
int64_t f32_fast_lanes();

}  // namespace peat::impl::analyzer
