// Exact sums of the f32 signature fast path (simd_f32.cpp) in SIMD
// fixed-point windows.
//
// The fast path keeps its sums in another basis than the signature's: for a
// pair (g, c) with e = c - g exact (ordinary pairs, Sterbenz), it sums g*g
// over every pair, and e, e > 0, e*e, g*e, d = c/g - 1 and d*d over the
// differing pairs only (bitwise-equal pairs add zero to each). The
// signature's sums follow exactly, as integers at each flush:
//   sum e = E, sum |e| = 2 P - E (P: e > 0), sum e*e = EE,
//   sum g*g = GG, sum g*c = GG + GE, sum c*c = GG + 2 GE + EE.
// So a bitwise-equal pair costs one square, and a differing one no square of
// the golden or the candidate of its own.
//
// Each window has lane accumulators in fixed point, held in double lanes
// that stay exact because every partial sum is a multiple of their lowest
// bit below 2^53 times it: hi in units of 2^(base + 32), lo in units of
// 2^(base - kFracBits). A term x with v = x * 2^-base a multiple of
// 2^-kFracBits below 2^74 is split with one rounding: t = v + 1.5 * 2^84
// rounds v to a multiple r of 2^32 (|r| <= 2^74), and v - r (|v - r| <=
// 2^31, 42 bits above 2^-kFracBits) is exact. With at most 2^11 adds per lane
// between flushes, hi stays below 2^(85 - 32) units and lo below 2^(31 + 11 +
// kFracBits) = 2^53 units. The fraction bits let a window take terms 2^11
// smaller than its integers would (5.5 binades more of |g| for g*g, the
// common case of values near zero). Both parts come out of fused
// multiply-adds, and where there is no FMA, v = x * 2^-base is exact, so the
// unfused operations give the same. A vector whose lanes are known to fit
// (guards below, from the f32 exponents of g and e) is added without a
// check; any other goes lane by lane through the exact check, its misfits
// to the scalar exact accumulators. The windows are flushed after at most
// 2^11 adds per lane and at the end. Every path is exact, so the result does not depend on the order
// of the adds: the bases and the guards only decide speed.
//
// Included once per Highway target (toggle guard, as Highway's -inl headers).
#if defined(PEAT_ANALYZER_SIMD_F32_WINDOWS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef PEAT_ANALYZER_SIMD_F32_WINDOWS_INL_H_
#undef PEAT_ANALYZER_SIMD_F32_WINDOWS_INL_H_
#else
#define PEAT_ANALYZER_SIMD_F32_WINDOWS_INL_H_
#endif

#include <hwy/highway.h>

#include "lib/analyzer/exact_acc.hpp"
#include "lib/analyzer/simd_f32.hpp"
#include "backends/common/signature_element.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#if defined(__GNUC__) || defined(__clang__)
#  define PEAT_ALWAYS_INLINE __attribute__((always_inline))
#else
#  define PEAT_ALWAYS_INLINE
#endif

HWY_BEFORE_NAMESPACE();
namespace peat::impl::analyzer {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

constexpr int kWindowFlush = 2048;
// Bits below 2^base that a window's lo lanes hold (see above), and 2^kFracBits.
constexpr int kFracBits = 11;
constexpr double kFracScale = static_cast<double>(int64_t{1} << kFracBits);

// The windows (see above).
enum Window : int {
  kWinError = 0,    // e
  kWinErrorPos,     // e where e > 0 (same base as kWinError)
  kWinSqError,      // e*e
  kWinGoldenError,  // g*e
  kWinSqGolden,     // g*g, every pair
  kWinRatioDev,     // d = c/g - 1 (a multiple of 2^-53, |d| <= 1: fixed base)
  kWinRatioDevSq,   // d*d
  kWinCount
};

// The windows of one fast-path call; DD is a tag of double lanes.
template <class DD>
struct ExactWindows {
  using VD = hn::Vec<DD>;
  using MD = hn::Mask<DD>;
  VD hi[kWinCount], lo[kWinCount];
  int base[kWinCount];
  VD scale[kWinCount];
  bool used[kWinCount];
  int pending = 0;  // vectors (two adds per lane) since the last flush
  ExactAcc* acc = nullptr;
  // Guards. g*g fits when |g| is 0 or its biased exponent E_g lies in
  // [lo, lo + span) (as bits: (|g| - golden_lo_bits) < golden_span_bits).
  uint32_t golden_lo_bits = 0xFFFFFFFFu, golden_span_bits = 0;
  // e, e > 0, e*e and g*e of a pair fit when E_g >= err_golden_min,
  // E_e <= err_exp_max and E_g + E_e <= err_sum_max (biased exponents).
  int32_t err_golden_min = 1 << 20, err_exp_max = -1, err_sum_max = -1;
  double dsq_min = 0, dsq_max = 0;  // d*d fits when in [dsq_min, dsq_max)

