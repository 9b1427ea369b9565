// precision.h — rounding a value to a narrow floating-point format (bf16, fp16,
// tf32, fp8 E4M3 / E5M2) with round-to-nearest-even or truncation and the
// target's overflow rules, and storing doubles into the storage dtypes.
//
// Written once for host and device: the injector's PRECISION model, the CPU
// backend and (later) the GPU kernels call these same functions.
//
// Method: a finite double is S * 2^(e-52) with a 53-bit integer significand S.
// In the target format with p stored mantissa bits and minimum normal exponent
// emin, the spacing of representable values around |x| is 2^(max(e, emin) - p).
// Dropping `shift` low bits of S (shift = 52 - p, plus emin - e below the normal
// range) and rounding the integer that remains gives the result exactly; it is
// then compared with the format's largest finite value for overflow.
#pragma once

#include "backends/common/float_bits.h"
#include "backends/common/peat_hd.h"

#include <cstdint>

namespace peat::hd {

enum : int32_t { kRoundNearestEven = 0, kRoundTruncate = 1 };

// A binary floating-point format as far as rounding needs it.
struct FloatFormat {
  int32_t mant_bits;   // stored mantissa (fraction) bits
  int32_t min_exp;     // exponent of the smallest normal value
  int32_t max_exp;     // exponent of the largest finite binade
  double max_finite;   // largest finite value
  bool has_inf;        // false: overflow gives NaN (E4M3FN)
};

// 2^e for e in [-1022, 1023], exactly.
PEAT_HD double pow2(int32_t e) {
  return bit_cast<double>(static_cast<uint64_t>(e + 1023) << 52);
}

// The formats of peat_float_format_t, by code (0 bf16, 1 fp16, 2 tf32, 3 e4m3, 4 e5m2),
// plus the storage formats f16/bf16/f32 for rounding a double into them.
PEAT_HD FloatFormat format_bf16() { return FloatFormat{7, -126, 127, (2.0 - pow2(-7)) * pow2(127), true}; }
PEAT_HD FloatFormat format_fp16() { return FloatFormat{10, -14, 15, 65504.0, true}; }
PEAT_HD FloatFormat format_tf32() { return FloatFormat{10, -126, 127, (2.0 - pow2(-10)) * pow2(127), true}; }
PEAT_HD FloatFormat format_e4m3() { return FloatFormat{3, -6, 8, 448.0, false}; }
PEAT_HD FloatFormat format_e5m2() { return FloatFormat{2, -14, 15, 57344.0, true}; }
PEAT_HD FloatFormat format_fp32() { return FloatFormat{23, -126, 127, (2.0 - pow2(-23)) * pow2(127), true}; }

// Format by peat_float_format_t code; false for an unknown code.
PEAT_HD bool format_by_code(int32_t code, FloatFormat& out) {
  switch (code) {
    case 0: out = format_bf16(); return true;
    case 1: out = format_fp16(); return true;
    case 2: out = format_tf32(); return true;
    case 3: out = format_e4m3(); return true;
    case 4: out = format_e5m2(); return true;
    default: return false;
  }
}

// Rounds x to `fmt`. rounding: kRoundNearestEven or kRoundTruncate (toward
// zero). Overflow: nearest-even gives Inf (NaN for a format without Inf);
// truncation gives the largest finite value (IEEE round-toward-zero); with
// `saturate` both give the largest finite value and Inf inputs are clamped
// too. NaN stays a quiet NaN with its sign. The result is a double that holds
// the target value exactly.
PEAT_HD double round_to_format(double x, const FloatFormat& fmt, int32_t rounding, bool saturate) {
  const uint64_t b = bit_cast<uint64_t>(x);
  const bool negative = (b >> 63) != 0;
  const uint32_t biased = static_cast<uint32_t>((b >> 52) & 0x7FFu);
  const uint64_t fraction = b & ((uint64_t{1} << 52) - 1);
  const double nan = bit_cast<double>((b & (uint64_t{1} << 63)) | 0x7FF8000000000000ull);
  const double max_signed = negative ? -fmt.max_finite : fmt.max_finite;
  if (biased == 0x7FFu) {
    if (fraction != 0) return bit_cast<double>(b | (uint64_t{1} << 51));  // quiet NaN
    if (saturate) return max_signed;
    return fmt.has_inf ? x : nan;
  }
  // Double zeros and subnormals (< 2^-1022) are far below half the smallest
  // subnormal of every target: they become a signed zero.
  if (biased == 0) return negative ? -0.0 : 0.0;
  const int32_t e = static_cast<int32_t>(biased) - 1023;
  double magnitude;
  if (e > fmt.max_exp) {
    magnitude = fmt.max_finite * 4.0;  // certainly beyond the range: handled below
  } else {
    const uint64_t significand = fraction | (uint64_t{1} << 52);
    int32_t shift = 52 - fmt.mant_bits;
    if (e < fmt.min_exp) shift += fmt.min_exp - e;
    uint64_t kept = 0;
    if (shift < 64) {
      kept = significand >> shift;
      if (rounding == kRoundNearestEven && shift > 0) {
        const uint64_t rest = significand & ((uint64_t{1} << shift) - 1);
        const uint64_t half = uint64_t{1} << (shift - 1);
        if (rest > half || (rest == half && (kept & 1u) != 0)) ++kept;
      }
    }  // shift >= 64: |x| < 2^-11 of the spacing: rounds (or truncates) to zero
    const int32_t quantum_exp = (e < fmt.min_exp ? fmt.min_exp : e) - fmt.mant_bits;
    magnitude = static_cast<double>(kept) * pow2(quantum_exp);
  }
  if (magnitude > fmt.max_finite) {
    if (saturate || rounding == kRoundTruncate) return max_signed;
    return fmt.has_inf ? bit_cast<double>((b & (uint64_t{1} << 63)) | 0x7FF0000000000000ull) : nan;
  }
  return negative ? -magnitude : magnitude;
}

// ---- storage dtypes -------------------------------------------------------

// Storage dtype codes used by the per-element functions (backends/common).
enum : int32_t { kStoreF16 = 0, kStoreBF16 = 1, kStoreF32 = 2, kStoreF64 = 3 };

// Widens a storage word to double (exact).
PEAT_HD double load_as_double(uint64_t bits, int32_t store) {
  switch (store) {
    case kStoreF16: return static_cast<double>(f16_to_float(static_cast<uint16_t>(bits)));
    case kStoreBF16: return static_cast<double>(bf16_to_float(static_cast<uint16_t>(bits)));
    case kStoreF32: return static_cast<double>(bit_cast<float>(static_cast<uint32_t>(bits)));
    default: return bit_cast<double>(bits);
  }
}

// Rounds a double to the storage dtype (nearest even; beyond its range: Inf)
// and returns the storage word. One rounding step, no double rounding.
PEAT_HD uint64_t store_from_double(double x, int32_t store) {
  switch (store) {
    case kStoreF16: {
      const double r = round_to_format(x, format_fp16(), kRoundNearestEven, false);
      return float_to_f16(static_cast<float>(r));  // exact: r is an f16 value
    }
    case kStoreBF16: {
      const double r = round_to_format(x, format_bf16(), kRoundNearestEven, false);
      return float_to_bf16(static_cast<float>(r));
    }
    case kStoreF32: {
      // Round first so that the narrowing cast is exact (out-of-range casts are UB).
      const double r = round_to_format(x, format_fp32(), kRoundNearestEven, false);
      return bit_cast<uint32_t>(static_cast<float>(r));
    }
    default: return bit_cast<uint64_t>(x);
  }
}

}  // namespace peat::hd
