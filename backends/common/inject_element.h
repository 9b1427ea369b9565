// inject_element.h — the per-element arithmetic of the injector's error models
// (bit flips, stuck-at bits, ULP steps, replacement values, region fills),
// written once for host and device. The CPU backend (lib/injector) calls these
// functions for every element; a GPU kernel calls the same ones.
//
// Elements are handled as their storage word (uint64_t, zero-extended for
// 16- and 32-bit dtypes) plus a storage code (precision.h: kStoreF16 ...).
// Randomness: the caller passes the four Philox words drawn for
// (seed, op, call, element); functions that need more draw further blocks with
// philox_random(seed, op, call, element | tag << 56), tags listed below.
#pragma once

#include "backends/common/peat_hd.h"
#include "backends/common/philox.h"
#include "backends/common/precision.h"

#include <cmath>
#include <cstdint>

namespace peat::hd {

// Tags in the top byte of the Philox element counter, so that the streams used
// for different purposes never overlap (element indices stay below 2^56).
enum : uint64_t {
  kTagElement = 0,    // the per-element draw (selection, value, bit choice)
  kTagSelect = 1,     // choosing `count` distinct elements
  kTagBits = 2,       // extra words for choosing k distinct bits (tag 2 + block)
  kTagPolicy = 0x40,  // scheduler: probability draws (tag 0x40 + policy index)
};

PEAT_HD uint64_t tagged(uint64_t element, uint64_t tag) { return (element & ((uint64_t{1} << 56) - 1)) | (tag << 56); }

// Bit layout of a storage dtype.
struct ElementLayout {
  int32_t store;       // kStoreF16 ...
  int32_t width;       // total bits: 16, 32, 64
  int32_t mant_bits;   // stored mantissa bits
  int32_t exp_bits;    // exponent bits
};

PEAT_HD ElementLayout layout_of(int32_t store) {
  switch (store) {
    case kStoreF16: return ElementLayout{kStoreF16, 16, 10, 5};
    case kStoreBF16: return ElementLayout{kStoreBF16, 16, 7, 8};
    case kStoreF32: return ElementLayout{kStoreF32, 32, 23, 8};
    default: return ElementLayout{kStoreF64, 64, 52, 11};
  }
}

PEAT_HD uint64_t width_mask(const ElementLayout& l) {
  return l.width == 64 ? ~uint64_t{0} : ((uint64_t{1} << l.width) - 1);
}

// Bit range [lo, lo + count) of a field (peat_bit_field_t: 0 any, 1 sign, 2 exponent, 3 mantissa).
PEAT_HD void field_range(const ElementLayout& l, int32_t field, int32_t& lo, int32_t& count) {
  switch (field) {
    case 1: lo = l.width - 1; count = 1; return;
    case 2: lo = l.mant_bits; count = l.exp_bits; return;
    case 3: lo = 0; count = l.mant_bits; return;
    default: lo = 0; count = l.width; return;
  }
}

PEAT_HD bool is_finite_bits(uint64_t bits, const ElementLayout& l) {
  const uint64_t exp_mask = ((uint64_t{1} << l.exp_bits) - 1) << l.mant_bits;
  return (bits & exp_mask) != exp_mask;
}

// A uniform integer in [0, n) from a uniform double in [0, 1).
PEAT_HD uint64_t uniform_index(double u, uint64_t n) {
  uint64_t i = static_cast<uint64_t>(u * static_cast<double>(n));
  return i >= n ? n - 1 : i;
}

// The mask of k bits to flip in one element, drawn at random in `field`:
// a burst of k consecutive bits at a random start when `adjacent`, otherwise
// k distinct bits (partial Fisher-Yates over the field's positions). `w` are
// the element's Philox words; further words come from blocks tagged kTagBits+j.
PEAT_HD uint64_t random_bit_mask(const ElementLayout& l, int32_t field, int32_t k, bool adjacent,
                                 const Philox4x32& w, uint64_t seed, uint32_t op, uint32_t call,
                                 uint64_t element) {
  int32_t lo = 0, count = 0;
  field_range(l, field, lo, count);
  if (k <= 0 || k > count) return 0;
  if (adjacent) {
    const uint64_t start = uniform_index(philox_uniform(w.v[2], w.v[3]), static_cast<uint64_t>(count - k + 1));
    const uint64_t run = k == 64 ? ~uint64_t{0} : ((uint64_t{1} << k) - 1);
    return run << (lo + static_cast<int32_t>(start));
  }
  int8_t positions[64];
  for (int32_t i = 0; i < count; ++i) positions[i] = static_cast<int8_t>(lo + i);
  uint64_t mask = 0;
  Philox4x32 block = w;
  int32_t used = 2;  // words 0 and 1 of the element draw are reserved for selection
  uint64_t next_tag = kTagBits;
  for (int32_t i = 0; i < k; ++i) {
    if (used == 4) {
      block = philox_random(seed, op, call, tagged(element, next_tag++));
      used = 0;
    }
    const uint32_t word = block.v[used++];
    const uint32_t j = static_cast<uint32_t>(i) +
                       static_cast<uint32_t>((static_cast<uint64_t>(word) * static_cast<uint32_t>(count - i)) >> 32);
    const int8_t t = positions[i];
    positions[i] = positions[j];
    positions[j] = t;
    mask |= uint64_t{1} << positions[i];
  }
  return mask;
}

// Mask of bits [bit, bit + k) (caller checked bit + k <= width).
PEAT_HD uint64_t fixed_bit_mask(int32_t bit, int32_t k) {
  const uint64_t run = k >= 64 ? ~uint64_t{0} : ((uint64_t{1} << k) - 1);
  return run << bit;
}

// Stuck-at: bit `bit` forced to `value` (0 or 1).
PEAT_HD uint64_t stuck_at(uint64_t bits, int32_t bit, int32_t value) {
  const uint64_t m = uint64_t{1} << bit;
  return value ? (bits | m) : (bits & ~m);
}

// Moves a finite element `delta` ULP along the ordered number line (through
// zero: +0 and -0 are the same point); clamps to the finite range; NaN and Inf
// are returned unchanged.
PEAT_HD uint64_t ulp_step(uint64_t bits, const ElementLayout& l, int64_t delta) {
  if (delta == 0 || !is_finite_bits(bits, l)) return bits;
  const uint64_t sign_bit = uint64_t{1} << (l.width - 1);
  const uint64_t magnitude = bits & ~sign_bit & width_mask(l);
  const int64_t max_magnitude =
      static_cast<int64_t>(((((uint64_t{1} << l.exp_bits) - 2)) << l.mant_bits) | ((uint64_t{1} << l.mant_bits) - 1));
  int64_t v = (bits & sign_bit) ? -static_cast<int64_t>(magnitude) : static_cast<int64_t>(magnitude);
  // Saturating add (|delta| is bounded by the caller, v by the width).
  v += delta;
  if (v > max_magnitude) v = max_magnitude;
  if (v < -max_magnitude) v = -max_magnitude;
  if (v == 0) return 0;  // +0
  return v < 0 ? (sign_bit | static_cast<uint64_t>(-v)) : static_cast<uint64_t>(v);
}

// ULP perturbation drawn from a distribution (peat_ulp_distribution_t:
// 0 uniform over {-k..-1, 1..k}, 1 fixed +-k, 2 round(N(0, k^2))).
PEAT_HD int64_t ulp_delta(int32_t distribution, int32_t k, const Philox4x32& w) {
  const double u = philox_uniform(w.v[2], w.v[3]);
  switch (distribution) {
    case 1: return (w.v[1] & 1u) ? k : -static_cast<int64_t>(k);
    case 2: {
      // Box-Muller with u1 in (0, 1].
      const double u1 = 1.0 - philox_uniform(w.v[1], w.v[0] ^ 0x9E3779B9u);
      const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u);
      double d = std::nearbyint(z * static_cast<double>(k));
      const double limit = 64.0 * static_cast<double>(k);
      if (d > limit) d = limit;
      if (d < -limit) d = -limit;
      return static_cast<int64_t>(d);
    }
    default: {
      const uint64_t m = uniform_index(u, 2 * static_cast<uint64_t>(k));
      return m < static_cast<uint64_t>(k) ? -static_cast<int64_t>(m + 1) : static_cast<int64_t>(m - k + 1);
    }
  }
}