  HWY_INLINE void init(DD dd, ExactAcc* a) {
    acc = a;
    for (int q = 0; q < kWinCount; ++q) {
      hi[q] = lo[q] = hn::Zero(dd);
      base[q] = 0;
      scale[q] = hn::Set(dd, 1.0);
      used[q] = false;
    }
    set_base(dd, kWinRatioDev, -53);
  }
  // The base for terms up to max_abs, with room for terms 2^8 above it.
  static int base_for(double max_abs) {
    int b = -100;
    if (max_abs > 0) {
      int e;
      uint64_t frac;
      hd::log2_split(max_abs, e, frac);
      b = e + 8 - 74;
    }
    return b < -900 ? -900 : (b > 900 ? 900 : b);
  }
  void set_base(DD dd, int q, int b) {
    base[q] = b;
    scale[q] = hn::Set(dd, hd::exact_pow2(-b));
    used[q] = true;
  }
  // The g*g window, placed by the largest g*g of a vector.
  void set_golden_base(DD dd, double max_sq) {
    const int b = base_for(max_sq);
    set_base(dd, kWinSqGolden, b);
    // g = M 2^(E-150) (M < 2^24) gives g*g = M^2 2^(2(E-150)): a multiple of
    // 2^(b - kFracBits) when E - 150 >= ceil((b - kFracBits)/2), below 2^(b +
    // 74) when E - 150 <= floor((26 + b)/2).
    const int lo_e = std::max(1, 150 + ((b - kFracBits + 1) >> 1)), hi_e = std::min(254, 150 + ((26 + b) >> 1));
    golden_lo_bits = lo_e <= hi_e ? static_cast<uint32_t>(lo_e) << 23 : 0xFFFFFFFFu;
    golden_span_bits = lo_e <= hi_e ? static_cast<uint32_t>(hi_e + 1 - lo_e) << 23 : 0;
  }
  // The windows of the differing pairs, placed by the largest |e|, e*e,
  // |g*e| and d*d of a vector.
  void set_error_bases(DD dd, double max_e, double max_sq, double max_ge, double max_dsq) {
    const int be = base_for(max_e), bs = base_for(max_sq), bg = base_for(max_ge), bd = base_for(max_dsq);
    set_base(dd, kWinError, be);
    set_base(dd, kWinErrorPos, be);
    set_base(dd, kWinSqError, bs);
    set_base(dd, kWinGoldenError, bg);
    set_base(dd, kWinRatioDevSq, bd);
    // With g = M 2^(eg-23) (eg = E_g - 127) and c within a factor 2 of g,
    // e = c - g is a multiple of 2^(eg-24) and |e| < 2^(ee+1) (ee = E_e -
    // 127). So v = x 2^-b is a multiple of 2^-F (F = kFracBits) below 2^74
    // when
    //   e:   eg - 24 >= be - F,       ee + 1 <= be + 74;
    //   e*e: 2 eg - 48 >= bs - F,     2 ee + 2 <= bs + 74;
    //   g*e: 2 eg - 47 >= bg - F,     eg + ee + 2 <= bg + 74.
    auto ceil_half = [](int x) { return (x + 1) >> 1; };  // arithmetic shift: floor((x + 1) / 2)
    const int g_min = std::max({be - kFracBits + 24, ceil_half(bs - kFracBits + 48), ceil_half(bg - kFracBits + 47)});
    const int e_max = std::min(be + 73, (bs + 72) >> 1);
    err_golden_min = g_min + 127;
    err_exp_max = e_max + 127;
    err_sum_max = bg + 72 + 254;
    // d*d = RN(d d) with d a multiple of 2^-53 is a multiple of 2^-106 and of
    // its own ulp 2^(E - 52): a multiple of 2^(bd - F) when bd - F <= -106 or
    // d*d >= 2^(bd - F + 52); below 2^74 when d*d < 2^(bd + 74).
    dsq_min = bd - kFracBits <= -106 ? 0.0 : hd::exact_pow2(bd - kFracBits + 52);
    dsq_max = hd::exact_pow2(bd + 74);
  }

