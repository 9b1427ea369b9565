// exact_sum.h — exact, order-independent sums of doubles (a Kulisch-style
// fixed-point superaccumulator), written once for host and device.
//
// peat_exact_sum_t (peat/analyzer.h) holds a 2176-bit two's-complement
// integer in 68 little-endian 32-bit digits; the sum is that integer times
// 2^-1088. Every finite double (subnormals included: its lowest bit is at
// 2^-1074 or above) is a whole multiple of 2^-1088 below 2^1024, so adding it
// is exact, and 2^64 of them cannot overflow the top digit. The representation
// of a value is unique, so any two sums of the same terms, added and merged in
// any order and grouping, are byte-identical. Non-finite terms are kept as
// flags (the sum is then NaN or +-Inf); the digits hold the finite terms.
//
// Only <cstdint>-level code: this header is compiled by nvcc and hipcc too.
#pragma once

#include "backends/common/float_bits.h"
#include "backends/common/peat_hd.h"

#include <peat/analyzer.h>

#include <cstdint>

namespace peat::hd {

constexpr int kExactDigits = PEAT_EXACT_SUM_DIGITS;
// Bit offset (from 2^-1088) of the lowest bit of a double with biased
// exponent field `biased` (1 for subnormals): biased - 1075 + 1088.
constexpr int kExactOffsetBias = 13;

// Splits a finite non-zero double into its integer mantissa (< 2^53), the bit
// offset of the mantissa's lowest bit (>= 14) and its sign. Returns false for
// zero; sets `nonfinite` to the PEAT_EXACT_SUM_* flag for NaN and +-Inf.
PEAT_HD bool exact_split(double x, uint64_t& mantissa, int& offset, bool& negative, uint32_t& nonfinite) {
  const uint64_t bits = bit_cast<uint64_t>(x);
  const int biased = static_cast<int>((bits >> 52) & 0x7FF);
  uint64_t m = bits & ((uint64_t{1} << 52) - 1);
  negative = (bits >> 63) != 0;
  nonfinite = 0;
  if (biased == 0x7FF) {
    nonfinite = m != 0 ? PEAT_EXACT_SUM_NAN : (negative ? PEAT_EXACT_SUM_NEG_INF : PEAT_EXACT_SUM_POS_INF);
    return false;
  }
  if (biased != 0) {
    m |= uint64_t{1} << 52;
  } else if (m == 0) {
    return false;
  }
  mantissa = m;
  offset = (biased != 0 ? biased : 1) + kExactOffsetBias;
  return true;
}

// digits += (negative ? -1 : 1) * mantissa * 2^offset (mod 2^2176), with the
// carry or borrow running only as far as it has to.
PEAT_HD void exact_digits_add(uint32_t* digits, int offset, uint64_t mantissa, bool negative) {
  const int idx = offset >> 5, sh = offset & 31;
  const uint64_t lo = mantissa << sh;
  uint64_t piece[3];
  piece[0] = lo & 0xFFFFFFFFu;
  piece[1] = lo >> 32;
  piece[2] = sh != 0 ? (mantissa >> (64 - sh)) : 0;
  uint64_t carry = 0;
  for (int i = idx, k = 0; i < kExactDigits; ++i, ++k) {
    const uint64_t p = k < 3 ? piece[k] : 0;
    if (k >= 3 && carry == 0) break;
    if (!negative) {
      const uint64_t t = static_cast<uint64_t>(digits[i]) + p + carry;
      digits[i] = static_cast<uint32_t>(t);
      carry = t >> 32;
    } else {
      const uint64_t t = static_cast<uint64_t>(digits[i]) - p - carry;  // wraps when negative
      digits[i] = static_cast<uint32_t>(t);
      carry = t >> 63;  // borrow
    }
  }
}

// s += x, exactly.
PEAT_HD void exact_sum_add(peat_exact_sum_t& s, double x) {
  uint64_t m;
  int offset;
  bool negative;
  uint32_t nonfinite;
  if (exact_split(x, m, offset, negative, nonfinite)) {
    exact_digits_add(s.digits, offset, m, negative);
  } else {
    s.nonfinite |= nonfinite;
  }
}

// into += from, exactly (associative and commutative: integer addition).
PEAT_HD void exact_sum_merge(peat_exact_sum_t& into, const peat_exact_sum_t& from) {
  uint64_t carry = 0;
  for (int i = 0; i < kExactDigits; ++i) {
    const uint64_t t = static_cast<uint64_t>(into.digits[i]) + from.digits[i] + carry;
    into.digits[i] = static_cast<uint32_t>(t);
    carry = t >> 32;
  }
  into.nonfinite |= from.nonfinite;
}

// 2^k as a double, k in [-1074, 1023].
PEAT_HD double exact_pow2(int k) {
  if (k >= -1022) return bit_cast<double>(static_cast<uint64_t>(k + 1023) << 52);
  return bit_cast<double>(uint64_t{1} << (k + 1074));
}

PEAT_HD int exact_clz32(uint32_t x) {  // x != 0
#if defined(__CUDA_ARCH__)
  return __clz(static_cast<int>(x));
#else
  return __builtin_clz(x);
#endif
}

// The sum rounded to the nearest double (ties to even): NaN when a NaN was
// added or both +Inf and -Inf were; +-Inf when one of them was, or when the
// exact sum is beyond the double range.
PEAT_HD double exact_sum_value(const peat_exact_sum_t& s) {
  const uint32_t nf = s.nonfinite;
  if ((nf & PEAT_EXACT_SUM_NAN) || ((nf & PEAT_EXACT_SUM_POS_INF) && (nf & PEAT_EXACT_SUM_NEG_INF)))
    return bit_cast<double>(uint64_t{0x7FF8000000000000ull});
  if (nf & PEAT_EXACT_SUM_POS_INF) return bit_cast<double>(uint64_t{0x7FF0000000000000ull});
  if (nf & PEAT_EXACT_SUM_NEG_INF) return bit_cast<double>(uint64_t{0xFFF0000000000000ull});
  // Magnitude of the two's-complement integer.
  const bool negative = (s.digits[kExactDigits - 1] >> 31) != 0;
  uint32_t mag[kExactDigits];
  uint64_t carry = 1;
  for (int i = 0; i < kExactDigits; ++i) {
    if (negative) {
      const uint64_t t = static_cast<uint64_t>(~s.digits[i]) + carry;
      mag[i] = static_cast<uint32_t>(t);
      carry = t >> 32;
    } else {
      mag[i] = s.digits[i];
    }
  }
  int top = kExactDigits - 1;
  while (top >= 0 && mag[top] == 0) --top;
  if (top < 0) return 0.0;
  const int t = 32 * top + (31 - exact_clz32(mag[top]));  // offset of the highest set bit
  const int p = t - 52 > 14 ? t - 52 : 14;                 // lowest kept bit (2^-1074 at the bottom)
  auto bit = [&](int pos) -> uint64_t { return (mag[pos >> 5] >> (pos & 31)) & 1u; };
  uint64_t m = 0;
  for (int pos = t; pos >= p; --pos) m = (m << 1) | bit(pos);
  const uint64_t half = bit(p - 1);
  bool sticky = false;
  const int below = p - 1;  // bits [0, below) are the sticky bits
  for (int i = 0; i < (below >> 5) && !sticky; ++i) sticky = mag[i] != 0;
  if (!sticky && (below & 31) != 0) sticky = (mag[below >> 5] & ((uint32_t{1} << (below & 31)) - 1)) != 0;
  if (half && (sticky || (m & 1))) m += 1;
  const int k = p - 1088;
  if (k > 1023) return negative ? bit_cast<double>(uint64_t{0xFFF0000000000000ull})
                                : bit_cast<double>(uint64_t{0x7FF0000000000000ull});
  const double v = static_cast<double>(m) * exact_pow2(k);  // exact, or overflows to Inf
  return negative ? -v : v;
}

// The sum as an unevaluated pair hi + lo: hi = the rounded sum, lo = the
// rounded remainder (sum - hi). For readers that combine sums in
// double-double arithmetic. Non-finite sums give (value, 0).
PEAT_HD void exact_sum_value2(const peat_exact_sum_t& s, double& hi, double& lo) {
  hi = exact_sum_value(s);
  lo = 0;
  if (hi - hi != 0) return;  // Inf or NaN
  peat_exact_sum_t rest = s;
  exact_sum_add(rest, -hi);
  lo = exact_sum_value(rest);
}

}  // namespace peat::hd
