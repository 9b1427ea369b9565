// Conflict-free SIMD counters of the f32 signature fast path (simd_f32.cpp):
// per-bit counts of a word (the XOR bits, the highest differing bit) and the
// windowed one-hot bucket histograms (ULP distance, relative error, popcount),
// and the pass that feeds them (IntegerShare).
// Every lane counts into its own bits, nibbles and bytes, so no two lanes
// ever write the same counter: no scatter, no conflicts, and the counts are
// plain integers whatever the order of the vectors. Words come 16 at a time
// through carry-save trees (BitCounts), whose carries go to nibble and byte
// counters (BitTally).
//
// Included once per Highway target (toggle guard, as Highway's -inl headers).
#if defined(PEAT_ANALYZER_SIMD_F32_COUNTERS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef PEAT_ANALYZER_SIMD_F32_COUNTERS_INL_H_
#undef PEAT_ANALYZER_SIMD_F32_COUNTERS_INL_H_
#else
#define PEAT_ANALYZER_SIMD_F32_COUNTERS_INL_H_
#endif

#include <hwy/highway.h>

#include "lib/analyzer/simd_f32.hpp"
#include "lib/analyzer/simd_f32_words-inl.h"

#include <cstdint>

HWY_BEFORE_NAMESPACE();
namespace peat::impl::analyzer {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Counts, for each bit position 0..31, the words added that have it set.
// Words count first in nibble lanes (nibble j of nib[k] counts bit 4j+k, up
// to 15), widened into byte counters every 15 words: byte m of acc[k] then
// counts bit 8m+k (k < 4) and byte m of acc[4+k] bit 8m+4+k. The owner takes
// the counts (take) before a byte can pass 255: once full() says so.
template <class DU>
struct BitTally {
  using VU = hn::Vec<DU>;
  VU nib[4], acc[8];
  int nib_pending = 0, pending = 0;

  HWY_INLINE void init(DU du) {
    for (auto& a : nib) a = hn::Zero(du);
    for (auto& a : acc) a = hn::Zero(du);
    nib_pending = pending = 0;
  }
  HWY_INLINE bool full() const { return pending > 240; }
  // Nibble counters -> byte counters.
  HWY_INLINE void widen(DU du) {
    const VU low_nibbles = hn::Set(du, 0x0F0F0F0Fu);
    for (int k = 0; k < 4; ++k) {
      acc[k] = hn::Add(acc[k], hn::And(nib[k], low_nibbles));
      acc[4 + k] = hn::Add(acc[4 + k], hn::And(hn::ShiftRight<4>(nib[k]), low_nibbles));
      nib[k] = hn::Zero(du);
    }
    pending += nib_pending;
    nib_pending = 0;
  }
  HWY_INLINE void add(DU du, VU x) {
    const VU ones = hn::Set(du, 0x11111111u);
    nib[0] = hn::Add(nib[0], hn::And(x, ones));
    nib[1] = hn::Add(nib[1], hn::And(hn::ShiftRight<1>(x), ones));
    nib[2] = hn::Add(nib[2], hn::And(hn::ShiftRight<2>(x), ones));
    nib[3] = hn::Add(nib[3], hn::And(hn::ShiftRight<3>(x), ones));
    if (++nib_pending == 15) widen(du);
  }
  // Adds weight times the count of bit b to out[b] for b = 0..31, and starts
  // again from zero.
  void take(DU du, uint64_t weight, uint64_t* out) {
    widen(du);
    const VU byte_mask = hn::Set(du, 0xFFu);
    for (int k = 0; k < 8; ++k) {
      for (int m = 0; m < 4; ++m) {
        const VU shifted = hn::ShiftRightSame(acc[k], 8 * m);
        out[8 * m + k] += weight * hn::GetLane(hn::SumOfLanes(du, hn::And(shifted, byte_mask)));
      }
      acc[k] = hn::Zero(du);
    }
    pending = 0;
  }
};

// The bits of a + b + c as sum (weight 1) and carry (weight 2), bit by bit.
template <class V>
HWY_INLINE void CarrySave(V a, V b, V c, V& sum, V& carry) {
  const V u = hn::Xor(a, b);
  sum = hn::Xor(u, c);
  // The majority: a & b, or c where they differ. (IfVecThenElse would be
  // one operation less, but on SSE4, AVX2 and SCALAR it selects by byte or
  // by lane, not by bit.)
  carry = hn::OrAnd(hn::And(a, b), u, c);
}

// Exact counts, for each bit position, of the words added: 16 words at a
// time through a Harley-Seal carry-save tree (4 to 5 operations a word: the
// four digits ones..eights are the count's low bits, bit by bit, and only
// the sixteens go to a BitTally, once per 16 words), single words straight
// to a BitTally. Counting a word into nibbles costs about 12 operations.
template <class DU>
struct BitCounts {
  using VU = hn::Vec<DU>;
  BitTally<DU> single, sixteens;  // weights 1 and 16
  VU ones, twos, fours, eights;   // the tree's digits, weights 1, 2, 4, 8
  bool used = false;              // words added since the last take

