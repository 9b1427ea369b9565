// SIMD fast path of the f32 signature (see simd_f32.hpp), compiled once per
// Highway target and dispatched at run time.
//
// Floating-point contraction is off in this file: the tolerance test
// |e| > atol + rtol |g| must round exactly as the scalar definition does
// (a fused multiply-add would change which pairs fail at the boundary).
#pragma GCC optimize("fp-contract=off")

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "lib/analyzer/simd_f32.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "lib/analyzer/simd_f32.hpp"
#include "lib/analyzer/simd_f32_counters-inl.h"
#include "lib/analyzer/simd_f32_windows-inl.h"
#include "lib/analyzer/simd_f32_words-inl.h"

#include "lib/analyzer/exact_acc.hpp"
#include "backends/common/signature_element.h"

#include <algorithm>
#include <cmath>
#include <cstring>

HWY_BEFORE_NAMESPACE();
namespace peat::impl::analyzer {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

constexpr int64_t kRegimeSwitch = kFastRegimeSwitch;  // vectors (see Fast below)

// The kernel over words of type W for kKind 0: f32 (uint32_t words); 1: bf16
// (uint16_t, the top half of an f32: widened by a 16-bit shift, its ULP
// distance is the f32 one shifted right by 16, its bits are the f32 bits
// 16..31); 2: f16 (uint16_t; only normal f16 values are ordinary: widened to
// f32 by rebiasing the exponent, their ULP distance is the f32 one shifted
// right by 13, and the XOR is taken of the f16 words themselves).
template <int kKind, typename W, bool kStage>
HWY_NOINLINE int64_t FastT(const W* HWY_RESTRICT g, const W* HWY_RESTRICT c, int64_t n, int64_t index0,
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

  const VU abs_mask = hn::Set(du, 0x7FFFFFFFu), inf_bits = hn::Set(du, 0x7F800000u);
  const auto ratio_min = hn::Set(df, p.ratio_min_abs);
  const VD rtol = hn::Set(dd, p.rtol), atol = hn::Set(dd, p.atol);

  // Exact sums (simd_f32_windows-inl.h) and conflict-free counters
  // (simd_f32_counters-inl.h).
  ExactWindows<decltype(dd)> win;
  win.init(dd, s.acc);
  bool have_base = false, have_equal_base = false;
  auto vmax_g = hn::Zero(df);
  uint64_t bitwise = 0, fails = 0;
  BucketCounter<decltype(du)> buckets;  // ULP (0), relative error (1), popcount (2)
  buckets.init(du, s.ulp_hist, s.rel_hist, s.popcount_hist);
  BitCounter<decltype(du)> xor_bits, top_bits, top_set_bits, low_bits;
  xor_bits.init(du, s.xor_bit_hist);
  top_bits.init(du, s.top_bit_hist);          // highest differing bit
  top_set_bits.init(du, s.top_bit_set_hist);  // ... set in the candidate
  low_bits.init(du, s.low_bit_hist);          // the candidate's lowest set bit

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
  // Lanes |g| (as bits) that count as ratio pairs in an equal vector: g != 0
  // and |g| >= ratio_min (non-negative floats order like their bits).
  uint32_t ratio_bits;
  {
    const float rm = p.ratio_min_abs;
    std::memcpy(&ratio_bits, &rm, 4);
    if (!(rm > 0)) ratio_bits = 1;
  }
  // ---- The pieces of the loop below, written once for its users. ----

  // Padding of a partly filled stage (see the staging below): the smallest
  // normal of the format as a pair with itself (as a word, and in f32).
  const uint32_t pad_word = kF16 ? 0x0400u : kBF16 ? 0x0080u : 0x00800000u;
  const double pad_value = kF16 ? 0x1p-14 : 0x1p-126;

  // The bitwise-equal, finite pairs of lanes `eq` of the vector at element
  // `at` (f32 bits gb). Such a pair contributes exactly what classify_pair
  // gives for e = 0: count and finite count, ULP, relative-error and popcount
  // bucket 0, no XOR bits, no failure or flag; the error sums gain zeros and
  // g*g = c*c = g*c goes to those three sums; the ratio c/g is exactly 1
  // (d = 0) when g != 0 and |g| >= ratio_min_abs; |e| = 0 and rel = 0 set the
  // maxima only where none is held yet (the first such lane, the first with
  // g != 0: lowest index on a tie). The other lanes add nothing here.
  auto equal_lanes = [&](VU gb_all, auto eq, int64_t at) HWY_ATTR PEAT_ALWAYS_INLINE {
    const VU gb = hn::IfThenElseZero(eq, gb_all), ga = hn::And(gb, abs_mask);
    const auto gf = hn::BitCast(df, gb), agf = hn::BitCast(df, ga);
    vmax_g = hn::Max(vmax_g, agf);
    const VD g_lo = hn::PromoteTo(dd, hn::LowerHalf(dfh, gf)), g_hi = hn::PromoteTo(dd, hn::UpperHalf(dfh, gf));
    const VD g2_lo = hn::Mul(g_lo, g_lo), g2_hi = hn::Mul(g_hi, g_hi);
    if (!have_equal_base) {
      // The window is placed by the first vector with a non-zero g (a
      // vector of zeros adds nothing): placed by zeros, it would leave
      // every later term to the scalar accumulator.
      const double m = hn::GetLane(hn::MaxOfLanes(dd, hn::Max(g2_lo, g2_hi)));
      if (m > 0) {
        win.set_base(dd, kSumEqual, m);
        have_equal_base = true;
      }
    }
    if (have_equal_base) {
      const auto in_window = hn::Or(hn::Eq(ga, hn::Zero(du)),
                                    hn::Lt(hn::Sub(ga, hn::Set(du, win.equal_lo_bits)), hn::Set(du, win.equal_span_bits)));
      if (hn::AllTrue(du, in_window)) {
        win.add_equal_unchecked(dd, g2_lo);
        win.add_equal_unchecked(dd, g2_hi);
      } else {
        win.add(dd, kSumEqual, g2_lo);
        win.add(dd, kSumEqual, g2_hi);
      }
      win.vector_done(dd);
    }
    const auto nonzero = hn::Ne(ga, hn::Zero(du));
    equal_ratio += hn::CountTrue(du, hn::And(nonzero, hn::RebindMask(du, hn::Ge(agf, ratio_min))));
    equal_count += hn::CountTrue(du, eq);
    if (HWY_UNLIKELY(s.max_abs_index < 0)) {
      const intptr_t first = hn::FindFirstTrue(du, eq);
      s.max_abs = 0;
      s.max_abs_index = index0 + at + first;
      s.max_abs_g = s.max_abs_c = static_cast<double>(hn::ExtractLane(gf, static_cast<size_t>(first)));
      t_abs = 0;
    }
    if (HWY_UNLIKELY(s.max_rel_index < 0)) {
      const intptr_t first = hn::FindFirstTrue(du, nonzero);
      if (first >= 0) {
        s.max_rel = 0;
        s.max_rel_index = index0 + at + first;
        t_rel = 0;
      }
    }
  };

  // The full path over one vector of words gw, cw (as LoadWords gives them)
  // whose first `valid` lanes are pairs, the others padding that adds nothing
  // (see pad_word below); lane j is element idx[j], or index0 + at + j when
  // idx is null. Returns false, having counted nothing, when a valid lane is
  // not ordinary or (spatial map) fails the tolerance.
  auto full_vector = [&](VU gw, VU cw, int64_t valid, const int64_t* idx, int64_t at) HWY_ATTR PEAT_ALWAYS_INLINE -> bool {
    const VU gb = F32Bits<kKind>(du, gw), cb = F32Bits<kKind>(du, cw);
    const VU ga = hn::And(gb, abs_mask), ca = hn::And(cb, abs_mask);
    const auto gf = hn::BitCast(df, gb), cf = hn::BitCast(df, cb);
    const auto agf = hn::BitCast(df, ga);

    const auto e = hn::Sub(cf, gf);
    const auto ae = hn::Abs(e);
    const VU aeb = hn::BitCast(du, ae);
    const bool padded = valid < N;
    auto ok = OrdinaryLanes<kKind>(du, gb, cb, gw, cw, p.ratio_min_abs);
    if (padded) ok = hn::Or(ok, hn::Not(hn::FirstN(du, static_cast<size_t>(valid))));
    if (!hn::AllTrue(du, ok)) return false;

    // Tolerance, in double: |e| > atol + rtol |g|.
    const VD g_lo = hn::PromoteTo(dd, hn::LowerHalf(dfh, gf)), g_hi = hn::PromoteTo(dd, hn::UpperHalf(dfh, gf));
    const VD c_lo = hn::PromoteTo(dd, hn::LowerHalf(dfh, cf)), c_hi = hn::PromoteTo(dd, hn::UpperHalf(dfh, cf));
    const VD e_lo = hn::PromoteTo(dd, hn::LowerHalf(dfh, e)), e_hi = hn::PromoteTo(dd, hn::UpperHalf(dfh, e));
    const VD ae_lo = hn::Abs(e_lo), ae_hi = hn::Abs(e_hi);
    auto fail_lo = hn::Gt(ae_lo, hn::Add(atol, hn::Mul(rtol, hn::Abs(g_lo))));
    auto fail_hi = hn::Gt(ae_hi, hn::Add(atol, hn::Mul(rtol, hn::Abs(g_hi))));
    // The valid lanes of each half (padded vectors only).
    auto valid_half = [&](int which) HWY_ATTR PEAT_ALWAYS_INLINE {
      const int64_t from = which * (N / 2);
      return hn::FirstN(dd, static_cast<size_t>(std::clamp(valid - from, int64_t{0}, N / 2)));
    };
    if (padded) {
      fail_lo = hn::And(fail_lo, valid_half(0));
      fail_hi = hn::And(fail_hi, valid_half(1));
    }
    const size_t nfail = hn::CountTrue(dd, fail_lo) + hn::CountTrue(dd, fail_hi);
    if (nfail != 0 && p.stop_on_tolerance_fail) return false;
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
      for (int q = 0; q < kSumCount; ++q) win.set_base(dd, q, hn::GetLane(hn::MaxOfLanes(dd, terms[q])));
      have_base = true;
      if (s.ratio_n == 0) {
        s.ratio_min = s.ratio_max = hn::GetLane(r_lo);  // lane 0 is always valid
      }
      rmin = hn::Set(dd, s.ratio_min);
      rmax = hn::Set(dd, s.ratio_max);
    }
    win.add_error(dd, e_lo);
    win.add_error(dd, e_hi);
    win.add(dd, kSumSqError, e2_lo);
    win.add(dd, kSumSqError, e2_hi);
    win.add(dd, kSumSqGolden, g2_lo);
    win.add(dd, kSumSqGolden, g2_hi);
    win.add(dd, kSumSqCandidate, c2_lo);
    win.add(dd, kSumSqCandidate, c2_hi);
    win.add(dd, kSumGoldenCandidate, gc_lo);
    win.add(dd, kSumGoldenCandidate, gc_hi);
    win.add(dd, kSumRatioDev, d_lo);
    win.add(dd, kSumRatioDev, d_hi);
    win.add(dd, kSumRatioDevSq, d2_lo);
    win.add(dd, kSumRatioDevSq, d2_hi);
    win.vector_done(dd);
    vmax_g = hn::Max(vmax_g, agf);  // padding (the smallest normal) never raises it
    if (padded) {  // padding lanes (ratio 1) leave the extrema as they are
      const auto valid_lo = valid_half(0), valid_hi = valid_half(1);
      rmin = hn::Min(rmin, hn::Min(hn::IfThenElse(valid_lo, r_lo, rmin), hn::IfThenElse(valid_hi, r_hi, rmin)));
      rmax = hn::Max(rmax, hn::Max(hn::IfThenElse(valid_lo, r_lo, rmax), hn::IfThenElse(valid_hi, r_hi, rmax)));
    } else {
      rmin = hn::Min(rmin, hn::Min(r_lo, r_hi));
      rmax = hn::Max(rmax, hn::Max(r_lo, r_hi));
    }

    // Maxima: screen in f32, confirm in double, lane by lane in index order.
    // |e| / |g| >= t_rel is screened as |e| >= t_rel * |g| (t_rel already
    // lowered by 2^-22 relative, more than the product's rounding).
    if (!hn::AllFalse(df, hn::Gt(ae, hn::Set(df, t_abs))) ||
        !hn::AllFalse(df, hn::Ge(ae, hn::Mul(hn::Set(df, t_rel), agf)))) {
      HWY_ALIGN uint32_t gbuf[hn::MaxLanes(du)], cbuf[hn::MaxLanes(du)];
      hn::Store(gb, du, gbuf);
      hn::Store(cb, du, cbuf);
      for (int64_t j = 0; j < valid; ++j) {
        float gv, cv;
        std::memcpy(&gv, &gbuf[j], 4);
        std::memcpy(&cv, &cbuf[j], 4);
        const double gd = gv, cd = cv, a = std::fabs(cd - gd), rel = a / std::fabs(gd);
        const int64_t index = idx != nullptr ? idx[j] : index0 + at + j;
        if (s.max_abs_index < 0 || a > s.max_abs) {
          s.max_abs = a;
          s.max_abs_index = index;
          s.max_abs_g = gd;
          s.max_abs_c = cd;
        }
        if (s.max_rel_index < 0 || rel > s.max_rel) {
          s.max_rel = rel;
          s.max_rel_index = index;
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
    const VU oh_ulp = buckets.onehot(du, ulp_bucket, 0, 8, false);

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
    const VU oh_rel = buckets.onehot(du, rel_bucket, 1, 7, true);

    // XOR bit positions and popcount.
    VU x;
    if constexpr (kF16)
      x = hn::Xor(gw, cw);
    else if constexpr (kBF16)
      x = hn::ShiftRight<16>(hn::Xor(gb, cb));
    else
      x = hn::Xor(gb, cb);
    xor_bits.add(du, x);
    {  // Highest differing bit: smear x downwards, keep the top one.
      VU t = hn::Or(x, hn::ShiftRight<1>(x));
      t = hn::Or(t, hn::ShiftRight<2>(t));
      t = hn::Or(t, hn::ShiftRight<4>(t));
      t = hn::Or(t, hn::ShiftRight<8>(t));
      t = hn::Or(t, hn::ShiftRight<16>(t));
      const VU top = hn::AndNot(hn::ShiftRight<1>(t), t);
      VU cword;
      if constexpr (kF16)
        cword = cw;
      else if constexpr (kBF16)
        cword = hn::ShiftRight<16>(cb);
      else
        cword = cb;
      top_bits.add(du, top);
      top_set_bits.add(du, hn::And(top, cword));
      // The candidate's lowest set bit, sign cleared (m & -m), on mismatching lanes.
      const VU m = hn::And(cword, hn::Set(du, (kF16 || kBF16) ? 0x7FFFu : 0x7FFFFFFFu));
      low_bits.add(du, hn::IfThenElseZero(hn::Ne(x, hn::Zero(du)), hn::And(m, hn::Sub(hn::Zero(du), m))));
    }
    const VU oh_pop = buckets.onehot(du, hn::BitCast(di, hn::PopulationCount(x)), 2, 8, false);
    buckets.add(du, hn::Or(hn::Or(oh_ulp, oh_rel), oh_pop));

    if (padded) {
      // Each padding lane counted bucket 0 thrice and g*g = c*c = g*c =
      // pad^2 (exact in double): taken back exactly.
      const uint64_t pads = static_cast<uint64_t>(N - valid);
      const double back = -static_cast<double>(pads) * pad_value * pad_value;
      s.acc[kSumSqGolden].add(back);
      s.acc[kSumSqCandidate].add(back);
      s.acc[kSumGoldenCandidate].add(back);
      s.ulp_hist[0] -= pads;
      s.rel_hist[0] -= pads;
      s.popcount_hist[0] -= pads;
    }
    return true;
  };

  // Staging: a vector with a few differing pairs (at most N/4) among equal
  // ones is split. Its equal pairs go through equal_lanes; its differing
  // pairs (each ordinary, else the vector is not split) are gathered here
  // with their indices and taken by the full path N at a time. Sparse
  // differences (a deterministic candidate beside the golden) then cost the
  // full path once per differing pair instead of once per vector holding
  // one. Staged pairs wait at most until the next vector that is not split:
  // the stage is emptied first (padded with pad_word, a pair that counts
  // nothing once taken back), so every pair reaches the maxima in index order
  // (ties keep the lowest index). Off in spatial-map runs, which stop at the
  // first vector failing the tolerance.
  constexpr int64_t kMaxN = static_cast<int64_t>(hn::MaxLanes(du));
  HWY_ALIGN uint32_t stage_g[2 * kMaxN], stage_c[2 * kMaxN];
  int64_t stage_i[2 * kMaxN];
  int64_t staged = 0;
  const bool staging = kStage && !p.stop_on_tolerance_fail;
  // Regimes (see Fast below): vectors the full path took in a row while
  // staging, and vectors it took that could have been split while not.
  int64_t direct_run = 0, splittable = 0;
  bool switch_regime = false;
  // Each pass of the loop below gives the full path at most one vector, at
  // one call site (a second, or a helper taking the stage, would keep the
  // loop's state in memory instead of registers): a vector of the data, a
  // full stage, or the stage padded, which goes first when a vector that is
  // not split comes (that vector comes back in the next pass) and at the end.
  int64_t i = 0, block_from = 0;
  for (;;) {
    // Blocks of kBlock bitwise-equal vectors (f32, bf16): one OR of XORs
    // tests them, one maximum of |g| screens finiteness and gives max |g|,
    // and the window test of g*g is done per lane with no branch until the
    // end of the block. A block that misses any test (or comes before the
    // maxima and the g*g window are placed) goes vector by vector below,
    // which accounts for it exactly as well: this only saves operations.
    if constexpr (!kF16) {
      constexpr int kBlock = 4;
      while (i >= block_from && have_equal_base && s.max_abs_index >= 0 && s.max_rel_index >= 0 &&
             i + kBlock * N <= n) {
        VU gbk[kBlock], diff = hn::Zero(du);
        HWY_UNROLL(kBlock) for (int k = 0; k < kBlock; ++k) {  // unrolled: gbk, gak stay in registers
          gbk[k] = F32Bits<kKind>(du, LoadWords<kKind>(du, g + i + k * N));
          diff = hn::Or(diff, hn::Xor(gbk[k], F32Bits<kKind>(du, LoadWords<kKind>(du, c + i + k * N))));
        }
        if (!hn::AllTrue(du, hn::Eq(diff, hn::Zero(du)))) {
          // No block is tried again before the first vector with a
          // difference is passed (sparse differences would fail the blocks
          // that start before it one after another).
          int64_t k = 0;
          while (k + 1 < kBlock && hn::AllTrue(du, hn::Eq(LoadWords<kKind>(du, g + i + k * N), LoadWords<kKind>(du, c + i + k * N)))) ++k;
          block_from = i + (k + 1) * N;
          break;
        }
        VU gak[kBlock], mx = hn::Zero(du);
        auto in_window = hn::Eq(mx, mx);  // all true
        const VU lo_bits = hn::Set(du, win.equal_lo_bits), span_bits = hn::Set(du, win.equal_span_bits);
        HWY_UNROLL(kBlock) for (int k = 0; k < kBlock; ++k) {  // unrolled: gbk, gak stay in registers
          gak[k] = hn::And(gbk[k], abs_mask);
          mx = hn::Max(mx, gak[k]);
          in_window = hn::And(in_window, hn::Or(hn::Eq(gak[k], hn::Zero(du)),
                                                hn::Lt(hn::Sub(gak[k], lo_bits), span_bits)));
        }
        // In the window implies finite (its exponents stop below 255).
        if (!hn::AllTrue(du, in_window) || !hn::AllTrue(du, hn::Lt(mx, inf_bits))) {
          // As for a difference: no block is tried again before the first
          // vector with a lane outside the window is passed (a small |g|
          // in the block's last vector failed four blocks in a row).
          int64_t k = 0;
          while (k + 1 < kBlock && hn::AllTrue(du, hn::Or(hn::Eq(gak[k], hn::Zero(du)),
                                                          hn::Lt(hn::Sub(gak[k], lo_bits), span_bits))))
            ++k;
          block_from = i + (k + 1) * N;
          break;
        }
        win.make_room(dd, kBlock);
        HWY_UNROLL(kBlock) for (int k = 0; k < kBlock; ++k) {  // unrolled: gbk, gak stay in registers
          const auto gfk = hn::BitCast(df, gbk[k]);
          const VD g_lo = hn::PromoteTo(dd, hn::LowerHalf(dfh, gfk)), g_hi = hn::PromoteTo(dd, hn::UpperHalf(dfh, gfk));
          win.add_equal_unchecked(dd, hn::Mul(g_lo, g_lo));
          win.add_equal_unchecked(dd, hn::Mul(g_hi, g_hi));
          equal_ratio += hn::CountTrue(du, hn::Not(hn::Lt(gak[k], hn::Set(du, ratio_bits))));
        }
        win.pending += kBlock;
        direct_run = 0;
        vmax_g = hn::Max(vmax_g, hn::BitCast(df, mx));
        equal_count += static_cast<uint64_t>(kBlock * N);
        i += kBlock * N;
      }
    }
    VU fg, fc;                       // what the full path takes in this pass
    int64_t valid = N;               // its pairs (the rest is padding)
    const int64_t* idx = nullptr;    // their indices: null for the vector at i
    auto stage_vector = [&](int64_t count) HWY_ATTR PEAT_ALWAYS_INLINE {
      for (int64_t j = count; j < N; ++j) stage_g[j] = stage_c[j] = pad_word;
      fg = hn::Load(du, stage_g);
      fc = hn::Load(du, stage_c);
      valid = count;
      idx = stage_i;
    };
    if (i + N > n) {
      if (staged == 0) break;
      stage_vector(staged);  // the end: the stage is emptied last
    } else {
      const VU gw = LoadWords<kKind>(du, g + i), cw = LoadWords<kKind>(du, c + i);
      const VU gb = F32Bits<kKind>(du, gw), cb = F32Bits<kKind>(du, cw);
      const auto eq = hn::Eq(gb, cb);
      if (hn::AllTrue(du, eq)) {
        if (hn::AllTrue(du, FiniteLanes<kKind>(du, gw, hn::And(gb, abs_mask)))) {
          equal_lanes(gb, eq, i);
          i += N;
          direct_run = 0;
          continue;
        }
      } else if (staging && !hn::AllFalse(du, eq)) {
        const auto ne = hn::Not(eq);
        const int64_t k = static_cast<int64_t>(hn::CountTrue(du, ne));
        if (4 * k <= N && hn::AllTrue(du, hn::Or(FiniteLanes<kKind>(du, gw, hn::And(gb, abs_mask)), ne)) &&
            hn::AllTrue(du, hn::Or(OrdinaryLanes<kKind>(du, gb, cb, gw, cw, p.ratio_min_abs), eq))) {
          equal_lanes(gb, eq, i);
          hn::StoreU(hn::Compress(gw, ne), du, stage_g + staged);
          hn::StoreU(hn::Compress(cw, ne), du, stage_c + staged);
          HWY_ALIGN uint32_t lane[kMaxN];
          hn::Store(hn::Compress(hn::Iota(du, 0), ne), du, lane);
          for (int64_t t = 0; t < k; ++t) stage_i[staged + t] = index0 + i + lane[t];
          staged += k;
          s.staged += static_cast<uint64_t>(k);
          i += N;
          direct_run = 0;
          if (staged < N) continue;
          stage_vector(N);
        }
      }
      if constexpr (!kStage) {
        if (idx == nullptr && !hn::AllTrue(du, eq) && 4 * static_cast<int64_t>(hn::CountTrue(du, hn::Not(eq))) <= N)
          switch_regime = ++splittable >= kRegimeSwitch;
      } else {
        if (idx == nullptr && staged == 0) switch_regime = ++direct_run >= kRegimeSwitch;
      }
      if (idx == nullptr) {
        if (staged > 0) {
          stage_vector(staged);  // the stage first: maxima see pairs in index order
        } else {
          fg = gw;
          fc = cw;
        }
      }
    }
    // Staged pairs are ordinary and pass the tolerance test (staging is off
    // in map runs): only a vector of the data can stop the full path.
    if (!full_vector(fg, fc, valid, idx, i)) break;
    if (idx == nullptr) {
      i += N;
      if (HWY_UNLIKELY(switch_regime)) {
        s.switch_regime = true;
        break;
      }
    } else {
      for (int64_t j = N; j < staged; ++j) {
        stage_g[j - N] = stage_g[j];
        stage_c[j - N] = stage_c[j];
        stage_i[j - N] = stage_i[j];
      }
      staged = valid < N ? 0 : staged - N;
    }
  }
  xor_bits.finish(du);
  top_bits.finish(du);
  top_set_bits.finish(du);
  low_bits.finish(du);
  buckets.finish(du);
  if (i == 0) return 0;  // no vector taken: the windows are empty

  s.count += static_cast<uint64_t>(i);
  s.finite += static_cast<uint64_t>(i);
  s.bitwise += bitwise;
  s.tolerance_fail += fails;
  win.flush(dd);
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

// Staging (kStage) helps vectors with few differing pairs and costs the
// others: its branch alone slows the full path by a few per cent. So a call
// runs in one of two regimes, each an instantiation of FastT: staging, left
// after kRegimeSwitch vectors in a row that the full path took whole; and
// not staging, left after the full path took kRegimeSwitch vectors that
// could have been split. A switch ends one FastT call and starts the other
// at the next vector (results are exact either way: only speed changes).
template <int kKind, typename W>
HWY_INLINE int64_t Fast(const W* HWY_RESTRICT g, const W* HWY_RESTRICT c, int64_t n, int64_t index0,
                        const F32FastParams& p, F32FastState& s) {
  int64_t done = 0;
  bool staging = true;  // a run starts staging: sparse differences are the common case
  for (;;) {
    s.switch_regime = false;
    const int64_t k = staging ? FastT<kKind, W, true>(g + done, c + done, n - done, index0 + done, p, s)
                              : FastT<kKind, W, false>(g + done, c + done, n - done, index0 + done, p, s);
    done += k;
    if (!s.switch_regime || done >= n) return done;
    staging = !staging;
  }
}

int64_t F32Fast(const uint32_t* HWY_RESTRICT g, const uint32_t* HWY_RESTRICT c, int64_t n, int64_t index0,
                const F32FastParams& p, F32FastState& s) {
  return Fast<0>(g, c, n, index0, p, s);
}

int64_t BF16Fast(const uint16_t* HWY_RESTRICT g, const uint16_t* HWY_RESTRICT c, int64_t n, int64_t index0,
                 const F32FastParams& p, F32FastState& s) {
  return Fast<1>(g, c, n, index0, p, s);
}

int64_t F16Fast(const uint16_t* HWY_RESTRICT g, const uint16_t* HWY_RESTRICT c, int64_t n, int64_t index0,
                const F32FastParams& p, F32FastState& s) {
  return Fast<2>(g, c, n, index0, p, s);
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
