// float_bits.h — bit-exact conversions and bit access for the float formats PEAT
// supports (f16, bf16, f32, f64), written once for host and device.
//
// Every numeric part reads elements through these functions: the analyzer widens
// golden and candidate to double, the injector flips bits in the storage word.
// Conversions to narrow formats round to nearest, ties to even, and keep NaN a
// NaN (quiet), as IEEE 754 and the hardware conversions do.
#pragma once

#include "backends/common/peat_hd.h"

#include <cstdint>
#include <cstring>

namespace peat::hd {

template <typename To, typename From>
PEAT_HD To bit_cast(const From& from) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast needs equal sizes");
  To to;
  std::memcpy(&to, &from, sizeof(To));
  return to;
}

// ---- f16 (IEEE binary16: 1 sign, 5 exponent, 10 mantissa bits) -----------

PEAT_HD float f16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  uint32_t bits;
  if (exp == 0x1Fu) {
    bits = sign | 0x7F800000u | (mant << 13);  // Inf or NaN (payload kept)
  } else if (exp != 0) {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);  // normal: rebias 15 -> 127
  } else if (mant == 0) {
    bits = sign;  // signed zero
  } else {
    // Subnormal: value = mant * 2^-24; normalise into an f32 normal.
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while ((mant & 0x400u) == 0);
    bits = sign | (static_cast<uint32_t>(112 - e) << 23) | ((mant & 0x3FFu) << 13);
  }
  return bit_cast<float>(bits);
}

PEAT_HD uint16_t float_to_f16(float f) {
  const uint32_t x = bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs = x & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) {  // Inf or NaN
    if (abs == 0x7F800000u) return sign | 0x7C00u;
    return static_cast<uint16_t>(sign | 0x7E00u | ((abs >> 13) & 0x3FFu));  // quiet NaN
  }
  if (abs >= 0x477FF000u) return sign | 0x7C00u;  // rounds to >= 65520 -> Inf
  if (abs >= 0x38800000u) {                       // normal in f16 (>= 2^-14)
    const uint32_t rounded = abs + 0xFFFu + ((abs >> 13) & 1u);
    return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
  }
  if (abs < 0x33000000u) return sign;  // below half the smallest subnormal (2^-25): zero
  // Subnormal f16: shift the full significand right, round to nearest even.
  const uint32_t exp = abs >> 23;
  const uint32_t mant = (abs & 0x7FFFFFu) | 0x800000u;
  const uint32_t shift = 126u - exp;  // 14 + (113 - exp) - ... gives the f16 subnormal position
  const uint32_t half = 1u << (shift - 1);
  const uint32_t rest = mant & ((1u << shift) - 1u);
  uint32_t q = mant >> shift;
  if (rest > half || (rest == half && (q & 1u))) ++q;
  return static_cast<uint16_t>(sign | q);
}

// ---- bf16 (1 sign, 8 exponent, 7 mantissa bits: the top half of an f32) ----

PEAT_HD float bf16_to_float(uint16_t b) { return bit_cast<float>(static_cast<uint32_t>(b) << 16); }

PEAT_HD uint16_t float_to_bf16(float f) {
  const uint32_t x = bit_cast<uint32_t>(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  const uint32_t rounded = x + 0x7FFFu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(rounded >> 16);
}

}  // namespace peat::hd
