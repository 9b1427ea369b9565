// SIMD fast path of the f32 signature (see simd_f32.hpp), compiled once per
// Highway target and dispatched at run time.
//
// Floating-point contraction is off in this file: the tolerance test
// |e| > atol + rtol |g| must round exactly as the scalar definition does
// (a fused multiply-add would change which pairs fail at the boundary).
#pragma GCC optimize("fp-contract=off")

// AVX3_DL (Ice Lake, Zen 4 and later: VPOPCNT, VBMI2, ...) is a Highway
// target only on request; pass 3's popcount is one instruction there
// instead of a nibble lookup. It is requested build-wide (top
// CMakeLists.txt says why), not here.

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

// Vectors of pairs per block: pass 1 over a block stages its differing pairs
// (at most kBlockVectors * 16 with 16 lanes), and passes 2 and 3 take the
// stage once it holds more than a block's worth (sparse differences: many
// blocks' pairs at once), while it is in the L1 cache (24 KiB with 16 lanes).
constexpr int64_t kBlockVectors = 64;

// The kernel over words of type W for kKind 0: f32 (uint32_t words); 1: bf16
// (uint16_t, the top half of an f32: widened by a 16-bit shift, its ULP
// distance is the f32 one shifted right by 16, its bits are the f32 bits
// 16..31); 2: f16 (uint16_t; only normal f16 values are ordinary: widened to
// f32 by rebiasing the exponent, their ULP distance is the f32 one shifted
// right by 13, and the XOR is taken of the f16 words themselves).
//
// Work goes by blocks of kBlockVectors vectors, in three passes, so that
// each pass keeps its own state in registers:
//   1. every pair: the golden's share, which is all of a bitwise-equal
//      pair's (counts, g*g, max |g|, ratio pairs); the differing pairs of
//      each vector (each ordinary, else the pass stops before the vector) go
//      into the stage, in index order. f32 and bf16 take a full block in
//      fast_block's two sweeps (the first at memory speed), f16 and the
//      blocks fast_block refuses a vector at a time (take_vector);
//   2. the staged pairs, a vector at a time, once the stage holds more than
//      a block's worth and at the end: the floating-point share of a
//      differing pair (tolerance, e, |e|, e*e, g*e, d, d*d, maxima, ratio
//      extrema);
//   3. the staged pairs again: the integer share (ULP, relative-error and
//      popcount buckets, XOR bits, highest differing bit, lowest set bit).
// Pass 1 counts every pair in bucket 0 of the three bucket histograms; the
// staged pairs (buckets >= 1) and the stage's padding (bucket 0 in pass 3)
// are taken back from it at the end. The padding of a part-filled stage
// vector is the first staged golden paired with itself: an equal pair, which
// adds zero to every sum of passes 2 and 3 and fits the same windows.
template <int kKind, typename W>
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

  const VU abs_mask = hn::Set(du, 0x7FFFFFFFu);
  ExactWindows<decltype(dd)> win;  // simd_f32_windows-inl.h
  win.init(dd, s.acc);
  bool have_golden_base = false, have_error_base = false;

  // Thresholds for screening the maxima: a lane can beat the running maximum
  // only if its f32 value reaches them (confirmed in double below).
  auto floor_float = [](double x) {
    float f = static_cast<float>(x);
    if (static_cast<double>(f) > x) f = std::nextafter(f, -INFINITY);
    return f;
  };
  float t_abs = s.max_abs_index < 0 ? -1.0f : floor_float(s.max_abs);
  float t_rel = s.max_rel_index < 0 ? -1.0f : floor_float(s.max_rel * (1.0 - 0x1p-22));

  // Lanes |g| (as bits) that count as ratio pairs: g != 0 and |g| >=
  // ratio_min (non-negative floats order like their bits). Every ordinary
  // pair is one.
  uint32_t ratio_bits;
  {
    const float rm = p.ratio_min_abs;
    std::memcpy(&ratio_bits, &rm, 4);
    if (!(rm > 0)) ratio_bits = 1;
  }
  // The quick test of a differing pair in stage_vector: |g| (bits) in
  // [fast_lo_bits, fast_lo_bits + fast_span_bits), i.e. finite, at least
  // ratio_min_abs and at least 2^-103.
  const uint32_t fast_lo_bits = std::max(ratio_bits, uint32_t{24} << 23);
  const uint32_t fast_span_bits = fast_lo_bits < 0x7F800000u ? 0x7F800000u - fast_lo_bits : 0;
  auto vmax_g = hn::Zero(du);                // max |g| (bits)
  uint64_t ratio_all = 0;                    // ratio pairs among all pairs taken
  uint64_t staged_total = 0, pads_total = 0;  // differing pairs, and the stage's padding lanes
  uint64_t fails = 0;

  constexpr int64_t kMaxN = static_cast<int64_t>(hn::MaxLanes(du));
  // Room for two blocks' pairs and a vector more (the compress stores and the
  // padding write up to a vector past the pairs).
  constexpr int64_t kStageRoom = (2 * kBlockVectors + 1) * kMaxN;
  HWY_ALIGN uint32_t stage_g[kStageRoom], stage_c[kStageRoom];
  HWY_ALIGN uint32_t stage_at[kStageRoom];  // element offset from stage_base
  int64_t staged = 0, stage_base = 0;

  // ---- Pass 1: the golden's share of the vector at element `at` (f32 bits
  // gb, |g| bits ga), all of whose lanes are taken. Lanes eq are the
  // bitwise-equal ones (they can set the maxima when none is held yet: |e|
  // = 0 and, where g != 0, rel = 0, at the lowest such index).
  auto golden_share = [&](VU gb, VU ga, auto eq, int64_t at) HWY_ATTR PEAT_ALWAYS_INLINE {
    const auto gf = hn::BitCast(df, gb);
    vmax_g = hn::Max(vmax_g, ga);
    ratio_all += hn::CountTrue(du, hn::Not(hn::Lt(ga, hn::Set(du, ratio_bits))));
    const VD g_lo = hn::PromoteTo(dd, hn::LowerHalf(dfh, gf)), g_hi = hn::PromoteTo(dd, hn::UpperHalf(dfh, gf));
    const VD g2_lo = hn::Mul(g_lo, g_lo), g2_hi = hn::Mul(g_hi, g_hi);
    if (HWY_UNLIKELY(!have_golden_base)) {
      // Placed by the first vector with a non-zero g (a vector of zeros adds
      // nothing): placed by zeros, it would leave every later term to the
      // scalar accumulator.
      const double m = hn::GetLane(hn::MaxOfLanes(dd, hn::Max(g2_lo, g2_hi)));
      if (m > 0) {
        win.set_golden_base(dd, m);
        have_golden_base = true;
      }
    }
    if (have_golden_base) {
      const auto fits = hn::Or(hn::Eq(ga, hn::Zero(du)), hn::Lt(hn::Sub(ga, hn::Set(du, win.golden_lo_bits)),
                                                              hn::Set(du, win.golden_span_bits)));
      win.add_halves(dd, kWinSqGolden, g2_lo, g2_hi, hn::AllTrue(du, fits));
      win.vector_done(dd);
    }
    if (HWY_UNLIKELY(s.max_abs_index < 0) && !hn::AllFalse(du, eq)) {
      const intptr_t first = hn::FindFirstTrue(du, eq);
      s.max_abs = 0;
      s.max_abs_index = index0 + at + first;
      s.max_abs_g = s.max_abs_c = static_cast<double>(hn::ExtractLane(gf, static_cast<size_t>(first)));
      t_abs = 0;
    }
    if (HWY_UNLIKELY(s.max_rel_index < 0)) {
      const intptr_t first = hn::FindFirstTrue(du, hn::And(eq, hn::Ne(ga, hn::Zero(du))));
      if (first >= 0) {
        s.max_rel = 0;
        s.max_rel_index = index0 + at + first;
        t_rel = 0;
      }
    }
  };

  // The pairs of lanes ne of the vector of words gw, cw at element offset
  // `off` from stage_base into the stage, in lane order. Compressed in
  // registers, then a plain store (the stage has a vector of room past its
  // end): compressing stores to memory are slow on some CPUs.
  auto stage_words = [&](VU gw, VU cw, auto ne, int64_t off) HWY_ATTR PEAT_ALWAYS_INLINE {
    hn::StoreU(hn::Compress(gw, ne), du, stage_g + staged);
    hn::StoreU(hn::Compress(cw, ne), du, stage_c + staged);
    hn::StoreU(hn::Compress(hn::Add(hn::Iota(du, 0), hn::Set(du, static_cast<uint32_t>(off))), ne), du,
               stage_at + staged);
    staged += static_cast<int64_t>(hn::CountTrue(du, ne));
  };

  // Pass 1, the differing pairs (lanes not eq) of the vector of words gw, cw
  // (f32 bits gb, cb) at element offset `off` from stage_base: staged,
  // in lane order, or false, having staged nothing, when one is not ordinary
  // or an equal one not finite, or (spatial map) one fails the tolerance.
  auto stage_differing = [&](VU gw, VU cw, VU gb, VU cb, auto eq, int64_t off) HWY_ATTR PEAT_ALWAYS_INLINE -> bool {
    const auto ne = hn::Not(eq);
    if (!hn::AllTrue(du, hn::Or(OrdinaryLanes<kKind>(du, gb, cb, gw, cw, p.ratio_min_abs), eq)) ||
        !hn::AllTrue(du, hn::Or(FiniteLanes<kKind>(du, gw, hn::And(gb, abs_mask)), ne)))
      return false;
    if (p.stop_on_tolerance_fail) {
      // |e| > atol + rtol |g| in double (equal lanes: e = 0 passes).
      const auto gf = hn::BitCast(df, gb);
      const auto e = hn::Sub(hn::BitCast(df, cb), gf);
      const VD rtol = hn::Set(dd, p.rtol), atol = hn::Set(dd, p.atol);
      const VD g_lo = hn::PromoteTo(dd, hn::LowerHalf(dfh, gf)), g_hi = hn::PromoteTo(dd, hn::UpperHalf(dfh, gf));
      const VD e_lo = hn::PromoteTo(dd, hn::LowerHalf(dfh, e)), e_hi = hn::PromoteTo(dd, hn::UpperHalf(dfh, e));
      if (!hn::AllFalse(dd, hn::Gt(hn::Abs(e_lo), hn::Add(atol, hn::Mul(rtol, hn::Abs(g_lo))))) ||
          !hn::AllFalse(dd, hn::Gt(hn::Abs(e_hi), hn::Add(atol, hn::Mul(rtol, hn::Abs(g_hi))))))
        return false;
    }
    stage_words(gw, cw, ne, off);
    return true;
  };

  // Pass 1 for one vector of words at element i: false, having taken
  // nothing, when stage_differing refuses it or (all pairs equal) a golden is
  // not finite.
  auto take_vector = [&](int64_t i) HWY_ATTR PEAT_ALWAYS_INLINE -> bool {
    const VU gw = LoadWords<kKind>(du, g + i), cw = LoadWords<kKind>(du, c + i);
    const VU gb = F32Bits<kKind>(du, gw), cb = F32Bits<kKind>(du, cw);
    const VU ga = hn::And(gb, abs_mask);
    const auto eq = hn::Eq(gb, cb);
    if (HWY_LIKELY(hn::AllTrue(du, eq))) {
      if (!hn::AllTrue(du, FiniteLanes<kKind>(du, gw, ga))) return false;
    } else if (!stage_differing(gw, cw, gb, cb, eq, i - stage_base)) {
      return false;
    }
    golden_share(gb, ga, eq, i);
    return true;
  };

  // Pass 1, the differing pairs of the vector at element `at` (f32, bf16),
  // loaded again (from the L1 cache: fast_block has just read it), as
  // stage_differing takes them. A differing pair is ordinary at once when c
  // lies in g's binade (same sign and exponent: x < 2^23) and |g| is finite,
  // at least ratio_min_abs and at least 2^-103 (so that e, a non-zero
  // multiple of g's ulp, is normal); a vector whose pairs all pass that
  // quick test is staged without the full one.
  auto stage_vector = [&](int64_t at) HWY_ATTR PEAT_ALWAYS_INLINE -> bool {
    const VU gw = LoadWords<kKind>(du, g + at), cw = LoadWords<kKind>(du, c + at);
    const VU gb = F32Bits<kKind>(du, gw), cb = F32Bits<kKind>(du, cw), x = hn::Xor(gb, cb);
    const auto eq = hn::Eq(x, hn::Zero(du));
    const auto quick = hn::And(hn::Lt(x, hn::Set(du, 0x00800000u)),
                               hn::Lt(hn::Sub(hn::And(gb, abs_mask), hn::Set(du, fast_lo_bits)), hn::Set(du, fast_span_bits)));
    if (p.stop_on_tolerance_fail || !hn::AllTrue(du, hn::Or(eq, quick)))
      return stage_differing(gw, cw, gb, cb, eq, at - stage_base);
    stage_words(gw, cw, hn::Not(eq), at - stage_base);
    return true;
  };

  // Pass 1 over the block of kBlockVectors vectors at element `at` (f32,
  // bf16), in two sweeps. The first reads every pair once and does only
  // what a bitwise-equal pair needs: g*g into its window with no check, the
  // minimum and maximum of |g|, and one bit per vector saying whether any
  // of its pairs differ. No branch depends on the data, and the stage is
  // not touched, so the loop keeps its state in registers and runs at memory
  // speed. The second stages the differing vectors' pairs (stage_vector),
  // from the L1 cache: one bit per vector, not per group of 2 or 4, stages
  // only the vectors that differ (bench_signature, 1 % of pairs differing,
  // interleaved: 19.7, 21.1 and 23.0 ms on 1 thread; the same with every
  // pair equal). It returns false, with the windows, the scalar accumulators
  // and the stage as they were, when a golden is not finite or stage_vector
  // refused a vector: the block then goes vector by vector.
  static_assert(kBlockVectors <= 64, "one bit per vector in a word");
  auto fast_block = [&](int64_t at) HWY_ATTR PEAT_ALWAYS_INLINE -> bool {
    win.make_room(dd, static_cast<int>(kBlockVectors));  // no flush inside the block
    const VD hi0 = win.hi[kWinSqGolden], lo0 = win.lo[kWinSqGolden];
    const VU one = hn::Set(du, 1u);
    VU mx = hn::Zero(du), mn = hn::Set(du, 0xFFFFFFFFu), mn_nonzero = mn;  // the last: min of |g| - 1, wrapping
    uint64_t differing = 0;
    VD hi2 = hn::Zero(dd), lo2 = hi2;  // the upper halves' terms: two chains of adds, not one
    // Unrolled: 8-10 % faster than the plain loop (interleaved runs).
    HWY_UNROLL(4) for (int64_t v = 0; v < kBlockVectors; ++v) {
      const int64_t j = at + v * N;
      const VU gb = F32Bits<kKind>(du, LoadWords<kKind>(du, g + j));
      const VU x = hn::Xor(gb, F32Bits<kKind>(du, LoadWords<kKind>(du, c + j)));
      const VU ga = hn::And(gb, abs_mask);
      mx = hn::Max(mx, ga);
      mn = hn::Min(mn, ga);
      mn_nonzero = hn::Min(mn_nonzero, hn::Sub(ga, one));
      const auto gf = hn::BitCast(df, gb);
      const VD g_lo = hn::PromoteTo(dd, hn::LowerHalf(dfh, gf)), g_hi = hn::PromoteTo(dd, hn::UpperHalf(dfh, gf));
      win.add(dd, kWinSqGolden, hn::Mul(g_lo, g_lo));
      VD r, rest;
      win.split(dd, kWinSqGolden, hn::Mul(g_hi, g_hi), r, rest);
      hi2 = hn::Add(hi2, r);
      lo2 = hn::Add(lo2, rest);
      differing |= static_cast<uint64_t>(!hn::AllTrue(du, hn::Eq(x, hn::Zero(du)))) << v;
    }
    // Exact: make_room counted both halves of every vector of the block.
    win.hi[kWinSqGolden] = hn::Add(win.hi[kWinSqGolden], hi2);
    win.lo[kWinSqGolden] = hn::Add(win.lo[kWinSqGolden], lo2);
    // A golden not finite, or a vector that stage_vector refuses, refuses the
    // block (before any lane has gone to the scalar accumulators below).
    const VU lo_bits = hn::Set(du, win.golden_lo_bits), span_bits = hn::Set(du, win.golden_span_bits);
    const int64_t staged_before = staged;
    bool ok = hn::AllTrue(du, hn::Lt(mx, hn::Set(du, 0x7F800000u)));
    for (uint64_t b = differing; ok && b != 0; b &= b - 1)
      ok = stage_vector(at + static_cast<int64_t>(hd::ctz64(b)) * N);
    if (!ok) {
      win.hi[kWinSqGolden] = hi0;
      win.lo[kWinSqGolden] = lo0;
      staged = staged_before;
      return false;
    }
    // Unless every non-zero |g| was in the window, g*g goes in again, each
    // lane checked (those outside go to the scalar accumulators).
    if (!hn::AllFalse(du, hn::Lt(mn_nonzero, hn::Sub(lo_bits, one))) ||
        !hn::AllTrue(du, hn::Lt(mx, hn::Add(lo_bits, span_bits)))) {
      win.hi[kWinSqGolden] = hi0;
      win.lo[kWinSqGolden] = lo0;
      for (int64_t v = 0; v < kBlockVectors; ++v) {
        const auto gf = hn::BitCast(df, F32Bits<kKind>(du, LoadWords<kKind>(du, g + at + v * N)));
        const VD g_lo = hn::PromoteTo(dd, hn::LowerHalf(dfh, gf)), g_hi = hn::PromoteTo(dd, hn::UpperHalf(dfh, gf));
        win.add<true>(dd, kWinSqGolden, hn::Mul(g_lo, g_lo));
        win.add<true>(dd, kWinSqGolden, hn::Mul(g_hi, g_hi));
      }
    }
    win.pending += static_cast<int>(kBlockVectors);
    vmax_g = hn::Max(vmax_g, mx);
    if (hn::AllFalse(du, hn::Lt(mn, hn::Set(du, ratio_bits)))) {
      ratio_all += static_cast<uint64_t>(kBlockVectors * N);
    } else {  // zeros or tiny goldens: lane by lane
      for (int64_t v = 0; v < kBlockVectors; ++v) {
        const VU ga = hn::And(F32Bits<kKind>(du, LoadWords<kKind>(du, g + at + v * N)), abs_mask);
        ratio_all += hn::CountTrue(du, hn::Not(hn::Lt(ga, hn::Set(du, ratio_bits))));
      }
    }
    return true;
  };

  // ---- Pass 2: the floating-point share of the staged pairs at stage
  // offset at (a full vector; its lanes from `valid` on are padding).
  const VD rtol = hn::Set(dd, p.rtol), atol = hn::Set(dd, p.atol);
  VD rmin = hn::Set(dd, s.ratio_min), rmax = hn::Set(dd, s.ratio_max);
  auto float_share = [&](int64_t at, int64_t valid) HWY_ATTR PEAT_ALWAYS_INLINE {
    const VU gb = F32Bits<kKind>(du, hn::Load(du, stage_g + at)), cb = F32Bits<kKind>(du, hn::Load(du, stage_c + at));
    const VU ga = hn::And(gb, abs_mask);
    const auto gf = hn::BitCast(df, gb), cf = hn::BitCast(df, cb);
    const auto agf = hn::BitCast(df, ga);
    const auto e = hn::Sub(cf, gf);  // exact (ordinary pairs)
    const auto ae = hn::Abs(e);
    const bool padded = valid < N;

    const VD g_lo = hn::PromoteTo(dd, hn::LowerHalf(dfh, gf)), g_hi = hn::PromoteTo(dd, hn::UpperHalf(dfh, gf));
    const VD c_lo = hn::PromoteTo(dd, hn::LowerHalf(dfh, cf)), c_hi = hn::PromoteTo(dd, hn::UpperHalf(dfh, cf));
    const VD e_lo = hn::PromoteTo(dd, hn::LowerHalf(dfh, e)), e_hi = hn::PromoteTo(dd, hn::UpperHalf(dfh, e));
    // Tolerance, in double: |e| > atol + rtol |g| (padding: e = 0, never
    // fails with tolerances >= 0, masked all the same).
    auto fail_lo = hn::Gt(hn::Abs(e_lo), hn::Add(atol, hn::Mul(rtol, hn::Abs(g_lo))));
    auto fail_hi = hn::Gt(hn::Abs(e_hi), hn::Add(atol, hn::Mul(rtol, hn::Abs(g_hi))));
    auto valid_half = [&](int which) HWY_ATTR PEAT_ALWAYS_INLINE {
      const int64_t from = which * (N / 2);
      return hn::FirstN(dd, static_cast<size_t>(std::clamp(valid - from, int64_t{0}, N / 2)));
    };
    if (padded) {
      fail_lo = hn::And(fail_lo, valid_half(0));
      fail_hi = hn::And(fail_hi, valid_half(1));
    }
    fails += hn::CountTrue(dd, fail_lo) + hn::CountTrue(dd, fail_hi);

    // Products of f32 values are exact in double; the ratio c / g is
    // rounded once, as the definition has it, then d = r - 1 exactly.
    const VD e2_lo = hn::Mul(e_lo, e_lo), e2_hi = hn::Mul(e_hi, e_hi);
    const VD ge_lo = hn::Mul(g_lo, e_lo), ge_hi = hn::Mul(g_hi, e_hi);
    const VD one = hn::Set(dd, 1.0);
    const VD r_lo = hn::Div(c_lo, g_lo), r_hi = hn::Div(c_hi, g_hi);
    const VD d_lo = hn::Sub(r_lo, one), d_hi = hn::Sub(r_hi, one);
    const VD d2_lo = hn::Mul(d_lo, d_lo), d2_hi = hn::Mul(d_hi, d_hi);
    if (HWY_UNLIKELY(!have_error_base)) {
      auto top = [&](VD a, VD b) HWY_ATTR { return hn::GetLane(hn::MaxOfLanes(dd, hn::Max(a, b))); };
      win.set_error_bases(dd, top(hn::Abs(e_lo), hn::Abs(e_hi)), top(e2_lo, e2_hi),
                          top(hn::Abs(ge_lo), hn::Abs(ge_hi)), top(d2_lo, d2_hi));
      have_error_base = true;
      if (s.ratio_n == 0) {  // no ratio before this call: start the extrema at lane 0 (always valid)
        s.ratio_min = s.ratio_max = hn::GetLane(r_lo);
        rmin = hn::Set(dd, s.ratio_min);
        rmax = hn::Set(dd, s.ratio_max);
      }
    }
    // The guards of the error windows, on the f32 exponents of g and e.
    const auto eg = hn::BitCast(di, hn::ShiftRight<23>(ga));
    const auto ee = hn::BitCast(di, hn::ShiftRight<23>(hn::BitCast(du, ae)));
    const auto fits = hn::And(hn::And(hn::Not(hn::Lt(eg, hn::Set(di, win.err_golden_min))),
                                      hn::Not(hn::Gt(ee, hn::Set(di, win.err_exp_max)))),
                              hn::Not(hn::Gt(hn::Add(eg, ee), hn::Set(di, win.err_sum_max))));
    const bool error_fits = hn::AllTrue(di, fits);
    win.add_error_halves(dd, e_lo, e_hi, error_fits);
    win.add_halves(dd, kWinSqError, e2_lo, e2_hi, error_fits);
    win.add_halves(dd, kWinGoldenError, ge_lo, ge_hi, error_fits);
    win.add(dd, kWinRatioDev, d_lo);  // always fits (see the windows)
    win.add(dd, kWinRatioDev, d_hi);
    const VD dsq_min = hn::Set(dd, win.dsq_min), dsq_max = hn::Set(dd, win.dsq_max);
    const auto d2_fits = hn::And(hn::And(hn::Lt(d2_lo, dsq_max), hn::Ge(d2_lo, dsq_min)),
                                 hn::And(hn::Lt(d2_hi, dsq_max), hn::Ge(d2_hi, dsq_min)));
    win.add_halves(dd, kWinRatioDevSq, d2_lo, d2_hi, hn::AllTrue(dd, d2_fits));
    win.vector_done(dd);
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
        const int64_t index = index0 + stage_base + stage_at[at + j];
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
  };

  // ---- Pass 3: the integer share of the staged pairs at stage offset at
  // (simd_f32_counters-inl.h).
  IntegerShare<kKind, decltype(du)> integers;
  integers.init(du, s);
  auto integer_share = [&](int64_t at) HWY_ATTR PEAT_ALWAYS_INLINE {
    integers.add(du, hn::Load(du, stage_g + at), hn::Load(du, stage_c + at));
  };
  auto integer_share16 = [&](int64_t at) HWY_ATTR PEAT_ALWAYS_INLINE {
    integers.add16(du, stage_g + at, stage_c + at);
  };

  // The staged pairs, through passes 2 and 3; next: the element pass 1
  // takes next (n at the end).
  auto take_stage = [&](int64_t next) HWY_ATTR PEAT_ALWAYS_INLINE {
    if (staged == 0) return;
    const int64_t vectors = (staged + N - 1) / N, pads = vectors * N - staged;
    for (int64_t j = staged; j < vectors * N; ++j) {
      stage_g[j] = stage_c[j] = stage_g[0];
      stage_at[j] = 0;
    }
    // Meanwhile up to the next two blocks' pairs (from element next on) are
    // fetched into the L2 cache, a line of each tensor per staged vector:
    // when most pairs differ, the passes here leave the memory idle long
    // enough for the hardware prefetchers to stop, and fast_block's sweep
    // then waited on every line.
    const int64_t ahead = std::min<int64_t>(2 * kBlockVectors * N, n - next) * static_cast<int64_t>(sizeof(W));
    const char* const next_g = reinterpret_cast<const char*>(g + next);
    const char* const next_c = reinterpret_cast<const char*>(c + next);
    for (int64_t v = 0; v < vectors; ++v) {
      if (v * 64 < ahead) {
        __builtin_prefetch(next_g + v * 64, 0, 2);
        __builtin_prefetch(next_c + v * 64, 0, 2);
      }
      float_share(v * N, std::min(N, staged - v * N));
    }
    int64_t v = 0;
    for (; v + 16 <= vectors; v += 16) integer_share16(v * N);
    for (; v < vectors; ++v) integer_share(v * N);
    staged_total += static_cast<uint64_t>(staged);
    pads_total += static_cast<uint64_t>(pads);
    staged = 0;
  };

  int64_t i = 0;
  bool stopped = false;
  while (!stopped && i + N <= n) {
    int64_t block_end = std::min(n, i + kBlockVectors * N);
    // A full block goes through fast_block once the maxima and the g*g
    // window are placed (until then, one vector at a time, which places
    // them). A refused block goes vector by vector, which accounts for its
    // pairs exactly as well and stops before the vector that made
    // fast_block refuse it (the caller takes that one).
    bool fast = false;
    if constexpr (!kF16) {
      if (!have_golden_base || s.max_abs_index < 0 || s.max_rel_index < 0)
        block_end = std::min(block_end, i + N);
      else if (block_end - i == kBlockVectors * N)
        fast = fast_block(i);
    }
    if (fast) i = block_end;
    while (i + N <= block_end) {
      if (!take_vector(i)) {
        stopped = true;
        break;
      }
      i += N;
    }
    // The stage is taken when the next block might not fit, or its offsets
    // might pass 2^31, and at the end.
    if (staged > kBlockVectors * N || i - stage_base > (int64_t{1} << 30) || stopped || i + N > n) {
      take_stage(i);
      stage_base = i;
    }
  }
  integers.finish(du);
  if (i == 0) return 0;  // no vector taken: the windows are empty

  s.count += static_cast<uint64_t>(i);
  s.finite += static_cast<uint64_t>(i);
  s.bitwise += staged_total;
  s.staged += staged_total;
  s.tolerance_fail += fails;
  win.flush(dd);
  const double mg = static_cast<double>(hn::GetLane(hn::MaxOfLanes(df, hn::BitCast(df, vmax_g))));
  if (mg > s.max_abs_golden) s.max_abs_golden = mg;
  // Every staged pair is a ratio pair (ordinary: |g| >= ratio_min_abs); the
  // other ratio pairs are bitwise equal, with ratio exactly 1.
  const uint64_t full = staged_total, equal_ratio = ratio_all - staged_total;
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
  s.ratio_n += ratio_all;
  // Bucket 0: every pair was counted there by pass 1, the padding by pass 3;
  // only the bitwise-equal pairs belong there.
  const uint64_t back = staged_total + pads_total;
  s.ulp_hist[0] -= back;
  s.rel_hist[0] -= back;
  s.popcount_hist[0] -= back;
  s.ulp_hist[0] += static_cast<uint64_t>(i);
  s.rel_hist[0] += static_cast<uint64_t>(i);
  s.popcount_hist[0] += static_cast<uint64_t>(i);
  return i;
#endif
}

template <int kKind, typename W>
HWY_INLINE int64_t Fast(const W* HWY_RESTRICT g, const W* HWY_RESTRICT c, int64_t n, int64_t index0,
                        const F32FastParams& p, F32FastState& s) {
  return FastT<kKind, W>(g, c, n, index0, p, s);
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