  HWY_INLINE void init(DU du) {
    single.init(du);
    sixteens.init(du);
    ones = twos = fours = eights = hn::Zero(du);
    used = false;
  }
  HWY_INLINE bool full() const { return single.full() || sixteens.full(); }
  HWY_INLINE void add(DU du, VU x) {
    single.add(du, x);
    used = true;
  }
  // Eight words into the digits ones, twos and fours; returns their carry
  // of weight 8.
  HWY_INLINE VU add8(const VU* w) {
    VU twos_a, twos_b, fours_a, fours_b, eights_carry;
    CarrySave(ones, w[0], w[1], ones, twos_a);
    CarrySave(ones, w[2], w[3], ones, twos_b);
    CarrySave(twos, twos_a, twos_b, twos, fours_a);
    CarrySave(ones, w[4], w[5], ones, twos_a);
    CarrySave(ones, w[6], w[7], ones, twos_b);
    CarrySave(twos, twos_a, twos_b, twos, fours_b);
    CarrySave(fours, fours_a, fours_b, fours, eights_carry);
    return eights_carry;
  }
  HWY_INLINE void add16(DU du, const VU* w) {
    used = true;
    const VU eights_a = add8(w), eights_b = add8(w + 8);
    VU carry;
    CarrySave(eights, eights_a, eights_b, eights, carry);
    sixteens.add(du, carry);
  }
  // Adds the count of bit b to out[b] for b = 0..31 and starts again.
  void take(DU du, uint64_t* out) {
    if (!used) return;
    used = false;
    single.take(du, 1, out);
    sixteens.take(du, 16, out);
    // The digits: ones once, twos twice, ... (15 words: the tally holds them).
    single.add(du, ones);
    for (int k = 0; k < 2; ++k) single.add(du, twos);
    for (int k = 0; k < 4; ++k) single.add(du, fours);
    for (int k = 0; k < 8; ++k) single.add(du, eights);
    single.take(du, 1, out);
    ones = twos = fours = eights = hn::Zero(du);
  }
};

// Counts, for each bit position 0..31, the words that have it set, into
// out[32].
template <class DU>
struct BitCounter {
  using VU = hn::Vec<DU>;
  BitCounts<DU> counts;
  uint64_t* out = nullptr;

