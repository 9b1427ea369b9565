// signature_element.h — the per-element arithmetic of the error signature
// (DESIGN.md §5), written once for host and device.
//
// classify_pair() turns one (golden, candidate) pair into a PairInfo: every
// count, the error, the relative error, the histogram buckets and the XOR
// word. The CPU backend (lib/analyzer) calls it in its hot loop, the CUDA and
// HIP signature kernels call the same function, so the CPU tests check the
// arithmetic the GPUs run. accumulate_pair and merge_signature_data are here
// too, since GPU blocks merge partial signatures the same way. Every sum is
// exact (exact_sum.h), so a signature does not depend on the order in which
// pairs were added or partials merged.
#pragma once

#include "backends/common/exact_sum.h"
#include "backends/common/float_bits.h"
#include "backends/common/peat_hd.h"

#include <peat/analyzer.h>

#include <cstdint>

namespace peat::hd {

// ---- float formats -----------------------------------------------------------
// Each format: its storage word, width, and exact conversions to/from double.

struct FormatF16 {
  using Bits = uint16_t;
  static constexpr int kWidth = 16;
  static constexpr int kMantissa = 10;
  static PEAT_HD double to_double(Bits b) { return static_cast<double>(f16_to_float(b)); }
};
struct FormatBF16 {
  using Bits = uint16_t;
  static constexpr int kWidth = 16;
  static constexpr int kMantissa = 7;
  static PEAT_HD double to_double(Bits b) { return static_cast<double>(bf16_to_float(b)); }
};
struct FormatF32 {
  using Bits = uint32_t;
  static constexpr int kWidth = 32;
  static constexpr int kMantissa = 23;
  static PEAT_HD double to_double(Bits b) { return static_cast<double>(bit_cast<float>(b)); }
};
struct FormatF64 {
  using Bits = uint64_t;
  static constexpr int kWidth = 64;
  static constexpr int kMantissa = 52;
  static PEAT_HD double to_double(Bits b) { return bit_cast<double>(b); }
};

// Rounds a double to float with round-to-odd: the result is the float that
// truncation toward zero gives, with its last bit set when that truncation was
// inexact. A second rounding of it to a format with at least two fewer
// mantissa bits (f16, bf16) is then the correctly rounded double -> narrow
// conversion (no double-rounding error).
PEAT_HD float double_to_float_round_odd(double d) {
  float f = static_cast<float>(d);
  if (d != d) return f;
  const double back = static_cast<double>(f);
  if (back == d) return f;
  uint32_t bits = bit_cast<uint32_t>(f);
  const bool away = (back > d) == (d > 0);  // rounded away from zero: step back toward zero
  if (away) bits -= 1;                      // magnitude - 1 ulp (Inf -> max finite)
  bits |= 1u;                               // sticky: inexact
  return bit_cast<float>(bits);
}

// Conversion of a double (exactly holding any candidate element) to the
// golden format's storage word, rounding to nearest even; NaN stays NaN.
template <typename G>
PEAT_HD typename G::Bits from_double(double d);
template <>
PEAT_HD uint16_t from_double<FormatF16>(double d) {
  return float_to_f16(double_to_float_round_odd(d));
}
template <>
PEAT_HD uint16_t from_double<FormatBF16>(double d) {
  return float_to_bf16(double_to_float_round_odd(d));
}
template <>
PEAT_HD uint32_t from_double<FormatF32>(double d) {
  return bit_cast<uint32_t>(static_cast<float>(d));
}
template <>
PEAT_HD uint64_t from_double<FormatF64>(double d) {
  return bit_cast<uint64_t>(d);
}

// ---- bit-level helpers -----------------------------------------------------

PEAT_HD int clz64(uint64_t x) {  // x != 0
#if defined(__CUDA_ARCH__)
  return __clzll(static_cast<long long>(x));
#else
  return __builtin_clzll(x);
#endif
}
PEAT_HD int ctz64(uint64_t x) {  // x != 0
#if defined(__CUDA_ARCH__)
  return __ffsll(static_cast<long long>(x)) - 1;
#else
  return __builtin_ctzll(x);
#endif
}
PEAT_HD int popcount64(uint64_t x) {
#if defined(__CUDA_ARCH__)
  return __popcll(x);
#elif defined(__POPCNT__)
  return __builtin_popcountll(x);
#else
  // Without the popcnt instruction the builtin is a library call; this is the
  // same count in a few inline operations.
  x = x - ((x >> 1) & 0x5555555555555555ull);
  x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
  x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0Full;
  return static_cast<int>((x * 0x0101010101010101ull) >> 56);
#endif
}

// Position of a non-NaN value of width W on the ordered line of representable
// numbers (two's complement of sign-magnitude; +0 and -0 both at 0).
template <typename G>
PEAT_HD int64_t ordered_position(typename G::Bits b) {
  constexpr uint64_t sign = uint64_t{1} << (G::kWidth - 1);
  const uint64_t u = static_cast<uint64_t>(b);
  const uint64_t magnitude = u & (sign - 1);
  return (u & sign) ? -static_cast<int64_t>(magnitude) : static_cast<int64_t>(magnitude);
}

// ULP distance between two non-NaN values (fits uint64 for every format).
template <typename G>
PEAT_HD uint64_t ulp_distance(typename G::Bits a, typename G::Bits b) {
  const int64_t pa = ordered_position<G>(a), pb = ordered_position<G>(b);
  // The true difference is below 2^64, so wrap-around subtraction is exact.
  return pa >= pb ? static_cast<uint64_t>(pa) - static_cast<uint64_t>(pb)
                  : static_cast<uint64_t>(pb) - static_cast<uint64_t>(pa);
}

// Bucket of a ULP distance: 0 for 0, else 1 + floor(log2 d) (1..64).
PEAT_HD int ulp_bucket(uint64_t distance) { return distance == 0 ? 0 : 64 - clz64(distance); }

// floor(log2 x) of a finite x > 0, exactly (subnormals included), and the 52
// fraction bits of x normalised to [1, 2).
PEAT_HD void log2_split(double x, int& exponent, uint64_t& fraction) {
  const uint64_t bits = bit_cast<uint64_t>(x);
  const int biased = static_cast<int>((bits >> 52) & 0x7FF);
  uint64_t frac = bits & ((uint64_t{1} << 52) - 1);
  if (biased != 0) {
    exponent = biased - 1023;
    fraction = frac;
    return;
  }
  // Subnormal: value = frac * 2^-1074; normalise.
  const int lead = 63 - clz64(frac);  // position of the leading 1
  exponent = lead - 1074;
  fraction = (frac << (52 - lead)) & ((uint64_t{1} << 52) - 1);
}

// Relative-error bucket of r = num / den for finite num > 0, den > 0, without
// dividing: floor(log2 r) = E_num - E_den - (frac_num < frac_den).
PEAT_HD int rel_bucket_of(double num, double den) {
  int en, ed;
  uint64_t fn, fd;
  log2_split(num, en, fn);
  log2_split(den, ed, fd);
  const int k = en - ed - (fn < fd ? 1 : 0);
  if (k < PEAT_SIGNATURE_REL_MIN_EXPONENT) return 1;
  if (k >= 0) return PEAT_SIGNATURE_REL_LARGE_BUCKET;
  return 2 + (k - PEAT_SIGNATURE_REL_MIN_EXPONENT);
}

PEAT_HD double abs_d(double x) { return x < 0 ? -x : (x == 0 ? 0.0 : x); }
PEAT_HD bool is_nan_d(double x) { return x != x; }
PEAT_HD bool is_inf_d(double x) { return x - x != x - x && x == x; }
PEAT_HD bool signbit_d(double x) { return (bit_cast<uint64_t>(x) >> 63) != 0; }

// ---- one pair ----------------------------------------------------------------

// Flags of PairInfo::flags.
enum PairFlag : uint32_t {
  kBitwiseMismatch = 1u << 0,
  kValueMismatch = 1u << 1,
  kGoldenNan = 1u << 2,
  kGoldenInf = 1u << 3,
  kCandidateNan = 1u << 4,
  kCandidateInf = 1u << 5,
  kNewNonfinite = 1u << 6,
  kLostNonfinite = 1u << 7,
  kSignFlip = 1u << 8,
  kDropped = 1u << 9,
  kSpurious = 1u << 10,
  kToleranceFail = 1u << 11,
  kFinite = 1u << 12,      // both finite: error sums and maxima apply
  kRelDefined = 1u << 13,  // finite and g != 0: rel is defined
  kRatio = 1u << 14,       // enters the c/g ratio statistics
};

struct PairInfo {
  uint32_t flags;
  int ulp_bucket;
  int rel_bucket;
  uint64_t xor_bits;  // golden word XOR converted candidate word
  uint64_t cand_bits; // the converted candidate word
  int cand_low_bit;   // lowest set bit of cand_bits with the sign cleared; -1 for +-0
  double g, c;        // the values (candidate converted to the golden format)
  double err;         // c - g in double (finite pairs)
  double abs_err;     // |err|
  double rel;         // |err| / |g| (kRelDefined)
  double ratio;       // c / g (kRatio)
};

// Classifies one pair. `gb` is the golden word, `cb` the candidate already in
// the golden format. Definitions: see peat_signature_t in peat/analyzer.h.
#if !PEAT_DEVICE_COMPILER && defined(__GNUC__)
#  define PEAT_SIG_HOT __attribute__((always_inline))
#else
#  define PEAT_SIG_HOT
#endif

template <typename G>
PEAT_SIG_HOT PEAT_HD PairInfo classify_pair(typename G::Bits gb, typename G::Bits cb, double rtol, double atol,
                               double ratio_min_abs) {
  PairInfo p;
  p.g = G::to_double(gb);
  p.c = G::to_double(cb);
  p.xor_bits = static_cast<uint64_t>(gb ^ cb);
  p.cand_bits = static_cast<uint64_t>(cb);
  const uint64_t magnitude = p.cand_bits & ~(uint64_t{1} << (G::kWidth - 1));
  p.cand_low_bit = magnitude == 0 ? -1 : ctz64(magnitude);
  p.err = 0;
  p.abs_err = 0;
  p.rel = 0;
  p.ratio = 0;
  const double g = p.g, c = p.c;
  const bool g_nan = is_nan_d(g), c_nan = is_nan_d(c);
  const bool g_inf = is_inf_d(g), c_inf = is_inf_d(c);
  const bool g_fin = !g_nan && !g_inf, c_fin = !c_nan && !c_inf;
  uint32_t f = 0;
  if (p.xor_bits != 0) f |= kBitwiseMismatch;
  if (!(g == c) && !(g_nan && c_nan)) f |= kValueMismatch;
  if (g_nan) f |= kGoldenNan;
  if (g_inf) f |= kGoldenInf;
  if (c_nan) f |= kCandidateNan;
  if (c_inf) f |= kCandidateInf;
  if (g_fin && !c_fin) f |= kNewNonfinite;
  if (!g_fin && c_fin) f |= kLostNonfinite;
  if (!g_nan && !c_nan && g != 0 && c != 0 && signbit_d(g) != signbit_d(c)) f |= kSignFlip;
  if (c == 0 && g != 0 && !g_nan) f |= kDropped;
  if (g == 0 && c != 0 && !c_nan) f |= kSpurious;
  p.ulp_bucket = (g_nan || c_nan) ? PEAT_SIGNATURE_ULP_NAN_BUCKET : ulp_bucket(ulp_distance<G>(gb, cb));
  p.rel_bucket = PEAT_SIGNATURE_REL_UNDEFINED_BUCKET;
  if (g_fin && c_fin) {
    f |= kFinite;
    p.err = c - g;
    p.abs_err = abs_d(p.err);
    const double abs_g = abs_d(g);
    if (p.abs_err > atol + rtol * abs_g) f |= kToleranceFail;
    if (p.abs_err == 0) {
      p.rel_bucket = 0;
      if (g != 0) f |= kRelDefined;  // rel stays 0
    } else if (g != 0) {
      f |= kRelDefined;
      p.rel = p.abs_err / abs_g;
      p.rel_bucket = is_inf_d(p.abs_err) ? PEAT_SIGNATURE_REL_LARGE_BUCKET : rel_bucket_of(p.abs_err, abs_g);
    }
    if (g != 0 && abs_g >= ratio_min_abs) {
      f |= kRatio;
      p.ratio = c / g;
    }
  } else {
    // allclose with equal_nan: two NaNs pass, one NaN fails, Inf must match exactly.
    const bool pass = (g_nan && c_nan) || (!g_nan && !c_nan && g == c);
    if (!pass) f |= kToleranceFail;
  }
  p.flags = f;
  return p;
}

// ---- combining -----------------------------------------------------------------

// Max with index: larger value wins, the lower index on a tie (so the result
// does not depend on the merge order).
PEAT_HD bool beats(double value, int64_t index, double best, int64_t best_index) {
  return value > best || (value == best && best_index >= 0 && index < best_index) || best_index < 0;
}

// Total order for the ratio extrema: -0 sorts below +0, so that min and max
// of values that compare equal do not depend on which came first.
PEAT_HD bool less_total(double a, double b) { return a < b || (a == b && signbit_d(a) && !signbit_d(b)); }

// Adds one ratio c/g to the exact ratio sums (deviation d = r - 1) and extrema.
PEAT_HD void ratio_add(peat_signature_t& s, double ratio) {
  if (s.ratio_count == 0 || less_total(ratio, s.ratio_min)) s.ratio_min = ratio;
  if (s.ratio_count == 0 || less_total(s.ratio_max, ratio)) s.ratio_max = ratio;
  s.ratio_count += 1;
  const double d = ratio - 1.0;
  exact_sum_add(s.ratio_dev_sum, d);
  exact_sum_add(s.ratio_dev_sq_sum, d * d);
}

// Counts the bit positions of a mismatching pair: its highest differing bit,
// whether the candidate has it set, and the candidate's lowest set bit (the
// grid its value lies on).
PEAT_HD void bit_positions_add(peat_signature_t& s, const PairInfo& p) {
  if (p.xor_bits == 0) return;
  const int top = 63 - clz64(p.xor_bits);
  s.xor_top_bit_hist[top] += 1;
  s.xor_top_bit_set_hist[top] += (p.cand_bits >> top) & 1u;
  if (p.cand_low_bit >= 0) s.candidate_low_bit_hist[p.cand_low_bit] += 1;
}

// Adds one classified pair at element `index` into a (partial) signature. The
// reference accumulation for device kernels (one thread's partial); the CPU
// fast path accumulates chunks and merges them with the same rules.
PEAT_HD void accumulate_pair(peat_signature_t& s, const PairInfo& p, int64_t index) {
  const uint32_t f = p.flags;
  s.count += 1;
  s.bitwise_mismatch_count += (f & kBitwiseMismatch) ? 1 : 0;
  s.value_mismatch_count += (f & kValueMismatch) ? 1 : 0;
  s.golden_nan_count += (f & kGoldenNan) ? 1 : 0;
  s.golden_inf_count += (f & kGoldenInf) ? 1 : 0;
  s.candidate_nan_count += (f & kCandidateNan) ? 1 : 0;
  s.candidate_inf_count += (f & kCandidateInf) ? 1 : 0;
  s.new_nonfinite_count += (f & kNewNonfinite) ? 1 : 0;
  s.lost_nonfinite_count += (f & kLostNonfinite) ? 1 : 0;
  s.sign_flip_count += (f & kSignFlip) ? 1 : 0;
  s.dropped_count += (f & kDropped) ? 1 : 0;
  s.spurious_count += (f & kSpurious) ? 1 : 0;
  s.tolerance_fail_count += (f & kToleranceFail) ? 1 : 0;
  s.ulp_hist[p.ulp_bucket] += 1;
  s.rel_hist[p.rel_bucket] += 1;
  s.xor_popcount_hist[popcount64(p.xor_bits)] += 1;
  for (uint64_t x = p.xor_bits; x != 0; x &= x - 1) s.xor_bit_hist[ctz64(x)] += 1;
  bit_positions_add(s, p);
  if (f & kFinite) {
    s.finite_count += 1;
    if (beats(p.abs_err, index, s.max_abs_error, s.max_abs_error_index)) {
      s.max_abs_error = p.abs_err;
      s.max_abs_error_index = index;
      s.max_abs_error_golden = p.g;
      s.max_abs_error_candidate = p.c;
    }
    const double abs_g = abs_d(p.g);
    if (abs_g > s.max_abs_golden) s.max_abs_golden = abs_g;
    exact_sum_add(s.sum_error, p.err);
    exact_sum_add(s.sum_abs_error, p.abs_err);
    exact_sum_add(s.sum_sq_error, p.err * p.err);
    exact_sum_add(s.sum_sq_golden, p.g * p.g);
    exact_sum_add(s.sum_sq_candidate, p.c * p.c);
    exact_sum_add(s.sum_golden_candidate, p.g * p.c);
  }
  if (f & kRelDefined) {
    if (beats(p.rel, index, s.max_rel_error, s.max_rel_error_index)) {
      s.max_rel_error = p.rel;
      s.max_rel_error_index = index;
    }
  }
  if (f & kRatio) ratio_add(s, p.ratio);
}


// Merges the data fields (counts, extrema, sums, moments, histograms) of a
// partial signature into another. Header fields (dtypes, tolerances, flags)
// are the caller's: the library checks them before calling this; device
// kernels merge block partials of one analysis, which share them.
PEAT_HD void merge_signature_data(peat_signature_t& into, const peat_signature_t& from) {
  into.count += from.count;
  into.bitwise_mismatch_count += from.bitwise_mismatch_count;
  into.value_mismatch_count += from.value_mismatch_count;
  into.golden_nan_count += from.golden_nan_count;
  into.golden_inf_count += from.golden_inf_count;
  into.candidate_nan_count += from.candidate_nan_count;
  into.candidate_inf_count += from.candidate_inf_count;
  into.new_nonfinite_count += from.new_nonfinite_count;
  into.lost_nonfinite_count += from.lost_nonfinite_count;
  into.sign_flip_count += from.sign_flip_count;
  into.dropped_count += from.dropped_count;
  into.spurious_count += from.spurious_count;
  into.tolerance_fail_count += from.tolerance_fail_count;
  into.finite_count += from.finite_count;
  if (from.max_abs_error_index >= 0 &&
      beats(from.max_abs_error, from.max_abs_error_index, into.max_abs_error, into.max_abs_error_index)) {
    into.max_abs_error = from.max_abs_error;
    into.max_abs_error_index = from.max_abs_error_index;
    into.max_abs_error_golden = from.max_abs_error_golden;
    into.max_abs_error_candidate = from.max_abs_error_candidate;
  }
  if (from.max_rel_error_index >= 0 &&
      beats(from.max_rel_error, from.max_rel_error_index, into.max_rel_error, into.max_rel_error_index)) {
    into.max_rel_error = from.max_rel_error;
    into.max_rel_error_index = from.max_rel_error_index;
  }
  into.max_abs_golden = (from.max_abs_golden > into.max_abs_golden ? from.max_abs_golden : into.max_abs_golden);
  exact_sum_merge(into.sum_error, from.sum_error);
  exact_sum_merge(into.sum_abs_error, from.sum_abs_error);
  exact_sum_merge(into.sum_sq_error, from.sum_sq_error);
  exact_sum_merge(into.sum_sq_golden, from.sum_sq_golden);
  exact_sum_merge(into.sum_sq_candidate, from.sum_sq_candidate);
  exact_sum_merge(into.sum_golden_candidate, from.sum_golden_candidate);
  if (from.ratio_count > 0) {
    if (into.ratio_count == 0) {
      into.ratio_min = from.ratio_min;
      into.ratio_max = from.ratio_max;
    } else {
      if (less_total(from.ratio_min, into.ratio_min)) into.ratio_min = from.ratio_min;
      if (less_total(into.ratio_max, from.ratio_max)) into.ratio_max = from.ratio_max;
    }
    into.ratio_count += from.ratio_count;
    exact_sum_merge(into.ratio_dev_sum, from.ratio_dev_sum);
    exact_sum_merge(into.ratio_dev_sq_sum, from.ratio_dev_sq_sum);
  }
  for (int i = 0; i < PEAT_SIGNATURE_ULP_BUCKETS; ++i) into.ulp_hist[i] += from.ulp_hist[i];
  for (int i = 0; i < PEAT_SIGNATURE_REL_BUCKETS; ++i) into.rel_hist[i] += from.rel_hist[i];
  for (int i = 0; i < PEAT_SIGNATURE_XOR_BITS; ++i) into.xor_bit_hist[i] += from.xor_bit_hist[i];
  for (int i = 0; i < PEAT_SIGNATURE_POPCOUNT_BUCKETS; ++i) into.xor_popcount_hist[i] += from.xor_popcount_hist[i];
  for (int i = 0; i < PEAT_SIGNATURE_XOR_BITS; ++i) {
    into.xor_top_bit_hist[i] += from.xor_top_bit_hist[i];
    into.xor_top_bit_set_hist[i] += from.xor_top_bit_set_hist[i];
    into.candidate_low_bit_hist[i] += from.candidate_low_bit_hist[i];
  }
}

}  // namespace peat::hd