// Canonical quiet NaN / infinities of a storage dtype.
PEAT_HD uint64_t quiet_nan_bits(const ElementLayout& l) {
  const uint64_t exp_mask = ((uint64_t{1} << l.exp_bits) - 1) << l.mant_bits;
  return exp_mask | (uint64_t{1} << (l.mant_bits - 1));
}
PEAT_HD uint64_t inf_bits(const ElementLayout& l, bool negative) {
  const uint64_t exp_mask = ((uint64_t{1} << l.exp_bits) - 1) << l.mant_bits;
  return exp_mask | (negative ? (uint64_t{1} << (l.width - 1)) : 0);
}

// Uniformly random storage word (garbage).
PEAT_HD uint64_t garbage_bits(const ElementLayout& l, const Philox4x32& w) {
  const uint64_t r = (static_cast<uint64_t>(w.v[3]) << 32) | w.v[2];
  return r & width_mask(l);
}

// Replacement value (peat_value_kind_t: 0 zero, 1 random, 2 NaN, 3 +Inf, 4 -Inf, 5 constant).
PEAT_HD uint64_t value_bits(const ElementLayout& l, int32_t value_kind, double constant, double range,
                            const Philox4x32& w) {
  switch (value_kind) {
    case 1: {
      const double u = philox_uniform(w.v[2], w.v[3]);
      return store_from_double((2.0 * u - 1.0) * range, l.store);
    }
    case 2: return quiet_nan_bits(l);
    case 3: return inf_bits(l, false);
    case 4: return inf_bits(l, true);
    case 5: return store_from_double(constant, l.store);
    default: return 0;
  }
}

// Whether element `element` is selected with probability p (element draw words 0, 1).
PEAT_HD bool bernoulli(double p, const Philox4x32& w) { return philox_uniform(w.v[0], w.v[1]) < p; }

// PRECISION: rounds the element to `fmt` and stores it back in its dtype.
PEAT_HD uint64_t precision_bits(uint64_t bits, const ElementLayout& l, const FloatFormat& fmt, int32_t rounding,
                                bool saturate) {
  const double x = load_as_double(bits, l.store);
  if (x != x) return bits;  // NaN stays exactly as it was
  return store_from_double(round_to_format(x, fmt, rounding, saturate), l.store);
}

// SCALE: alpha * x rounded to the dtype.
PEAT_HD uint64_t scale_bits(uint64_t bits, const ElementLayout& l, double alpha) {
  const double x = load_as_double(bits, l.store);
  if (x != x) return bits;
  return store_from_double(alpha * x, l.store);
}

}  // namespace peat::hd
