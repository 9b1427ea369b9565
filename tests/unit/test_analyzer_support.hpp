// Shared helpers of the analyzer tests: tensors over std::vector storage, and a
// plainly written reference signature (long double sums, per-format decoding
// written from the IEEE definitions, nearest-value search for f16/bf16
// rounding) that the library's result is compared with.
#pragma once

#include <peat/analyzer.h>

#include <gmpxx.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <vector>

namespace analyzer_test {

__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;

enum class Fmt { F16, BF16, F32, F64 };

inline DLDataType dtype_of(Fmt f) {
  switch (f) {
    case Fmt::F16: return DLDataType{kDLFloat, 16, 1};
    case Fmt::BF16: return DLDataType{kDLBfloat, 16, 1};
    case Fmt::F32: return DLDataType{kDLFloat, 32, 1};
    case Fmt::F64: return DLDataType{kDLFloat, 64, 1};
  }
  return {};
}
inline int width_of(Fmt f) { return f == Fmt::F64 ? 64 : f == Fmt::F32 ? 32 : 16; }

// Decodes a storage word from the IEEE field definitions.
inline double decode(Fmt f, uint64_t w) {
  if (f == Fmt::F64) {
    double d;
    std::memcpy(&d, &w, 8);
    return d;
  }
  if (f == Fmt::F32) {
    const auto u = static_cast<uint32_t>(w);
    float x;
    std::memcpy(&x, &u, 4);
    return x;
  }
  const int exp_bits = f == Fmt::F16 ? 5 : 8, man_bits = f == Fmt::F16 ? 10 : 7;
  const int bias = (1 << (exp_bits - 1)) - 1;
  const uint64_t sign = (w >> 15) & 1, e = (w >> man_bits) & ((1u << exp_bits) - 1), m = w & ((1u << man_bits) - 1);
  double v;
  if (e == (1u << exp_bits) - 1)
    v = m ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else if (e == 0)
    v = std::ldexp(static_cast<double>(m), 1 - bias - man_bits);
  else
    v = std::ldexp(1.0 + std::ldexp(static_cast<double>(m), -man_bits), static_cast<int>(e) - bias);
  return sign ? -v : v;
}

// Rounds a double to a format's word: nearest representable, ties to the even
// word, overflow beyond half an ulp past the max to Inf (searched, not computed).
inline uint64_t encode(Fmt f, double d) {
  if (f == Fmt::F64) {
    uint64_t w;
    std::memcpy(&w, &d, 8);
    return w;
  }
  if (f == Fmt::F32) {
    const float x = static_cast<float>(d);
    uint32_t w;
    std::memcpy(&w, &x, 4);
    return w;
  }
  // All non-negative finite words, ascending by value.
  static std::map<int, std::vector<std::pair<double, uint64_t>>> tables;
  auto& table = tables[static_cast<int>(f)];
  if (table.empty()) {
    for (uint64_t w = 0; w < 0x8000; ++w) {
      const double v = decode(f, w);
      if (std::isfinite(v)) table.emplace_back(v, w);
    }
  }
  const uint64_t sign = std::signbit(d) ? 0x8000 : 0;
  if (std::isnan(d)) return f == Fmt::F16 ? 0x7E00 : 0x7FC0;
  const double a = std::fabs(d);
  const auto& [max_v, max_w] = table.back();
  const double max_ulp = max_v - table[table.size() - 2].first;
  if (a >= max_v + max_ulp / 2) return sign | (max_w + 1);  // Inf
  auto it = std::lower_bound(table.begin(), table.end(), std::make_pair(a, uint64_t{0}));
  if (it == table.end()) return sign | max_w;
  if (it->first == a) return sign | it->second;
  const auto below = it - 1;
  const double dlo = a - below->first, dhi = it->first - a;
  if (dlo < dhi) return sign | below->second;
  if (dhi < dlo) return sign | it->second;
  return sign | ((below->second & 1) == 0 ? below->second : it->second);
}

// An exact reference sum of doubles: GMP rationals (every double is one
// exactly), with the non-finite terms as flags.
struct ExactRef {
  mpq_class sum = 0;
  bool pinf = false, ninf = false, nan = false;
  void add(double x) {
    if (std::isnan(x)) {
      nan = true;
    } else if (std::isinf(x)) {
      (x > 0 ? pinf : ninf) = true;
    } else {
      sum += mpq_class(x);
    }
  }
};

// The exact rational value of an exact sum's digits (two's complement times
// 2^PEAT_EXACT_SUM_SCALE_EXPONENT), read from the header's definition.
inline mpq_class exact_value_of(const peat_exact_sum_t& s) {
  mpz_class n = 0;
  for (int i = PEAT_EXACT_SUM_DIGITS - 1; i >= 0; --i) n = n * 4294967296u + s.digits[i];
  if (s.digits[PEAT_EXACT_SUM_DIGITS - 1] >> 31) n -= mpz_class(1) << (32 * PEAT_EXACT_SUM_DIGITS);
  mpz_class den = mpz_class(1) << -PEAT_EXACT_SUM_SCALE_EXPONENT;
  mpq_class q(n, den);
  q.canonicalize();
  return q;
}

// Whether v is the double nearest to the rational q (ties to even), or the
// right infinity when |q| rounds beyond the largest double.
inline bool is_rounded_nearest(double v, const mpq_class& q) {
  const double big = std::numeric_limits<double>::max();
  const mpq_class limit = mpq_class(big) + mpq_class(std::ldexp(1.0, 970));  // max + half an ulp
  if (std::isinf(v)) return v > 0 ? q >= limit : q <= -limit;
  if (abs(q) >= limit) return false;
  const mpq_class dv = abs(q - mpq_class(v));
  for (double w : {std::nextafter(v, -INFINITY), std::nextafter(v, INFINITY)}) {
    if (std::isinf(w)) continue;
    const mpq_class dw = abs(q - mpq_class(w));
    if (dw < dv) return false;
    if (dw == dv) {  // tie: v must have an even last bit
      uint64_t bits;
      std::memcpy(&bits, &v, 8);
      if (bits & 1) return false;
    }
  }
  return true;
}

struct Ref {
  uint64_t count = 0, bitwise = 0, value = 0, gnan = 0, ginf = 0, cnan = 0, cinf = 0, newnf = 0, lostnf = 0;
  uint64_t signflip = 0, dropped = 0, spurious = 0, tolfail = 0, finite = 0;
  double max_abs = 0, max_abs_g = 0, max_abs_c = 0, max_rel = 0, max_abs_golden = 0;
  int64_t max_abs_idx = -1, max_rel_idx = -1;
  long double s_e = 0, s_abs = 0, s_e2 = 0, s_g2 = 0, s_c2 = 0, s_gc = 0;
  // magnitude of the terms, for tolerances
  long double m_e = 0, m_gc = 0;
  uint64_t ratio_n = 0;
  long double ratio_sum = 0, ratio_sq = 0;
  double ratio_min = 0, ratio_max = 0;
  // Exact sums of the per-pair terms as the header defines them (each term
  // rounded once in double): e, |e|, e*e, g*g, c*c, g*c, d = c/g - 1, d*d.
  ExactRef x_e, x_abs, x_e2, x_g2, x_c2, x_gc, x_d, x_d2;
  uint64_t ulp[PEAT_SIGNATURE_ULP_BUCKETS] = {}, rel[PEAT_SIGNATURE_REL_BUCKETS] = {};
  uint64_t xbit[PEAT_SIGNATURE_XOR_BITS] = {}, xpop[PEAT_SIGNATURE_POPCOUNT_BUCKETS] = {};
  uint64_t xtop[PEAT_SIGNATURE_XOR_BITS] = {}, xtop_set[PEAT_SIGNATURE_XOR_BITS] = {};
  uint64_t clow[PEAT_SIGNATURE_XOR_BITS] = {};  // the candidate's lowest set bit, sign cleared
};

inline int64_t position(Fmt f, uint64_t w) {
  const int width = width_of(f);
  const uint64_t sign = uint64_t{1} << (width - 1);
  const auto mag = static_cast<int64_t>(w & (sign - 1));
  return (w & sign) ? -mag : mag;
}

// Reference signature of golden words g and candidate words c (already in
// the golden format), element index = base + i.
inline Ref reference(Fmt f, const std::vector<uint64_t>& g, const std::vector<uint64_t>& c, double rtol, double atol,
                     double ratio_min_abs, int64_t base = 0) {
  Ref r;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const int64_t index = base + static_cast<int64_t>(i);
    const double gv = decode(f, g[i]), cv = decode(f, c[i]);
    const bool gn = std::isnan(gv), cn = std::isnan(cv), gi = std::isinf(gv), ci = std::isinf(cv);
    const bool gf = !gn && !gi, cf = !cn && !ci;
    r.count++;
    const uint64_t x = g[i] ^ c[i];
    if (x) r.bitwise++;
    if (!(gv == cv) && !(gn && cn)) r.value++;
    r.gnan += gn;
    r.ginf += gi;
    r.cnan += cn;
    r.cinf += ci;
    if (gf && !cf) r.newnf++;
    if (!gf && cf) r.lostnf++;
    if (!gn && !cn && gv != 0 && cv != 0 && (std::signbit(gv) != std::signbit(cv))) r.signflip++;
    if (cv == 0 && gv != 0 && !gn) r.dropped++;
    if (gv == 0 && cv != 0 && !cn) r.spurious++;
    int pop = 0;
    for (int b = 0; b < 64; ++b)
      if ((x >> b) & 1) {
        r.xbit[b]++;
        pop++;
      }
    r.xpop[pop]++;
    if (x) {  // the highest differing bit, and whether the candidate has it
      int top = 63;
      while (((x >> top) & 1) == 0) --top;
      r.xtop[top]++;
      r.xtop_set[top] += (c[i] >> top) & 1;
      const uint64_t mag = c[i] & ((uint64_t{1} << (width_of(f) - 1)) - 1);
      if (mag != 0) {
        int low = 0;
        while (((mag >> low) & 1) == 0) ++low;
        r.clow[low]++;
      }
    }
    if (gn || cn) {
      r.ulp[PEAT_SIGNATURE_ULP_NAN_BUCKET]++;
    } else {
      const int64_t pg = position(f, g[i]), pc = position(f, c[i]);
      const u128 d = pg > pc ? static_cast<u128>(static_cast<i128>(pg) - pc) : static_cast<u128>(static_cast<i128>(pc) - pg);
      int bucket = 0;
      while (bucket < 64 && (d >> bucket) != 0) ++bucket;  // d < 2^bucket
      r.ulp[bucket]++;
    }
    bool tol_fail;
    if (gf && cf) {
      const double e = cv - gv;  // defined in double
      tol_fail = std::fabs(e) > atol + rtol * std::fabs(gv);
      r.finite++;
      const double ae = std::fabs(e);
      if (r.max_abs_idx < 0 || ae > r.max_abs) {
        r.max_abs = ae;
        r.max_abs_idx = index;
        r.max_abs_g = gv;
        r.max_abs_c = cv;
      }
      r.max_abs_golden = std::max(r.max_abs_golden, std::fabs(gv));
      r.s_e += e;
      r.s_abs += ae;
      r.s_e2 += static_cast<long double>(e) * e;
      r.s_g2 += static_cast<long double>(gv) * gv;
      r.s_c2 += static_cast<long double>(cv) * cv;
      r.s_gc += static_cast<long double>(gv) * cv;
      r.x_e.add(e);
      r.x_abs.add(ae);
      r.x_e2.add(e * e);
      r.x_g2.add(gv * gv);
      r.x_c2.add(cv * cv);
      r.x_gc.add(gv * cv);
      r.m_e += ae;
      r.m_gc += std::fabs(static_cast<long double>(gv) * cv);
      if (ae == 0) {
        r.rel[0]++;
      } else if (gv == 0) {
        r.rel[PEAT_SIGNATURE_REL_UNDEFINED_BUCKET]++;
      } else if (std::isinf(ae)) {
        r.rel[PEAT_SIGNATURE_REL_LARGE_BUCKET]++;
      } else {
        const long double q = static_cast<long double>(ae) / std::fabs(static_cast<long double>(gv));
        int e2;
        std::frexp(q, &e2);
        const int k = e2 - 1;
        if (k < -64)
          r.rel[1]++;
        else if (k >= 0)
          r.rel[PEAT_SIGNATURE_REL_LARGE_BUCKET]++;
        else
          r.rel[2 + k + 64]++;
      }
      if (gv != 0) {
        const double rel = ae / std::fabs(gv);
        if (r.max_rel_idx < 0 || rel > r.max_rel) {
          r.max_rel = rel;
          r.max_rel_idx = index;
        }
      }
      if (gv != 0 && std::fabs(gv) >= ratio_min_abs) {
        const double q = cv / gv;
        // Extrema in the total order where -0 < +0.
        const auto below = [](double a, double b) { return a < b || (a == b && std::signbit(a) && !std::signbit(b)); };
        if (r.ratio_n == 0 || below(q, r.ratio_min)) r.ratio_min = q;
        if (r.ratio_n == 0 || below(r.ratio_max, q)) r.ratio_max = q;
        const double d = q - 1.0;
        r.x_d.add(d);
        r.x_d2.add(d * d);
        r.ratio_n++;
        r.ratio_sum += q;
        r.ratio_sq += static_cast<long double>(q) * q;
      }
    } else {
      r.rel[PEAT_SIGNATURE_REL_UNDEFINED_BUCKET]++;
      tol_fail = !((gn && cn) || (!gn && !cn && gv == cv));
    }
    r.tolfail += tol_fail;
  }
  return r;
}

}  // namespace analyzer_test
