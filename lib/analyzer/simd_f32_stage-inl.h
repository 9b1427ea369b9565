// Staging the few differing pairs of a group of vectors without a branch on
// the data, for the f32 signature fast path (simd_f32.cpp, pass 1).
//
// With sparse differences (a deterministic candidate beside the golden, a
// few pairs in a hundred differing), which groups hold a differing pair is
// random, and a branch on it mispredicts about every other group: measured,
// the costliest part of such a run. StageFewDiffering writes two stage slots
// for every group whatever it holds, and counts only the live ones.
//
// Included once per Highway target (toggle guard, as Highway's -inl headers).
#if defined(PEAT_ANALYZER_SIMD_F32_STAGE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef PEAT_ANALYZER_SIMD_F32_STAGE_INL_H_
#undef PEAT_ANALYZER_SIMD_F32_STAGE_INL_H_
#else
#define PEAT_ANALYZER_SIMD_F32_STAGE_INL_H_
#endif

#include <hwy/highway.h>

#include "backends/common/signature_element.h"

#include <cstdint>
#include <cstring>

HWY_BEFORE_NAMESPACE();
namespace peat::impl::analyzer {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The lanes of mask m as the low bits of a word (lane j: bit j).
template <class DU>
HWY_INLINE uint64_t MaskBits(DU du, hn::Mask<DU> m) {
#if HWY_TARGET <= HWY_AVX3
  (void)du;
  return static_cast<uint64_t>(m.raw);  // the mask register's bits, without a trip through memory
#else
  uint8_t mb[8] = {};
  (void)hn::StoreMaskBits(du, m, mb);
  uint64_t bits;
  std::memcpy(&bits, mb, 8);
  return bits;
#endif
}

// The pairs of a group of `lanes` words at g, c (kKind 0: f32 words, 1:
// bf16 words, as simd_f32.cpp names them; not f16) whose lanes are set in
// `bits` (lanes <= 64). When at most two differ and each passes the quick
// ordinary test (c in g's binade: the XOR of the f32 bits below 2^23; |g|
// bits in [fast_lo, fast_lo + fast_span)), their words go to
// stage_g[staged], stage_c[staged] and their element offsets (offset +
// lane) to stage_at[staged], in lane order, and it returns true. Otherwise it
// returns false with `staged` as it was (the slots it wrote are not
// counted). Needs room for two slots past `staged`.
template <int kKind, typename W>
HWY_INLINE bool StageFewDiffering(uint64_t bits, int64_t lanes, const W* HWY_RESTRICT g, const W* HWY_RESTRICT c,
                                  uint32_t offset, uint32_t fast_lo, uint32_t fast_span, uint32_t* stage_g,
                                  uint32_t* stage_c, uint32_t* stage_at, int64_t& staged) {
  static_assert(kKind != 2, "f16 words do not hold f32 bits in their top half");
  constexpr bool kBF16 = kKind == 1;
  if (hd::popcount64(bits) > 2) return false;
  const uint64_t last = uint64_t{1} << (lanes - 1);  // a lane of the group, for an unused slot
  int64_t at = staged;
  uint32_t refused = 0;  // arithmetic, not && and ||: no branch on the data
  for (int t = 0; t < 2; ++t) {
    const int64_t j = hd::ctz64(bits | last);
    const uint32_t gw = g[j], cw = c[j];
    stage_g[at] = gw;
    stage_c[at] = cw;
    stage_at[at] = offset + static_cast<uint32_t>(j);
    const uint32_t gb = kBF16 ? gw << 16 : gw, x = gb ^ (kBF16 ? cw << 16 : cw);
    const uint32_t live = bits != 0 ? 1u : 0u;
    refused += live & (static_cast<uint32_t>(x >= 0x00800000u) |
                       static_cast<uint32_t>((gb & 0x7FFFFFFFu) - fast_lo >= fast_span));
    at += live;
    bits &= bits - 1;
  }
  if (refused != 0) return false;
  staged = at;
  return true;
}

}  // namespace HWY_NAMESPACE
}  // namespace peat::impl::analyzer
HWY_AFTER_NAMESPACE();

#endif  // toggle guard