  // Each lane holds below 2^53 of its units (hi: 2^32, lo: 2^-kFracBits, in
  // units of 2^base): the lanes of a window are summed as 64-bit integers
  // (below 2^56 for up to 8 lanes) and go into the signature's exact
  // accumulators as integers times a power of two (see the basis above).
  void flush(DD dd) {
    HWY_ALIGN double hs[hn::MaxLanes(dd)], ls[hn::MaxLanes(dd)];
    const int64_t L = static_cast<int64_t>(hn::Lanes(dd));
    static_assert(hn::MaxLanes(DD()) <= 256, "lane sums must stay below 2^62");
    int64_t h[kWinCount] = {}, l[kWinCount] = {};
    for (int q = 0; q < kWinCount; ++q) {
      if (!used[q]) continue;
      hn::Store(hi[q], dd, hs);
      hn::Store(lo[q], dd, ls);
      for (int64_t k = 0; k < L; ++k) {
        h[q] += static_cast<int64_t>(hs[k] * 0x1p-32);  // exact: multiples of 2^32 below 2^85
        l[q] += static_cast<int64_t>(ls[k] * kFracScale);  // exact: multiples of 2^-kFracBits below 2^42
      }
      hi[q] = lo[q] = hn::Zero(dd);
    }
    // The lowest bit of a window is 2^base; the accumulators count bit
    // offsets from 2^PEAT_EXACT_SUM_SCALE_EXPONENT (base >= -900).
    auto put = [&](int sum, int q, int64_t hv, int64_t lv) {
      const int off = base[q] - PEAT_EXACT_SUM_SCALE_EXPONENT;
      acc[sum].add_int(hv, off + 32);
      acc[sum].add_int(lv, off - kFracBits);
    };
    if (used[kWinError]) {
      put(kSumError, kWinError, h[kWinError], l[kWinError]);
      put(kSumAbsError, kWinError, 2 * h[kWinErrorPos] - h[kWinError], 2 * l[kWinErrorPos] - l[kWinError]);
    }
    if (used[kWinSqError]) {
      put(kSumSqError, kWinSqError, h[kWinSqError], l[kWinSqError]);
      put(kSumSqCandidate, kWinSqError, h[kWinSqError], l[kWinSqError]);
    }
    if (used[kWinGoldenError]) {
      put(kSumGoldenCandidate, kWinGoldenError, h[kWinGoldenError], l[kWinGoldenError]);
      put(kSumSqCandidate, kWinGoldenError, 2 * h[kWinGoldenError], 2 * l[kWinGoldenError]);
    }
    if (used[kWinSqGolden]) {
      for (int sum : {int{kSumSqGolden}, int{kSumSqCandidate}, int{kSumGoldenCandidate}})
        put(sum, kWinSqGolden, h[kWinSqGolden], l[kWinSqGolden]);
    }
    put(kSumRatioDev, kWinRatioDev, h[kWinRatioDev], l[kWinRatioDev]);
    if (used[kWinRatioDevSq]) put(kSumRatioDevSq, kWinRatioDevSq, h[kWinRatioDevSq], l[kWinRatioDevSq]);
    pending = 0;
  }
  // Counts one vector's adds; flushes before a lane can pass 2^53.
  HWY_INLINE void vector_done(DD dd) {
    if (++pending >= kWindowFlush / 2) flush(dd);  // two adds per vector (make_room may have filled it)
  }
  // Flushes first if k more vectors would pass the limit (callers that add
  // k vectors at once, then raise pending by k).
  HWY_INLINE void make_room(DD dd, int k) {
    if (pending + k > kWindowFlush / 2) flush(dd);
  }
  // One term of window q that does not fit: straight into the sums it
  // belongs to (the basis above, for one term).
  void scalar_term(int q, double x) {
    switch (q) {
      case kWinError:
        acc[kSumError].add(x);
        acc[kSumAbsError].add(std::fabs(x));
        break;
      case kWinSqError:
        acc[kSumSqError].add(x);
        acc[kSumSqCandidate].add(x);
        break;
      case kWinGoldenError:
        acc[kSumGoldenCandidate].add(x);
        acc[kSumSqCandidate].add(2 * x);  // exact: a product of two f32 values doubled
        break;
      case kWinSqGolden:
        acc[kSumSqGolden].add(x);
        acc[kSumSqCandidate].add(x);
        acc[kSumGoldenCandidate].add(x);
        break;
      case kWinRatioDev:
        acc[kSumRatioDev].add(x);
        break;
      default:
        acc[kSumRatioDevSq].add(x);
        break;
    }
  }
  // The lanes outside ok go to the scalar accumulators (those lanes only:
  // usually one of the vector's).
  void fallback(DD dd, int q, MD ok, VD x) {
    HWY_ALIGN double xs[hn::MaxLanes(dd)];
    hn::Store(x, dd, xs);
    uint8_t bits[(hn::MaxLanes(dd) + 7) / 8] = {};
    (void)hn::StoreMaskBits(dd, hn::Not(ok), bits);
    for (size_t k = 0; k < hn::Lanes(dd); ++k)
      if ((bits[k / 8] >> (k % 8)) & 1) scalar_term(q, xs[k]);
  }
  // v = x 2^-base[q] split into r (a multiple of 2^32) and v - r.
  PEAT_ALWAYS_INLINE inline void split(DD dd, int q, VD x, VD& r, VD& rest) const {
    const VD magic = hn::Set(dd, 0x1.8p84);
    r = hn::Sub(hn::MulAdd(x, scale[q], magic), magic);
    rest = hn::MulSub(x, scale[q], r);
  }
  // Lanes whose split is exact: v a multiple of 2^-kFracBits below 2^74.
  PEAT_ALWAYS_INLINE inline MD exact_lanes(DD dd, int q, VD x, VD rest) const {
    const VD units = hn::Mul(rest, hn::Set(dd, kFracScale));
    return hn::And(hn::Eq(hn::Trunc(units), units), hn::Lt(hn::Abs(hn::Mul(x, scale[q])), hn::Set(dd, 0x1p74)));
  }
  // The split of x into window q's two parts; kChecked: the lanes whose
  // split is not exact go to the scalar accumulators and give zero parts.
  template <bool kChecked>
  PEAT_ALWAYS_INLINE inline void split_fitting(DD dd, int q, VD x, VD& r, VD& rest) {
    split(dd, q, x, r, rest);
    if constexpr (kChecked) {
      const MD ok = exact_lanes(dd, q, x, rest);
      if (HWY_UNLIKELY(!hn::AllTrue(dd, ok))) fallback(dd, q, ok, x);
      r = hn::IfThenElseZero(ok, r);
      rest = hn::IfThenElseZero(ok, rest);
    }
  }
  // Inlined so that q is a constant at each call and the windows stay in
  // registers (out of line, they go through memory). Without kChecked, x is
  // known to fit.
  template <bool kChecked = false>
  PEAT_ALWAYS_INLINE inline void add(DD dd, int q, VD x) {
    VD r, rest;
    split_fitting<kChecked>(dd, q, x, r, rest);
    hi[q] = hn::Add(hi[q], r);
    lo[q] = hn::Add(lo[q], rest);
  }
  // e into kWinError, and into kWinErrorPos where e > 0 (one split).
  template <bool kChecked = false>
  PEAT_ALWAYS_INLINE inline void add_error(DD dd, VD x) {
    VD r, rest;
    split_fitting<kChecked>(dd, kWinError, x, r, rest);
    const auto pos = hn::Gt(x, hn::Zero(dd));
    hi[kWinError] = hn::Add(hi[kWinError], r);
    lo[kWinError] = hn::Add(lo[kWinError], rest);
    hi[kWinErrorPos] = hn::Add(hi[kWinErrorPos], hn::IfThenElseZero(pos, r));
    lo[kWinErrorPos] = hn::Add(lo[kWinErrorPos], hn::IfThenElseZero(pos, rest));
  }
  // The two halves of a vector of terms, without the check when a guard
  // says they fit (the usual case).
  PEAT_ALWAYS_INLINE inline void add_halves(DD dd, int q, VD x_lo, VD x_hi, bool fits) {
    if (HWY_LIKELY(fits)) {
      add(dd, q, x_lo);
      add(dd, q, x_hi);
    } else {
      add<true>(dd, q, x_lo);
      add<true>(dd, q, x_hi);
    }
  }
  PEAT_ALWAYS_INLINE inline void add_error_halves(DD dd, VD x_lo, VD x_hi, bool fits) {
    if (HWY_LIKELY(fits)) {
      add_error(dd, x_lo);
      add_error(dd, x_hi);
    } else {
      add_error<true>(dd, x_lo);
      add_error<true>(dd, x_hi);
    }
  }
};

}  // namespace HWY_NAMESPACE
}  // namespace peat::impl::analyzer
HWY_AFTER_NAMESPACE();

#endif  // toggle guard
