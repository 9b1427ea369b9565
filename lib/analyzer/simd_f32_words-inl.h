// Words and pair classes of the f32 signature fast path (simd_f32.cpp): a
// vector of golden or candidate words loaded as u32 lanes, their f32 bits,
// the lanes whose pair the fast path may take (finite goldens; ordinary
// pairs, as simd_f32.hpp defines them), and the staging of a group's few
// differing pairs.
//
// kKind is the kernel's format: 0 f32 (uint32_t words), 1 bf16 (uint16_t,
// the top half of an f32), 2 f16 (uint16_t; only normal values are taken).
//
// Included once per Highway target (toggle guard, as Highway's -inl headers).
#if defined(PEAT_ANALYZER_SIMD_F32_WORDS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef PEAT_ANALYZER_SIMD_F32_WORDS_INL_H_
#undef PEAT_ANALYZER_SIMD_F32_WORDS_INL_H_
#else
#define PEAT_ANALYZER_SIMD_F32_WORDS_INL_H_
#endif

#include <hwy/highway.h>

#include "backends/common/signature_element.h"

#include <cstdint>
#include <cstring>

HWY_BEFORE_NAMESPACE();
namespace peat::impl::analyzer {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// One vector of words at `at` as u32 lanes (f16, bf16: widened).
template <int kKind, class DU, typename W>
HWY_INLINE hn::Vec<DU> LoadWords(DU du, const W* HWY_RESTRICT at) {
  if constexpr (kKind != 0) {
    const hn::Rebind<uint16_t, DU> d16;
    return hn::PromoteTo(du, hn::LoadU(d16, at));
  } else {
    return hn::LoadU(du, at);
  }
}

// The f32 bits of words w. Normal f16 -> f32: sign to bit 31, exponent +
// 112, mantissa << 13 (one to one on all words: equal bits mean equal words).
template <int kKind, class DU>
HWY_INLINE hn::Vec<DU> F32Bits(DU du, hn::Vec<DU> w) {
  if constexpr (kKind == 2) {
    const auto rebias = hn::Set(du, 0x38000000u), m15 = hn::Set(du, 0x7FFFu), s16 = hn::Set(du, 0x8000u);
    return hn::Or(hn::ShiftLeft<16>(hn::And(w, s16)), hn::Add(hn::ShiftLeft<13>(hn::And(w, m15)), rebias));
  } else if constexpr (kKind == 1) {
    return hn::ShiftLeft<16>(w);
  } else {
    (void)du;
    return w;
  }
}

// Lanes whose golden is finite (f16: normal, the values the widening holds
// for); gw: the golden words, ga: |golden| as f32 bits.
template <int kKind, class DU>
HWY_INLINE hn::Mask<DU> FiniteLanes(DU du, hn::Vec<DU> gw, hn::Vec<DU> ga) {
  if constexpr (kKind == 2) {
    const auto exp_mask = hn::Set(du, 0x7C00u), lo = hn::Set(du, 0x0400u);
    const auto ge = hn::And(gw, exp_mask);
    return hn::And(hn::Not(hn::Lt(ge, lo)), hn::Lt(ge, exp_mask));
  } else {
    (void)gw;
    return hn::Lt(ga, hn::Set(du, 0x7F800000u));
  }
}

// Lanes holding an ordinary pair (see simd_f32.hpp): gb, cb the f32 bits,
// gw, cw the words; ratio_min_abs as F32FastParams holds it.
template <int kKind, class DU>
HWY_INLINE hn::Mask<DU> OrdinaryLanes(DU du, hn::Vec<DU> gb, hn::Vec<DU> cb, hn::Vec<DU> gw, hn::Vec<DU> cw,
                                      float ratio_min_abs) {
  const hn::RebindToFloat<DU> df;
  const auto abs_mask = hn::Set(du, 0x7FFFFFFFu), inf_bits = hn::Set(du, 0x7F800000u);
  const auto min_normal = hn::Set(du, 0x00800000u), sign_mask = hn::Set(du, 0x80000000u);
  const auto ga = hn::And(gb, abs_mask), ca = hn::And(cb, abs_mask);
  const auto agf = hn::BitCast(df, ga), acf = hn::BitCast(df, ca);
  const auto aeb = hn::BitCast(du, hn::Abs(hn::Sub(hn::BitCast(df, cb), hn::BitCast(df, gb))));
  auto ok = hn::And(hn::Lt(ga, inf_bits), hn::Lt(ca, inf_bits));
  ok = hn::And(ok, hn::Not(hn::Lt(ga, min_normal)));
  ok = hn::And(ok, hn::Eq(hn::And(hn::Xor(gb, cb), sign_mask), hn::Zero(du)));
  ok = hn::And(ok, hn::RebindMask(du, hn::And(hn::Ge(acf, hn::Mul(agf, hn::Set(df, 0.5f))),
                                             hn::Le(acf, hn::Mul(agf, hn::Set(df, 2.0f))))));
  ok = hn::And(ok, hn::RebindMask(du, hn::Ge(agf, hn::Set(df, ratio_min_abs))));
  ok = hn::And(ok, hn::Or(hn::Eq(aeb, hn::Zero(du)), hn::Not(hn::Lt(aeb, min_normal))));
  if constexpr (kKind == 2) {
    // Both f16 words normal: exponent field in [1, 30].
    const auto exp_mask = hn::Set(du, 0x7C00u), lo = hn::Set(du, 0x0400u);
    const auto ge = hn::And(gw, exp_mask), ce = hn::And(cw, exp_mask);
    ok = hn::And(ok, hn::And(hn::Not(hn::Lt(ge, lo)), hn::Lt(ge, exp_mask)));
    ok = hn::And(ok, hn::And(hn::Not(hn::Lt(ce, lo)), hn::Lt(ce, exp_mask)));
  } else {
    (void)gw, (void)cw;
  }
  return ok;
}

}  // namespace HWY_NAMESPACE
}  // namespace peat::impl::analyzer
HWY_AFTER_NAMESPACE();

#endif  // toggle guard
