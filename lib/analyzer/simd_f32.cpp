// SIMD fast path of the f32 signature (see simd_f32.hpp), compiled once per
// Highway target and dispatched at run time.
//
// Floating-point contraction is off in this file: the tolerance test
// |e| > atol + rtol |g| must round exactly as the scalar definition does
// (a fused multiply-add would change which pairs fail at the boundary).
#pragma GCC optimize("fp-contract=off")

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "analyzer/simd_f32.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "lib/analyzer/simd_f32.hpp"

#include "lib/analyzer/exact_acc.hpp"
#include "backends/common/signature_element.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__GNUC__) || defined(__clang__)
#  define PEAT_ALWAYS_INLINE __attribute__((always_inline))
#else
#  define PEAT_ALWAYS_INLINE
#endif

HWY_BEFORE_NAMESPACE();
namespace peat::impl::analyzer {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The kernel over words of type W for kKind 0: f32 (uint32_t words); 1: bf16
// (uint16_t, the top half of an f32: widened by a 16-bit shift, its ULP
// distance is the f32 one shifted right by 16, its bits are the f32 bits
// 16..31); 2: f16 (uint16_t; only normal f16 values are ordinary: widened to
// f32 by rebiasing the exponent, their ULP distance is the f32 one shifted
// right by 13, and the XOR is taken of the f16 words themselves).
template <int kKind, typename W>
HWY_INLINE int64_t FastT(const W* HWY_RESTRICT g, const W* HWY_RESTRICT c, int64_t n, int64_t index0,
                         const F32FastParams& p, F32FastState& s) {
#if HWY_TARGET == HWY_SCALAR
  // One lane cannot be split into halves: the scalar path does everything.
  (void)g, (void)c, (void)n, (void)index0, (void)p, (void)s;
  return 0;
#else
  constexpr bool kBF16 = kKind == 1;
  constexpr bool kF16 = kKind == 2;
  const hn::ScalableTag<float> df;
  const hn::RebindToUnsigned<decltype(df)> du;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Half<decltype(df)> dfh;
  const hn::Rebind<double, decltype(dfh)> dd;
  using VU = hn::Vec<decltype(du)>;
  using VD = hn::Vec<decltype(dd)>;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  if (n < N) return 0;

  const VU abs_mask = hn::Set(du, 0x7FFFFFFFu), sign_mask = hn::Set(du, 0x80000000u);
  const VU inf_bits = hn::Set(du, 0x7F800000u), min_normal = hn::Set(du, 0x00800000u);
  const auto half = hn::Set(df, 0.5f), two = hn::Set(df, 2.0f);
  const auto ratio_min = hn::Set(df, p.ratio_min_abs);
  const VD rtol = hn::Set(dd, p.rtol), atol = hn::Set(dd, p.atol);

  // Exact sums: each sum q has a window of lane accumulators in fixed point
  // with lowest bit 2^base[q], held in double lanes that stay exact because
  // every partial sum is an integer below 2^53 (in units of 2^base). A term
  // x with v = x * 2^-base goes in as two integer parts, high = trunc(v /
  // 2^32) below 2^42 and low = v - high * 2^32 below 2^32, when v is an
  // integer below 2^74; d = c/g - 1 (a multiple of 2^-53) goes in as one part
  // when below 2^42. Any other term goes to the scalar exact accumulator. The
  // windows are flushed into the exact accumulators after at most 2^11 adds
  // per lane and at the end. Every path is exact: the bases only decide speed.
  //
  // Bitwise-equal vectors (see the loop) add only g*g, into one more window
  // kSumEqual: at a flush it goes to the sums of g*g, c*c and g*c alike
  // (c == g), whose error terms are all zero.
  constexpr int kWindowFlush = 2048;
  constexpr int kSumEqual = kSumCount, kWindows = kSumCount + 1;
  VD win_hi[kWindows], win_lo[kWindows];
  int win_base[kWindows];
  VD win_scale[kWindows];
  bool win_used[kWindows];
  for (int q = 0; q < kWindows; ++q) {
    win_hi[q] = win_lo[q] = hn::Zero(dd);
    win_base[q] = 0;
    win_scale[q] = hn::Set(dd, 1.0);
    win_used[q] = false;
  }
  bool have_base = false, have_equal_base = false;
  int win_pending = 0;
  const VD two_m32 = hn::Set(dd, 0x1p-32), two_32 = hn::Set(dd, 0x1p32);
  const VD limit42 = hn::Set(dd, 0x1p42), limit74 = hn::Set(dd, 0x1p74);
  ExactAcc* const acc = s.acc;
  uint32_t equal_lo_bits = 0xFFFFFFFFu, equal_span_bits = 0;  // see set_base
  auto set_base = [&](int q, double max_abs) {
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
    win_base[q] = b;
    win_scale[q] = hn::Set(dd, hd::exact_pow2(-b));
    win_used[q] = true;
    if (q == kSumEqual) {
      // g*g of a golden with biased f32 exponent E (g = M 2^(E-150), M <
      // 2^24) is M^2 2^(2(E-150)) in this window: an integer when E - 150 >=
      // ceil(b/2), below 2^74 when E - 150 <= floor((26 + b)/2). A vector
      // whose |g| all lie in that exponent range (or are 0) needs no check.
      const int lo = std::max(1, 150 + ((b + 1) >> 1)), hi = std::min(254, 150 + ((26 + b) >> 1));
      equal_lo_bits = lo <= hi ? static_cast<uint32_t>(lo) << 23 : 0xFFFFFFFFu;
      equal_span_bits = lo <= hi ? static_cast<uint32_t>(hi + 1 - lo) << 23 : 0;
    }
  };
  auto flush_windows = [&] {
    HWY_ALIGN double hi[hn::MaxLanes(dd)], lo[hn::MaxLanes(dd)];
    const int64_t L = static_cast<int64_t>(hn::Lanes(dd));
    for (int q = 0; q < kWindows; ++q) {
      if (!win_used[q]) continue;
      hn::Store(win_hi[q], dd, hi);
      hn::Store(win_lo[q], dd, lo);
      const double unit = hd::exact_pow2(win_base[q]), unit_hi = hd::exact_pow2(win_base[q] + 32);
      for (int64_t l = 0; l < L; ++l) {
        // exact: an integer below 2^53 times a power of two
        const double th = hi[l] * unit_hi, tl = lo[l] * unit;
        if (q == kSumEqual) {
          for (int t : {int{kSumSqGolden}, int{kSumSqCandidate}, int{kSumGoldenCandidate}}) {
            acc[t].add(th);
            acc[t].add(tl);
          }
        } else {
          acc[q].add(th);
          acc[q].add(tl);
        }
      }
      win_hi[q] = win_lo[q] = hn::Zero(dd);
    }
    win_pending = 0;
  };
  auto fallback = [&](int q, hn::Mask<decltype(dd)> ok, VD x) {
    HWY_ALIGN double xs[hn::MaxLanes(dd)];
    hn::Store(hn::IfThenZeroElse(ok, x), dd, xs);
    for (size_t l = 0; l < hn::Lanes(dd); ++l) {
      if (q == kSumEqual) {
        acc[kSumSqGolden].add(xs[l]);
        acc[kSumSqCandidate].add(xs[l]);
        acc[kSumGoldenCandidate].add(xs[l]);
      } else {
        acc[q].add(xs[l]);
      }
    }
  };
  // Inlined so that q is a constant at each call and the windows stay in
  // registers (out of line, they go through memory).
  auto add_exact = [&](int q, VD x) PEAT_ALWAYS_INLINE {
    const VD v = hn::Mul(x, win_scale[q]);
    if (q == kSumRatioDev) {
      const auto ok = hn::And(hn::Eq(hn::Trunc(v), v), hn::Lt(hn::Abs(v), limit42));
      if (HWY_UNLIKELY(!hn::AllTrue(dd, ok))) fallback(q, ok, x);
      win_lo[q] = hn::Add(win_lo[q], hn::IfThenElseZero(ok, v));
      return;
    }
    const VD vh = hn::Trunc(hn::Mul(v, two_m32));
    const VD vl = hn::NegMulAdd(vh, two_32, v);  // exact: the bits of v below 2^32
    const auto ok = hn::And(hn::Eq(hn::Trunc(vl), vl), hn::Lt(hn::Abs(v), limit74));
    if (HWY_UNLIKELY(!hn::AllTrue(dd, ok))) fallback(q, ok, x);
    win_hi[q] = hn::Add(win_hi[q], hn::IfThenElseZero(ok, vh));
    win_lo[q] = hn::Add(win_lo[q], hn::IfThenElseZero(ok, vl));
  };
  // g*g of a bitwise-equal vector known to fit the window (see set_base).
  auto add_equal_unchecked = [&](VD x) PEAT_ALWAYS_INLINE {
    const VD v = hn::Mul(x, win_scale[kSumEqual]);
    const VD vh = hn::Trunc(hn::Mul(v, two_m32));
    win_hi[kSumEqual] = hn::Add(win_hi[kSumEqual], vh);
    win_lo[kSumEqual] = hn::Add(win_lo[kSumEqual], hn::NegMulAdd(vh, two_32, v));
  };
  // e and |e| share one split (same window: both are based on max |e|): the
  // parts of |e| are the absolute values of the parts of e.
  auto add_exact_e = [&](VD x) PEAT_ALWAYS_INLINE {
    const VD v = hn::Mul(x, win_scale[kSumError]);
    const VD vh = hn::Trunc(hn::Mul(v, two_m32));
    const VD vl = hn::NegMulAdd(vh, two_32, v);
    const auto ok = hn::And(hn::Eq(hn::Trunc(vl), vl), hn::Lt(hn::Abs(v), limit74));
    if (HWY_UNLIKELY(!hn::AllTrue(dd, ok))) {
      fallback(kSumError, ok, x);
      fallback(kSumAbsError, ok, hn::Abs(x));
    }
    const VD h = hn::IfThenElseZero(ok, vh), l = hn::IfThenElseZero(ok, vl);
    win_hi[kSumError] = hn::Add(win_hi[kSumError], h);
    win_lo[kSumError] = hn::Add(win_lo[kSumError], l);
    win_hi[kSumAbsError] = hn::Add(win_hi[kSumAbsError], hn::Abs(h));
    win_lo[kSumAbsError] = hn::Add(win_lo[kSumAbsError], hn::Abs(l));
  };
  auto vmax_g = hn::Zero(df);
  uint64_t bitwise = 0, fails = 0;
  // The ULP, relative-error and popcount histograms are counted together:
  // each lane gets a one-hot byte per histogram (ULP in byte 0, relative
  // error in byte 1, popcount in byte 2) for buckets in a window
  // [base, base + 8); the relative-error window is 7 wide and its bit 7 is
  // bucket 0 (exact pairs). hacc[k] holds byte-lane counters of bit k. Lanes
  // outside a window are counted one by one; after 16 vectors with such lanes
  // the window moves to them.
  int32_t hbase[3] = {0, 40, 0};
  int hmiss[3] = {0, 0, 0};
  int32_t hmove[3] = {-1, -1, -1};
  uint64_t* const hhist[3] = {s.ulp_hist, s.rel_hist, s.popcount_hist};
  VU hacc[8];
  for (auto& a : hacc) a = hn::Zero(du);
  int hpending = 0;
  // Both bit counters count first in nibble lanes (4 counters: nibble j of
  // nib[k] counts bit 4j+k, up to 15), widened into the byte counters every 15
  // vectors: byte m of acc[k] then counts bit 8m+k (k < 4) and byte m of
  // acc[4+k] bit 8m+4+k. Bytes are flushed before they can pass 255.
  const VU nib_ones = hn::Set(du, 0x11111111u), low_nibbles = hn::Set(du, 0x0F0F0F0Fu);
  auto widen = [&](VU* nib, VU* acc, int& nib_pending, int& pending) {
    for (int k = 0; k < 4; ++k) {
      acc[k] = hn::Add(acc[k], hn::And(nib[k], low_nibbles));
      acc[4 + k] = hn::Add(acc[4 + k], hn::And(hn::ShiftRight<4>(nib[k]), low_nibbles));
      nib[k] = hn::Zero(du);
    }
    pending += nib_pending;
    nib_pending = 0;
  };
  VU hnib[4], xnib[4];
  for (auto& a : hnib) a = hn::Zero(du);
  for (auto& a : xnib) a = hn::Zero(du);
  int hnib_pending = 0, xnib_pending = 0;
  auto flush_hist = [&] {
    widen(hnib, hacc, hnib_pending, hpending);
    const VU byte_mask = hn::Set(du, 0xFFu);
    for (int k = 0; k < 8; ++k) {
      const VU v = hacc[k];
      const uint64_t n0 = hn::GetLane(hn::SumOfLanes(du, hn::And(v, byte_mask)));
      const uint64_t n1 = hn::GetLane(hn::SumOfLanes(du, hn::And(hn::ShiftRight<8>(v), byte_mask)));
      const uint64_t n2 = hn::GetLane(hn::SumOfLanes(du, hn::And(hn::ShiftRight<16>(v), byte_mask)));
      if (n0) hhist[0][hbase[0] + k] += n0;
      if (n1) hhist[1][k == 7 ? 0 : hbase[1] + k] += n1;
      if (n2) hhist[2][hbase[2] + k] += n2;
      hacc[k] = hn::Zero(du);
    }
    hpending = 0;
  };
  // One-hot bits of bucket vector b for histogram j (see above).
  auto onehot = [&](hn::Vec<decltype(di)> b, int j, uint32_t width, bool zero_bit) -> VU {
    const VU rel = hn::BitCast(du, hn::Sub(b, hn::Set(di, hbase[j])));
    auto in = hn::Lt(rel, hn::Set(du, width));
    VU bits = hn::IfThenElseZero(in, hn::Set(du, 1u << (8 * j)) << rel);
    if (zero_bit) {
      const auto is_zero = hn::RebindMask(du, hn::Eq(b, hn::Zero(di)));
      bits = hn::Or(bits, hn::IfThenElseZero(is_zero, hn::Set(du, 0x80u << (8 * j))));
      in = hn::Or(in, is_zero);
    }
    if (HWY_UNLIKELY(!hn::AllTrue(du, in))) {
      HWY_ALIGN int32_t buf[hn::MaxLanes(di)];
      hn::Store(b, di, buf);
      for (int64_t l = 0; l < N; ++l) {
        const int32_t v = buf[l];
        if (static_cast<uint32_t>(v - hbase[j]) < width || (zero_bit && v == 0)) continue;
        hhist[j][v] += 1;
        if (++hmiss[j] >= 16) hmove[j] = v;
      }
    }
    return bits;
  };

  // Byte-lane bit counters of the XOR word: byte j of xacc[k] counts bit 8j+k.
  VU xacc[8];
  for (auto& a : xacc) a = hn::Zero(du);
  int xpending = 0;
  auto flush_xor = [&] {
    widen(xnib, xacc, xnib_pending, xpending);
    const VU byte_mask = hn::Set(du, 0xFFu);
    for (int k = 0; k < 8; ++k) {
      const VU v = xacc[k];
      s.xor_bit_hist[k] += hn::GetLane(hn::SumOfLanes(du, hn::And(v, byte_mask)));
      s.xor_bit_hist[8 + k] += hn::GetLane(hn::SumOfLanes(du, hn::And(hn::ShiftRight<8>(v), byte_mask)));
      s.xor_bit_hist[16 + k] += hn::GetLane(hn::SumOfLanes(du, hn::And(hn::ShiftRight<16>(v), byte_mask)));
      s.xor_bit_hist[24 + k] += hn::GetLane(hn::SumOfLanes(du, hn::ShiftRight<24>(v)));
      xacc[k] = hn::Zero(du);
    }
    xpending = 0;
  };
  // The same counters for the highest differing bit (tacc) and for that bit
  // being set in the candidate (uacc).
  VU tnib[4], unib[4], tacc[8], uacc[8];
  for (auto& a : tnib) a = hn::Zero(du);
  for (auto& a : unib) a = hn::Zero(du);
  for (auto& a : tacc) a = hn::Zero(du);
  for (auto& a : uacc) a = hn::Zero(du);
  int tnib_pending = 0, tpending = 0, unib_pending = 0, upending = 0;
  auto flush_top = [&] {
    widen(tnib, tacc, tnib_pending, tpending);
    widen(unib, uacc, unib_pending, upending);
    const VU byte_mask = hn::Set(du, 0xFFu);
    for (int k = 0; k < 8; ++k)
      for (int m = 0; m < 4; ++m) {
        const VU shift_t = hn::ShiftRightSame(tacc[k], 8 * m), shift_u = hn::ShiftRightSame(uacc[k], 8 * m);
        s.top_bit_hist[8 * m + k] += hn::GetLane(hn::SumOfLanes(du, hn::And(shift_t, byte_mask)));
        s.top_bit_set_hist[8 * m + k] += hn::GetLane(hn::SumOfLanes(du, hn::And(shift_u, byte_mask)));
      }
    for (int k = 0; k < 8; ++k) tacc[k] = uacc[k] = hn::Zero(du);
    tpending = upending = 0;
  };

  // Thresholds for screening the maxima: a lane can beat the running maximum
  // only if its f32 value reaches them (confirmed in double below).
  auto floor_float = [](double x) {
    float f = static_cast<float>(x);
    if (static_cast<double>(f) > x) f = std::nextafter(f, -INFINITY);
    return f;
  };
  float t_abs = s.max_abs_index < 0 ? -1.0f : floor_float(s.max_abs);
  float t_rel = s.max_rel_index < 0 ? -1.0f : floor_float(s.max_rel * (1.0 - 0x1p-22));
  VD rmin = hn::Set(dd, s.ratio_min), rmax = hn::Set(dd, s.ratio_max);

  uint64_t equal_count = 0, equal_ratio = 0;  // elements of bitwise-equal vectors, and their ratios
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    VU gb, cb, graw, craw;
    if constexpr (kF16) {
      const hn::Rebind<uint16_t, decltype(du)> d16;
      graw = hn::PromoteTo(du, hn::LoadU(d16, g + i));
      craw = hn::PromoteTo(du, hn::LoadU(d16, c + i));
      // Normal f16 -> f32 bits: sign to bit 31, exponent + 112, mantissa << 13.
      const VU rebias = hn::Set(du, 0x38000000u), m15 = hn::Set(du, 0x7FFFu), s16 = hn::Set(du, 0x8000u);
      gb = hn::Or(hn::ShiftLeft<16>(hn::And(graw, s16)), hn::Add(hn::ShiftLeft<13>(hn::And(graw, m15)), rebias));
      cb = hn::Or(hn::ShiftLeft<16>(hn::And(craw, s16)), hn::Add(hn::ShiftLeft<13>(hn::And(craw, m15)), rebias));
    } else if constexpr (kBF16) {
      const hn::Rebind<uint16_t, decltype(du)> d16;
      gb = hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(d16, g + i)));
      cb = hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(d16, c + i)));
    } else {
      gb = hn::LoadU(du, g + i);
      cb = hn::LoadU(du, c + i);
    }
    const VU ga = hn::And(gb, abs_mask), ca = hn::And(cb, abs_mask);
    const auto gf = hn::BitCast(df, gb), cf = hn::BitCast(df, cb);

    // Bitwise-equal vector of finite values (normal ones for f16, whose
    // widening above holds for those only). Such a pair contributes exactly
    // what classify_pair gives for e = 0: count and finite count, ULP,
    // relative-error and popcount bucket 0, no XOR bits, no failure or flag;
    // the error sums gain zeros and g*g = c*c = g*c goes to those three sums;
    // the ratio c/g is exactly 1 (d = 0) when g != 0 and |g| >= ratio_min_abs;
    // |e| = 0 and rel = 0 set the maxima only where none is held yet (the
    // first finite lane, the first lane with g != 0: lowest index on a tie).
    if (hn::AllTrue(du, hn::Eq(gb, cb))) {
      auto fin = hn::Lt(ga, inf_bits);
      if constexpr (kF16) {
        const VU exp_mask = hn::Set(du, 0x7C00u), lo = hn::Set(du, 0x0400u);
        const VU ge = hn::And(graw, exp_mask);
        fin = hn::And(hn::Not(hn::Lt(ge, lo)), hn::Lt(ge, exp_mask));
      }
      if (hn::AllTrue(du, fin)) {
        const auto agf = hn::BitCast(df, ga);
        vmax_g = hn::Max(vmax_g, agf);
        const VD g_lo = hn::PromoteTo(dd, hn::LowerHalf(dfh, gf)), g_hi = hn::PromoteTo(dd, hn::UpperHalf(dfh, gf));
        const VD g2_lo = hn::Mul(g_lo, g_lo), g2_hi = hn::Mul(g_hi, g_hi);
        if (!have_equal_base) {
          // The window is placed by the first vector with a non-zero g (a
          // vector of zeros adds nothing): placed by zeros, it would leave
          // every later term to the scalar accumulator.
          const double m = hn::GetLane(hn::MaxOfLanes(dd, hn::Max(g2_lo, g2_hi)));
          if (m > 0) {
            set_base(kSumEqual, m);
            have_equal_base = true;
          }
        }
        if (have_equal_base) {
          const auto in_window = hn::Or(hn::Eq(ga, hn::Zero(du)),
                                        hn::Lt(hn::Sub(ga, hn::Set(du, equal_lo_bits)), hn::Set(du, equal_span_bits)));
          if (hn::AllTrue(du, in_window)) {
            add_equal_unchecked(g2_lo);
            add_equal_unchecked(g2_hi);
          } else {
            add_exact(kSumEqual, g2_lo);
            add_exact(kSumEqual, g2_hi);
          }
          if (++win_pending == kWindowFlush / 2) flush_windows();
        }
        const auto nonzero = hn::Ne(ga, hn::Zero(du));
        equal_ratio += hn::CountTrue(du, hn::And(nonzero, hn::RebindMask(du, hn::Ge(agf, ratio_min))));
        equal_count += N;
        if (HWY_UNLIKELY(s.max_abs_index < 0)) {
          s.max_abs = 0;
          s.max_abs_index = index0 + i;
          s.max_abs_g = s.max_abs_c = static_cast<double>(hn::GetLane(gf));
          t_abs = 0;
        }
        if (HWY_UNLIKELY(s.max_rel_index < 0)) {
          const intptr_t first = hn::FindFirstTrue(du, nonzero);
          if (first >= 0) {
            s.max_rel = 0;
            s.max_rel_index = index0 + i + first;
            t_rel = 0;
          }
        }
        continue;
      }
    }
    const auto agf = hn::BitCast(df, ga), acf = hn::BitCast(df, ca);
    const auto e = hn::Sub(cf, gf);
    const auto ae = hn::Abs(e);
    const VU aeb = hn::BitCast(du, ae);
    auto ok = hn::And(hn::Lt(ga, inf_bits), hn::Lt(ca, inf_bits));
    ok = hn::And(ok, hn::Not(hn::Lt(ga, min_normal)));
    ok = hn::And(ok, hn::Eq(hn::And(hn::Xor(gb, cb), sign_mask), hn::Zero(du)));
    ok = hn::And(ok, hn::RebindMask(du, hn::And(hn::Ge(acf, hn::Mul(agf, half)), hn::Le(acf, hn::Mul(agf, two)))));
    ok = hn::And(ok, hn::RebindMask(du, hn::Ge(agf, ratio_min)));
    ok = hn::And(ok, hn::Or(hn::Eq(aeb, hn::Zero(du)), hn::Not(hn::Lt(aeb, min_normal))));
    if constexpr (kF16) {
      // Both f16 words normal: exponent field in [1, 30].
      const VU exp_mask = hn::Set(du, 0x7C00u), lo = hn::Set(du, 0x0400u), hi = hn::Set(du, 0x7C00u);
      const VU ge = hn::And(graw, exp_mask), ce = hn::And(craw, exp_mask);
      ok = hn::And(ok, hn::And(hn::Not(hn::Lt(ge, lo)), hn::Lt(ge, hi)));
      ok = hn::And(ok, hn::And(hn::Not(hn::Lt(ce, lo)), hn::Lt(ce, hi)));
    }
    if (!hn::AllTrue(du, ok)) break;

    // Tolerance, in double: |e| > atol + rtol |g|.
    const VD g_lo = hn::PromoteTo(dd, hn::LowerHalf(dfh, gf)), g_hi = hn::PromoteTo(dd, hn::UpperHalf(dfh, gf));
    const VD c_lo = hn::PromoteTo(dd, hn::LowerHalf(dfh, cf)), c_hi = hn::PromoteTo(dd, hn::UpperHalf(dfh, cf));
    const VD e_lo = hn::PromoteTo(dd, hn::LowerHalf(dfh, e)), e_hi = hn::PromoteTo(dd, hn::UpperHalf(dfh, e));
    const VD ae_lo = hn::Abs(e_lo), ae_hi = hn::Abs(e_hi);
    const auto fail_lo = hn::Gt(ae_lo, hn::Add(atol, hn::Mul(rtol, hn::Abs(g_lo))));
    const auto fail_hi = hn::Gt(ae_hi, hn::Add(atol, hn::Mul(rtol, hn::Abs(g_hi))));
    const size_t nfail = hn::CountTrue(dd, fail_lo) + hn::CountTrue(dd, fail_hi);
    if (nfail != 0 && p.stop_on_tolerance_fail) break;
    fails += nfail;
    bitwise += hn::CountTrue(du, hn::Ne(gb, cb));

    // Exact sums (products of f32 values are exact in double).
    const VD e2_lo = hn::Mul(e_lo, e_lo), e2_hi = hn::Mul(e_hi, e_hi);
    const VD g2_lo = hn::Mul(g_lo, g_lo), g2_hi = hn::Mul(g_hi, g_hi);
    const VD c2_lo = hn::Mul(c_lo, c_lo), c2_hi = hn::Mul(c_hi, c_hi);
    const VD gc_lo = hn::Mul(g_lo, c_lo), gc_hi = hn::Mul(g_hi, c_hi);
    // Ratio c / g in double, as its deviation d = r - 1.
    const VD one = hn::Set(dd, 1.0);
    const VD r_lo = hn::Div(c_lo, g_lo), r_hi = hn::Div(c_hi, g_hi);
    const VD d_lo = hn::Sub(r_lo, one), d_hi = hn::Sub(r_hi, one);
    const VD d2_lo = hn::Mul(d_lo, d_lo), d2_hi = hn::Mul(d_hi, d_hi);
    if (!have_base) {
      const VD terms[kSumCount] = {hn::Max(hn::Abs(e_lo), hn::Abs(e_hi)), hn::Max(ae_lo, ae_hi),
                                   hn::Max(e2_lo, e2_hi), hn::Max(g2_lo, g2_hi), hn::Max(c2_lo, c2_hi),
                                   hn::Max(hn::Abs(gc_lo), hn::Abs(gc_hi)), hn::Zero(dd), hn::Max(d2_lo, d2_hi)};
      for (int q = 0; q < kSumCount; ++q) set_base(q, hn::GetLane(hn::MaxOfLanes(dd, terms[q])));
      have_base = true;
      if (s.ratio_n == 0) {
        s.ratio_min = s.ratio_max = hn::GetLane(r_lo);
      }
      rmin = hn::Set(dd, s.ratio_min);
      rmax = hn::Set(dd, s.ratio_max);
    }
    add_exact_e(e_lo);
    add_exact_e(e_hi);
    add_exact(kSumSqError, e2_lo);
    add_exact(kSumSqError, e2_hi);
    add_exact(kSumSqGolden, g2_lo);
    add_exact(kSumSqGolden, g2_hi);
    add_exact(kSumSqCandidate, c2_lo);
    add_exact(kSumSqCandidate, c2_hi);
    add_exact(kSumGoldenCandidate, gc_lo);
    add_exact(kSumGoldenCandidate, gc_hi);
    add_exact(kSumRatioDev, d_lo);
    add_exact(kSumRatioDev, d_hi);
    add_exact(kSumRatioDevSq, d2_lo);
    add_exact(kSumRatioDevSq, d2_hi);
    if (++win_pending == kWindowFlush / 2) flush_windows();  // two adds per vector
    vmax_g = hn::Max(vmax_g, agf);
    rmin = hn::Min(rmin, hn::Min(r_lo, r_hi));
    rmax = hn::Max(rmax, hn::Max(r_lo, r_hi));

    // Maxima: screen in f32, confirm in double, lane by lane in index order.
    // |e| / |g| >= t_rel is screened as |e| >= t_rel * |g| (t_rel already
    // lowered by 2^-22 relative, more than the product's rounding).
    if (!hn::AllFalse(df, hn::Gt(ae, hn::Set(df, t_abs))) ||
        !hn::AllFalse(df, hn::Ge(ae, hn::Mul(hn::Set(df, t_rel), agf)))) {
      HWY_ALIGN uint32_t gbuf[hn::MaxLanes(du)], cbuf[hn::MaxLanes(du)];
      hn::Store(gb, du, gbuf);
      hn::Store(cb, du, cbuf);
      for (int64_t j = 0; j < N; ++j) {
        float gv, cv;
        std::memcpy(&gv, &gbuf[j], 4);
        std::memcpy(&cv, &cbuf[j], 4);
        const double gd = gv, cd = cv, a = std::fabs(cd - gd), rel = a / std::fabs(gd);
        if (s.max_abs_index < 0 || a > s.max_abs) {
          s.max_abs = a;
          s.max_abs_index = index0 + i + j;
          s.max_abs_g = gd;
          s.max_abs_c = cd;
        }
        if (s.max_rel_index < 0 || rel > s.max_rel) {
          s.max_rel = rel;
          s.max_rel_index = index0 + i + j;
        }
      }
      t_abs = floor_float(s.max_abs);
      t_rel = floor_float(s.max_rel * (1.0 - 0x1p-22));
    }

    // ULP distance (same sign: difference of magnitudes, < 2^24, exact as a
    // float): bucket = floor(log2 d) + 1, 0 for d == 0.
    auto dist = hn::Abs(hn::Sub(hn::BitCast(di, ga), hn::BitCast(di, ca)));
    if constexpr (kBF16) dist = hn::ShiftRight<16>(dist);
    if constexpr (kF16) dist = hn::ShiftRight<13>(dist);
    const auto dist_exp = hn::BitCast(di, hn::ShiftRight<23>(hn::BitCast(du, hn::ConvertTo(df, dist))));
    const auto ulp_bucket = hn::IfThenElseZero(hn::Ne(dist, hn::Zero(di)), hn::Sub(dist_exp, hn::Set(di, 126)));
    const VU oh_ulp = onehot(ulp_bucket, 0, 8, false);

    // Relative error bucket: floor(log2 |e|/|g|) = E_e - E_g - (frac_e < frac_g).
    const VU frac_mask = hn::Set(du, 0x007FFFFFu);
    const auto exp_e = hn::BitCast(di, hn::ShiftRight<23>(aeb)), exp_g = hn::BitCast(di, hn::ShiftRight<23>(ga));
    const auto borrow = hn::IfThenElseZero(hn::RebindMask(di, hn::Lt(hn::And(aeb, frac_mask), hn::And(ga, frac_mask))),
                                           hn::Set(di, 1));
    auto k = hn::Sub(hn::Sub(exp_e, exp_g), borrow);  // >= -48 for ordinary pairs, < 1
    auto rel_bucket = hn::Add(k, hn::Set(di, 66));
    rel_bucket = hn::IfThenElse(hn::Lt(k, hn::Set(di, -64)), hn::Set(di, 1), rel_bucket);
    rel_bucket = hn::IfThenElse(hn::Gt(k, hn::Set(di, -1)), hn::Set(di, 66), rel_bucket);
    rel_bucket = hn::IfThenElseZero(hn::RebindMask(di, hn::Ne(aeb, hn::Zero(du))), rel_bucket);
    const VU oh_rel = onehot(rel_bucket, 1, 7, true);

    // XOR bit positions and popcount.
    VU x;
    if constexpr (kF16)
      x = hn::Xor(graw, craw);
    else if constexpr (kBF16)
      x = hn::ShiftRight<16>(hn::Xor(gb, cb));
    else
      x = hn::Xor(gb, cb);
    xnib[0] = hn::Add(xnib[0], hn::And(x, nib_ones));
    xnib[1] = hn::Add(xnib[1], hn::And(hn::ShiftRight<1>(x), nib_ones));
    xnib[2] = hn::Add(xnib[2], hn::And(hn::ShiftRight<2>(x), nib_ones));
    xnib[3] = hn::Add(xnib[3], hn::And(hn::ShiftRight<3>(x), nib_ones));
    if (++xnib_pending == 15) {
      widen(xnib, xacc, xnib_pending, xpending);
      if (xpending > 240) flush_xor();
    }
    {  // Highest differing bit: smear x downwards, keep the top one.
      VU t = hn::Or(x, hn::ShiftRight<1>(x));
      t = hn::Or(t, hn::ShiftRight<2>(t));
      t = hn::Or(t, hn::ShiftRight<4>(t));
      t = hn::Or(t, hn::ShiftRight<8>(t));
      t = hn::Or(t, hn::ShiftRight<16>(t));
      const VU top = hn::AndNot(hn::ShiftRight<1>(t), t);
      VU cw;
      if constexpr (kF16)
        cw = craw;
      else if constexpr (kBF16)
        cw = hn::ShiftRight<16>(cb);
      else
        cw = cb;
      const VU up = hn::And(top, cw);
      tnib[0] = hn::Add(tnib[0], hn::And(top, nib_ones));
      tnib[1] = hn::Add(tnib[1], hn::And(hn::ShiftRight<1>(top), nib_ones));
      tnib[2] = hn::Add(tnib[2], hn::And(hn::ShiftRight<2>(top), nib_ones));
      tnib[3] = hn::Add(tnib[3], hn::And(hn::ShiftRight<3>(top), nib_ones));
      unib[0] = hn::Add(unib[0], hn::And(up, nib_ones));
      unib[1] = hn::Add(unib[1], hn::And(hn::ShiftRight<1>(up), nib_ones));
      unib[2] = hn::Add(unib[2], hn::And(hn::ShiftRight<2>(up), nib_ones));
      unib[3] = hn::Add(unib[3], hn::And(hn::ShiftRight<3>(up), nib_ones));
      ++unib_pending;
      if (++tnib_pending == 15) {
        widen(tnib, tacc, tnib_pending, tpending);
        widen(unib, uacc, unib_pending, upending);
        if (tpending > 240) flush_top();
      }
    }
    const VU oh = hn::Or(hn::Or(oh_ulp, oh_rel), onehot(hn::BitCast(di, hn::PopulationCount(x)), 2, 8, false));
    hnib[0] = hn::Add(hnib[0], hn::And(oh, nib_ones));
    hnib[1] = hn::Add(hnib[1], hn::And(hn::ShiftRight<1>(oh), nib_ones));
    hnib[2] = hn::Add(hnib[2], hn::And(hn::ShiftRight<2>(oh), nib_ones));
    hnib[3] = hn::Add(hnib[3], hn::And(hn::ShiftRight<3>(oh), nib_ones));
    if (++hnib_pending == 15) {
      widen(hnib, hacc, hnib_pending, hpending);
      if (hpending > 240) flush_hist();
    }
    if (HWY_UNLIKELY(hmove[0] >= 0 || hmove[1] >= 0 || hmove[2] >= 0)) {
      flush_hist();
      for (int j = 0; j < 3; ++j) {
        if (hmove[j] < 0) continue;
        hbase[j] = hmove[j] > 3 ? hmove[j] - 3 : (j == 1 ? 1 : 0);
        hmove[j] = -1;
        hmiss[j] = 0;
      }
    }
  }
  if (xpending > 0 || xnib_pending > 0) flush_xor();
  if (tpending > 0 || tnib_pending > 0) flush_top();
  if (hpending > 0 || hnib_pending > 0) flush_hist();
  if (i == 0) return 0;  // no vector taken: the windows are empty

  s.count += static_cast<uint64_t>(i);
  s.finite += static_cast<uint64_t>(i);
  s.bitwise += bitwise;
  s.tolerance_fail += fails;
  flush_windows();
  const double mg = static_cast<double>(hn::GetLane(hn::MaxOfLanes(df, vmax_g)));
  if (mg > s.max_abs_golden) s.max_abs_golden = mg;
  // Every pair of the full path is a ratio pair (ordinary: |g| >= ratio_min_abs).
  const uint64_t full = static_cast<uint64_t>(i) - equal_count;
  if (full > 0) {
    s.ratio_min = hn::GetLane(hn::MinOfLanes(dd, rmin));
    s.ratio_max = hn::GetLane(hn::MaxOfLanes(dd, rmax));
  }
  if (equal_ratio > 0) {
    if (s.ratio_n == 0 && full == 0) {
      s.ratio_min = s.ratio_max = 1.0;
    } else {
      if (hd::less_total(1.0, s.ratio_min)) s.ratio_min = 1.0;
      if (hd::less_total(s.ratio_max, 1.0)) s.ratio_max = 1.0;
    }
  }
  s.ratio_n += full + equal_ratio;
  s.ulp_hist[0] += equal_count;
  s.rel_hist[0] += equal_count;
  s.popcount_hist[0] += equal_count;
  return i;