  HWY_INLINE void init(DU du, uint64_t* o) {
    counts.init(du);
    out = o;
  }
  HWY_INLINE void add(DU du, VU x) {
    counts.add(du, x);
    if (counts.full()) counts.take(du, out);
  }
  HWY_INLINE void add16(DU du, const VU* w) {
    counts.add16(du, w);
    if (counts.full()) counts.take(du, out);
  }
  HWY_INLINE void finish(DU du) { counts.take(du, out); }
};

// Three bucket histograms counted together: each lane gets one-hot bits per
// histogram for buckets in a window [base, base + width): histogram 0 in
// byte 0 (width 8), histogram 1 in byte 1, histogram 2 in bytes 2 and 3
// (width 16: the XOR popcount, whose tail is long, a carry flipping a run of
// bits). A histogram with a zero bucket (the relative error: bucket 0 =
// exact pairs) has a 7-wide window and its bit 7 is bucket 0. The one-hot
// words are counted bit by bit (BitCounts: bit 8m + k is bucket bit k of
// byte m). Lanes outside a window are counted one by one; after 16 such
// lanes the window moves to them (after the batch, when 16 vectors are
// counted together).
template <class DU>
struct BucketCounter {
  using VU = hn::Vec<DU>;
  using DI = hn::RebindToSigned<DU>;
  using VI = hn::Vec<DI>;
  int32_t base[3] = {0, 40, 0};
  int miss[3] = {0, 0, 0};
  int32_t move[3] = {-1, -1, -1};
  uint64_t* hist[3] = {nullptr, nullptr, nullptr};
  BitCounts<DU> counts;  // bit 8m+k: histogram byte m, bucket bit k

  HWY_INLINE void init(DU du, uint64_t* h0, uint64_t* h1, uint64_t* h2) {
    hist[0] = h0, hist[1] = h1, hist[2] = h2;
    counts.init(du);
  }
  // One-hot bits of bucket vector b for histogram j (see above).
  HWY_INLINE VU onehot(DU du, VI b, int j, uint32_t width, bool zero_bit) {
    const DI di;
    const VU rel = hn::BitCast(du, hn::Sub(b, hn::Set(di, base[j])));
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
      const int64_t N = static_cast<int64_t>(hn::Lanes(du));
      for (int64_t l = 0; l < N; ++l) {
        const int32_t v = buf[l];
        if (static_cast<uint32_t>(v - base[j]) < width || (zero_bit && v == 0)) continue;
        hist[j][v] += 1;
        if (++miss[j] >= 16) move[j] = v;
      }
    }
    return bits;
  }
  // Counts the one-hot bytes oh of one vector, or w of 16 (all made with
  // the same windows), then moves the windows that asked to move.
  HWY_INLINE void add(DU du, VU oh) {
    counts.add(du, oh);
    settle(du);
  }
  HWY_INLINE void add16(DU du, const VU* w) {
    counts.add16(du, w);
    settle(du);
  }
  HWY_INLINE void settle(DU du) {
    if (counts.full()) flush(du);
    if (HWY_UNLIKELY(move[0] >= 0 || move[1] >= 0 || move[2] >= 0)) {
      flush(du);
      for (int j = 0; j < 3; ++j) {
        if (move[j] < 0) continue;
        base[j] = move[j] > 3 ? move[j] - 3 : (j == 1 ? 1 : 0);
        move[j] = -1;
        miss[j] = 0;
      }
    }
  }
  void flush(DU du) {
    uint64_t n[32] = {};
    counts.take(du, n);
    for (int k = 0; k < 8; ++k) {
      if (n[k]) hist[0][base[0] + k] += n[k];
      if (n[8 + k]) hist[1][k == 7 ? 0 : base[1] + k] += n[8 + k];
      if (n[16 + k]) hist[2][base[2] + k] += n[16 + k];
      if (n[24 + k]) hist[2][base[2] + 8 + k] += n[24 + k];
    }
  }
  HWY_INLINE void finish(DU du) { flush(du); }
};

// The integer share of staged (differing) pairs of simd_f32.cpp, 16 vectors
// or one at a time (its pass 3): the ULP, relative-error and popcount
// buckets, the XOR bits, the highest differing bit and whether the candidate
// has it set, and the candidate's lowest set bit. Words gw, cw as LoadWords<kKind> gives
// them (simd_f32_words-inl.h); the pairs are ordinary, or padding (a pair
// equal to itself: bucket 0, no bits).
template <int kKind, class DU>
struct IntegerShare {
  using VU = hn::Vec<DU>;
  static constexpr bool kBF16 = kKind == 1;
  static constexpr bool kF16 = kKind == 2;
  BucketCounter<DU> buckets;  // ULP (0), relative error (1), popcount (2)
  BitCounter<DU> xor_bits, top_bits, top_set_bits, low_bits;

