// A chunk-local exact accumulator for the CPU hot loop: the same fixed-point
// value as peat_exact_sum_t (backends/common/exact_sum.h), but in carry-save
// form: 68 signed 64-bit limbs, limb i worth 2^(32 i - 1088), each add
// changing at most three limbs by less than 2^32 and never propagating a
// carry. The carries are resolved once, when the accumulator is flushed into a
// signature's canonical exact sum. Exact by construction, so the flushed
// value does not depend on the order of the adds.
#pragma once

#include "backends/common/exact_sum.h"

#include <cstdint>
#include <cstring>

namespace peat::impl::analyzer {

struct ExactAcc {
  int64_t limb[hd::kExactDigits];
  uint32_t nonfinite = 0;
  uint32_t adds = 0;  // adds since the last normalisation (each moves a limb by < 2^32)

  ExactAcc() { std::memset(limb, 0, sizeof(limb)); }

  // Adds (negative ? -u : u) * 2^(offset - 1088), u < 2^64, offset >= 0.
  void add_magnitude(uint64_t u, int offset, bool negative) {
    const int idx = offset >> 5, sh = offset & 31;
    const uint64_t lo = u << sh;
    const int64_t p0 = static_cast<int64_t>(lo & 0xFFFFFFFFu), p1 = static_cast<int64_t>(lo >> 32);
    const int64_t p2 = sh != 0 ? static_cast<int64_t>(u >> (64 - sh)) : 0;
    if (negative) {
      limb[idx] -= p0;
      limb[idx + 1] -= p1;
      if (idx + 2 < hd::kExactDigits) limb[idx + 2] -= p2;
    } else {
      limb[idx] += p0;
      limb[idx + 1] += p1;
      if (idx + 2 < hd::kExactDigits) limb[idx + 2] += p2;
    }
    if (++adds >= (1u << 30)) normalise();
  }

  // Adds a double exactly (non-finite values set flags).
  void add(double x) {
    uint64_t m;
    int offset;
    bool negative;
    uint32_t nf;
    if (hd::exact_split(x, m, offset, negative, nf)) {
      add_magnitude(m, offset, negative);
    } else {
      nonfinite |= nf;
    }
  }

  // Adds a signed integer v times 2^(offset - 1088).
  void add_int(int64_t v, int offset) {
    if (v == 0) return;
    const bool negative = v < 0;
    const uint64_t u = negative ? (~static_cast<uint64_t>(v) + 1) : static_cast<uint64_t>(v);
    add_magnitude(u, offset, negative);
  }

  // Moves the carries up so that every limb but the top one is in [0, 2^32).
  void normalise() {
    for (int i = 0; i + 1 < hd::kExactDigits; ++i) {
      const int64_t carry = limb[i] >> 32;  // arithmetic shift: floor division
      limb[i] -= carry * (int64_t{1} << 32);
      limb[i + 1] += carry;
    }
    adds = 0;
  }

  // sum += this accumulator (exactly), then clears it.
  void flush_into(peat_exact_sum_t& sum) {
    int64_t carry = 0;
    for (int i = 0; i < hd::kExactDigits; ++i) {
      const int64_t t = limb[i] + carry + static_cast<int64_t>(sum.digits[i]);
      sum.digits[i] = static_cast<uint32_t>(static_cast<uint64_t>(t));
      carry = t >> 32;
      limb[i] = 0;
    }
    sum.nonfinite |= nonfinite;
    nonfinite = 0;
    adds = 0;
  }
};

}  // namespace peat::impl::analyzer
