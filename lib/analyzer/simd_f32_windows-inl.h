// Exact sums of the f32 signature fast path (simd_f32.cpp) in SIMD
// fixed-point windows.
//
// Each sum q has a window of lane accumulators in fixed point with lowest
// bit 2^base[q], held in double lanes that stay exact because every partial
// sum is an integer below 2^53 (in units of 2^base). A term x with v = x *
// 2^-base goes in as two integer parts, high = trunc(v / 2^32) below 2^42 and
// low = v - high * 2^32 below 2^32, when v is an integer below 2^74; d = c/g
// - 1 (a multiple of 2^-53) goes in as one part when below 2^42. Any other
// term goes to the scalar exact accumulator. The windows are flushed into the
// exact accumulators after at most 2^11 adds per lane and at the end. Every
// path is exact, so the result does not depend on the order of the adds: the
// bases only decide speed.
//
// Bitwise-equal vectors add only g*g, into one more window kSumEqual: at a
// flush it goes to the accumulator kAccEqualSquares, which the caller adds to
// the sums of g*g, c*c and g*c alike (c == g); their error terms are all zero.
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
constexpr int kSumEqual = kSumCount, kWindows = kSumCount + 1;

// The windows of one fast-path call (see above); DD is a tag of double lanes.
template <class DD>
struct ExactWindows {
  using VD = hn::Vec<DD>;
  using MD = hn::Mask<DD>;
  VD hi[kWindows], lo[kWindows];
  int base[kWindows];
  VD scale[kWindows];
  bool used[kWindows];
  int pending = 0;  // vectors (two adds per lane) since the last flush
  ExactAcc* acc = nullptr;
  uint32_t equal_lo_bits = 0xFFFFFFFFu, equal_span_bits = 0;  // see set_base