#endif
}

int64_t F32Fast(const uint32_t* HWY_RESTRICT g, const uint32_t* HWY_RESTRICT c, int64_t n, int64_t index0,
                const F32FastParams& p, F32FastState& s) {
  return FastT<0>(g, c, n, index0, p, s);
}

int64_t BF16Fast(const uint16_t* HWY_RESTRICT g, const uint16_t* HWY_RESTRICT c, int64_t n, int64_t index0,
                 const F32FastParams& p, F32FastState& s) {
  return FastT<1>(g, c, n, index0, p, s);
}

int64_t F16Fast(const uint16_t* HWY_RESTRICT g, const uint16_t* HWY_RESTRICT c, int64_t n, int64_t index0,
                const F32FastParams& p, F32FastState& s) {
  return FastT<2>(g, c, n, index0, p, s);
}

int64_t F32Lanes() { return static_cast<int64_t>(hn::Lanes(hn::ScalableTag<float>())); }

}  // namespace HWY_NAMESPACE
}  // namespace peat::impl::analyzer
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace peat::impl::analyzer {
HWY_EXPORT(F32Fast);
HWY_EXPORT(BF16Fast);
HWY_EXPORT(F16Fast);
HWY_EXPORT(F32Lanes);

int64_t f32_fast(const uint32_t* g, const uint32_t* c, int64_t n, int64_t index0, const F32FastParams& params,
                 F32FastState& state) {
  return HWY_DYNAMIC_DISPATCH(F32Fast)(g, c, n, index0, params, state);
}

int64_t bf16_fast(const uint16_t* g, const uint16_t* c, int64_t n, int64_t index0, const F32FastParams& params,
                  F32FastState& state) {
  return HWY_DYNAMIC_DISPATCH(BF16Fast)(g, c, n, index0, params, state);
}

int64_t f16_fast(const uint16_t* g, const uint16_t* c, int64_t n, int64_t index0, const F32FastParams& params,
                 F32FastState& state) {
  return HWY_DYNAMIC_DISPATCH(F16Fast)(g, c, n, index0, params, state);
}

int64_t f32_fast_lanes() { return HWY_DYNAMIC_DISPATCH(F32Lanes)(); }
}  // namespace peat::impl::analyzer
#endif