  HWY_INLINE void init(DU du, const F32FastState& s) {
    buckets.init(du, s.ulp_hist, s.rel_hist, s.popcount_hist);
    xor_bits.init(du, s.xor_bit_hist);
    top_bits.init(du, s.top_bit_hist);          // highest differing bit
    top_set_bits.init(du, s.top_bit_set_hist);  // ... set in the candidate
    low_bits.init(du, s.low_bit_hist);          // the candidate's lowest set bit
  }
  // The words one vector of pairs adds to each counter.
  struct Words {
    VU onehot, x, top, top_set, low;
  };
  HWY_INLINE Words words(DU du, VU gw, VU cw) {
    Words w;
    const hn::RebindToFloat<DU> df;
    const hn::RebindToSigned<DU> di;
    const VU abs_mask = hn::Set(du, 0x7FFFFFFFu);
    const VU gb = F32Bits<kKind>(du, gw), cb = F32Bits<kKind>(du, cw);
    const VU ga = hn::And(gb, abs_mask), ca = hn::And(cb, abs_mask);
    const VU aeb = hn::BitCast(du, hn::Abs(hn::Sub(hn::BitCast(df, cb), hn::BitCast(df, gb))));

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
    w.x = x;
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
      w.top = top;
      w.top_set = hn::And(top, cword);
      // The candidate's lowest set bit, sign cleared (m & -m), on mismatching lanes.
      const VU m = hn::And(cword, hn::Set(du, (kF16 || kBF16) ? 0x7FFFu : 0x7FFFFFFFu));
      w.low = hn::IfThenElseZero(hn::Ne(x, hn::Zero(du)), hn::And(m, hn::Sub(hn::Zero(du), m)));
    }
    const VU oh_pop = buckets.onehot(du, hn::BitCast(di, hn::PopulationCount(x)), 2, 16, false);
    w.onehot = hn::Or(hn::Or(oh_ulp, oh_rel), oh_pop);
    return w;
  }
  HWY_INLINE void add(DU du, VU gw, VU cw) {
    const Words w = words(du, gw, cw);
    buckets.add(du, w.onehot);
    xor_bits.add(du, w.x);
    top_bits.add(du, w.top);
    top_set_bits.add(du, w.top_set);
    low_bits.add(du, w.low);
  }
  // The 16 vectors of pairs at g, c (aligned words): every word is made
  // first (with the same bucket windows), then each counter takes its 16
  // through its carry-save tree.
  template <typename T>
  HWY_INLINE void add16(DU du, const T* HWY_RESTRICT g, const T* HWY_RESTRICT c) {
    const size_t N = hn::Lanes(du);
    VU onehot[16], x[16], top[16], top_set[16], low[16];
    for (size_t v = 0; v < 16; ++v) {
      const Words w = words(du, hn::Load(du, g + v * N), hn::Load(du, c + v * N));
      onehot[v] = w.onehot, x[v] = w.x, top[v] = w.top, top_set[v] = w.top_set, low[v] = w.low;
    }
    buckets.add16(du, onehot);
    xor_bits.add16(du, x);
    top_bits.add16(du, top);
    top_set_bits.add16(du, top_set);
    low_bits.add16(du, low);
  }
  HWY_INLINE void finish(DU du) {
    xor_bits.finish(du);
    top_bits.finish(du);
    top_set_bits.finish(du);
    low_bits.finish(du);
    buckets.finish(du);
  }
};

}  // namespace HWY_NAMESPACE
}  // namespace peat::impl::analyzer
HWY_AFTER_NAMESPACE();

#endif  // toggle guard