  HWY_INLINE void init(DD dd, ExactAcc* a) {
    acc = a;
    for (int q = 0; q < kWindows; ++q) {
      hi[q] = lo[q] = hn::Zero(dd);
      base[q] = 0;
      scale[q] = hn::Set(dd, 1.0);
      used[q] = false;
    }
  }
  void set_base(DD dd, int q, double max_abs) {
    // Room for terms 2^8 above max_abs; d = c/g - 1 of ordinary pairs is a
    // multiple of 2^-53, so its window is fixed.
    int b = -100;
    if (q == kSumRatioDev) {
      b = -53;
    } else if (max_abs > 0) {
      int e;
      uint64_t frac;
      hd::log2_split(max_abs, e, frac);
      b = e + 8 - 74;
    }
    b = b < -900 ? -900 : (b > 900 ? 900 : b);
    base[q] = b;
    scale[q] = hn::Set(dd, hd::exact_pow2(-b));
    used[q] = true;
    if (q == kSumEqual) {
      // g*g of a golden with biased f32 exponent E (g = M 2^(E-150), M <
      // 2^24) is M^2 2^(2(E-150)) in this window: an integer when E - 150 >=
      // ceil(b/2), below 2^74 when E - 150 <= floor((26 + b)/2). A vector
      // whose |g| all lie in that exponent range (or are 0) needs no check.
      const int lo_e = std::max(1, 150 + ((b + 1) >> 1)), hi_e = std::min(254, 150 + ((26 + b) >> 1));
      equal_lo_bits = lo_e <= hi_e ? static_cast<uint32_t>(lo_e) << 23 : 0xFFFFFFFFu;
      equal_span_bits = lo_e <= hi_e ? static_cast<uint32_t>(hi_e + 1 - lo_e) << 23 : 0;
    }
  }
  // Each lane holds integers below 2^53 in magnitude: the lanes of a window
  // are summed as 64-bit integers (below 2^56 for up to 8 lanes), and each
  // window's two sums go into the exact accumulators as integers times a
  // power of two: 2 adds per window instead of 2 per lane
  // (measured: the per-lane adds were an eighth of the bitwise-equal path).
  void flush(DD dd) {
    HWY_ALIGN double hs[hn::MaxLanes(dd)], ls[hn::MaxLanes(dd)];
    const int64_t L = static_cast<int64_t>(hn::Lanes(dd));
    static_assert(hn::MaxLanes(DD()) <= 512, "lane sums must stay below 2^63");
    for (int q = 0; q < kWindows; ++q) {
      if (!used[q]) continue;
      hn::Store(hi[q], dd, hs);
      hn::Store(lo[q], dd, ls);
      int64_t h = 0, l = 0;
      for (int64_t k = 0; k < L; ++k) {
        h += static_cast<int64_t>(hs[k]);  // exact: integers below 2^53
        l += static_cast<int64_t>(ls[k]);
      }
      // The lowest bit of the window is 2^base; the accumulators count bit
      // offsets from 2^PEAT_EXACT_SUM_SCALE_EXPONENT (base >= -900).
      const int off = base[q] - PEAT_EXACT_SUM_SCALE_EXPONENT;
      ExactAcc& to = acc[q == kSumEqual ? kAccEqualSquares : q];
      to.add_int(h, off + 32);
      to.add_int(l, off);
      hi[q] = lo[q] = hn::Zero(dd);
    }
    pending = 0;
  }
  // Counts one vector's adds; flushes before a lane can pass 2^53.
  HWY_INLINE void vector_done(DD dd) {
    if (++pending == kWindowFlush / 2) flush(dd);  // two adds per vector
  }
  // Flushes first if k more vectors would pass the limit (callers that add
  // k vectors at once, then raise pending by k).
  HWY_INLINE void make_room(DD dd, int k) {
    if (pending + k > kWindowFlush / 2) flush(dd);
  }
  // The lanes outside ok go to the scalar accumulators (those lanes only:
  // usually one of the vector's).
  void fallback(DD dd, int q, MD ok, VD x) {
    HWY_ALIGN double xs[hn::MaxLanes(dd)];
    hn::Store(x, dd, xs);
    uint8_t bits[(hn::MaxLanes(dd) + 7) / 8] = {};
    (void)hn::StoreMaskBits(dd, hn::Not(ok), bits);
    ExactAcc& to = acc[q == kSumEqual ? kAccEqualSquares : q];
    for (size_t l = 0; l < hn::Lanes(dd); ++l)
      if ((bits[l / 8] >> (l % 8)) & 1) to.add(xs[l]);
  }
  // Inlined so that q is a constant at each call and the windows stay in
  // registers (out of line, they go through memory).
  PEAT_ALWAYS_INLINE inline void add(DD dd, int q, VD x) {
    const VD v = hn::Mul(x, scale[q]);
    if (q == kSumRatioDev) {
      const auto ok = hn::And(hn::Eq(hn::Trunc(v), v), hn::Lt(hn::Abs(v), hn::Set(dd, 0x1p42)));
      if (HWY_UNLIKELY(!hn::AllTrue(dd, ok))) fallback(dd, q, ok, x);
      lo[q] = hn::Add(lo[q], hn::IfThenElseZero(ok, v));
      return;
    }
    const VD vh = hn::Trunc(hn::Mul(v, hn::Set(dd, 0x1p-32)));
    const VD vl = hn::NegMulAdd(vh, hn::Set(dd, 0x1p32), v);  // exact: the bits of v below 2^32
    const auto ok = hn::And(hn::Eq(hn::Trunc(vl), vl), hn::Lt(hn::Abs(v), hn::Set(dd, 0x1p74)));
    if (HWY_UNLIKELY(!hn::AllTrue(dd, ok))) fallback(dd, q, ok, x);
    hi[q] = hn::Add(hi[q], hn::IfThenElseZero(ok, vh));
    lo[q] = hn::Add(lo[q], hn::IfThenElseZero(ok, vl));
  }
  // g*g of a bitwise-equal vector known to fit the window (see set_base).
  PEAT_ALWAYS_INLINE inline void add_equal_unchecked(DD dd, VD x) {
    const VD v = hn::Mul(x, scale[kSumEqual]);
    const VD vh = hn::Trunc(hn::Mul(v, hn::Set(dd, 0x1p-32)));
    hi[kSumEqual] = hn::Add(hi[kSumEqual], vh);
    lo[kSumEqual] = hn::Add(lo[kSumEqual], hn::NegMulAdd(vh, hn::Set(dd, 0x1p32), v));
  }
  // e and |e| share one split (same window: both are based on max |e|): the
  // parts of |e| are the absolute values of the parts of e.
  PEAT_ALWAYS_INLINE inline void add_error(DD dd, VD x) {
    const VD v = hn::Mul(x, scale[kSumError]);
    const VD vh = hn::Trunc(hn::Mul(v, hn::Set(dd, 0x1p-32)));
    const VD vl = hn::NegMulAdd(vh, hn::Set(dd, 0x1p32), v);
    const auto ok = hn::And(hn::Eq(hn::Trunc(vl), vl), hn::Lt(hn::Abs(v), hn::Set(dd, 0x1p74)));
    if (HWY_UNLIKELY(!hn::AllTrue(dd, ok))) {
      fallback(dd, kSumError, ok, x);
      fallback(dd, kSumAbsError, ok, hn::Abs(x));
    }
    const VD h = hn::IfThenElseZero(ok, vh), l = hn::IfThenElseZero(ok, vl);
    hi[kSumError] = hn::Add(hi[kSumError], h);
    lo[kSumError] = hn::Add(lo[kSumError], l);
    hi[kSumAbsError] = hn::Add(hi[kSumAbsError], hn::Abs(h));
    lo[kSumAbsError] = hn::Add(lo[kSumAbsError], hn::Abs(l));
  }
};

}  // namespace HWY_NAMESPACE
}  // namespace peat::impl::analyzer
HWY_AFTER_NAMESPACE();

#endif  // toggle guard
