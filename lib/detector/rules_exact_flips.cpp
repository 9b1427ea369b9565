// The rules that name a pattern exactly (docs/error-models.md rules 1-6 and
// 10): two runs that differ (NONDETERMINISM), no value mismatch (EXACT), one
// or a few flipped bits (BITFLIP_SINGLE / BITFLIP_MULTI), one bit stuck one
// way (STUCK_AT), a constant factor (SCALING).
#include "lib/detector/rules.hpp"

#include "lib/analyzer/sums.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace peat::impl::detector::rules {

// ---- 1 NONDETERMINISM: the second run on the same input differs ----------------
void Rules::nondeterminism() {
  const peat_signature_t& s = s_;
  if (const peat_signature_t* d = ctx_.rerun_diff; d != nullptr) {  // the two runs compared elementwise
    if (d->bitwise_mismatch_count == 0) return;
    auto& v = B.add(PEAT_ERROR_MODEL_NONDETERMINISM, 1.0, static_cast<int64_t>(d->bitwise_mismatch_count));
    evidence(v, "two candidate runs on the same input differ in {} of {} elements (bitwise), max |run1 - run2| = {:.3g}",
             d->bitwise_mismatch_count, d->count, d->max_abs_error);
    return;
  }
  if (ctx_.rerun == nullptr || same_numbers(s, *ctx_.rerun)) return;
  auto& v = B.add(PEAT_ERROR_MODEL_NONDETERMINISM, 1.0,
                  static_cast<int64_t>(std::max(s.bitwise_mismatch_count, ctx_.rerun->bitwise_mismatch_count)));
  evidence(v, "two candidate runs on the same input give different signatures: bitwise mismatches {} vs {}, "
              "sum e^2 {:.6g} vs {:.6g}", s.bitwise_mismatch_count, ctx_.rerun->bitwise_mismatch_count,
           sum_of(s.sum_sq_error), sum_of(ctx_.rerun->sum_sq_error));
}

// ---- 2 EXACT ---------------------------------------------------------------------
bool Rules::exact() {
  const peat_signature_t& s = s_;
  if (!(F.n == 0 && F.nf == 0 && s.lost_nonfinite_count == 0)) return false;
  auto& v = B.add(PEAT_ERROR_MODEL_EXACT, F.nb == 0 ? 1.0 : 0.9, 0);
  if (F.nb == 0)
    evidence(v, "bitwise_mismatch_count = 0 of {} pairs", s.count);
  else
    evidence(v, "value_mismatch_count = 0; {} pairs differ only in the sign of zero or a NaN payload", F.nb);
  return true;
}

// ---- 3 BITFLIP_SINGLE: one pair, one bit ---------------------------------------------
bool Rules::bitflip_single() {
  const peat_signature_t& s = s_;
  if (F.nb == 1 && sb < 0) return flip_over_reduction_noise();
  if (!(sb >= 0 && F.nb == 1)) return false;
  const bool low = !F.is_exponent(sb) && !F.is_sign(sb) && sb < 2;
  if (low) {
    auto& r = B.add(PEAT_ERROR_MODEL_ROUNDING, 0.6, 1);
    evidence(r, "one pair differs in mantissa bit {} only: a change of at most 2 ULP, within rounding", sb);
  } else if (rounding_sized) {
    auto& r = B.add(PEAT_ERROR_MODEL_ROUNDING, 0.6, 1);
    evidence(r, "|e| = {:.3g} <= {} sqrt(2K) u RMS(g) + 2 u_s |g| = {:.3g} (K = {}): rounding-sized", s.max_abs_error,
             ctx_.rounding_slack, abs_allow, F.K);
  } else if (gamma_ok) {
    auto& r = B.add(PEAT_ERROR_MODEL_ROUNDING, 0.6, 1);
    evidence(r, "relative error {:.3g} <= 2 gamma_K + 2 u_s = {:.3g} (K = {}): within the deterministic bound",
             s.max_rel_error, gamma_bound, F.K);
  }
  auto& v = B.add(PEAT_ERROR_MODEL_BITFLIP_SINGLE, low || rounding_sized || gamma_ok ? 0.5 : 1.0, 1);
  v.bit = sb;
  v.first_index = s.max_abs_error_index >= 0 ? s.max_abs_error_index : sp.first;
  if (s.max_abs_error_index >= 0 && s.max_abs_error > 0) {
    const uint64_t gb = bits_of(s.max_abs_error_golden, F.f), cb = bits_of(s.max_abs_error_candidate, F.f);
    if (((gb ^ cb) >> sb) & 1u) v.polarity = static_cast<int>((cb >> sb) & 1u);
  } else if (F.nf == 1 && F.is_exponent(sb)) {
    v.polarity = 1;  // a flip that made a value non-finite set an exponent bit
  }
  evidence(v, "exactly 1 of {} pairs differs, in exactly 1 bit: bit {} ({} field)", s.count, sb, F.field(sb));
  evidence(v, "|e| = {:.6g}, relative error {:.3g}", s.max_abs_error, s.max_rel_error);
  set_spatial(v, sp);
  return true;
}

// ---- 3b BITFLIP_SINGLE: the one differing pair of a reduction, one bit above its noise ----
// A reduction's rounding moves a value by at most K u / u_s + 2 ULP (gamma_K
// relative to |g|, and each side's rounding to storage): bits up to
// ceil(log2 of that) are noise (a carry adds one). One bit above them, at
// least the top mantissa bit, is a flip.
bool Rules::flip_over_reduction_noise() {
  const peat_signature_t& s = s_;
  if (!F.k_bound || s.max_abs_error_index < 0 || F.nf > 0 || gamma_ok) return false;
  // K u / u_s ULP from the accumulation, plus one storage rounding of each side.
  const double lim = static_cast<double>(F.K) * F.u_op / F.u_store + 2;
  const int band = static_cast<int>(std::ceil(std::log2(lim))) + 1;
  const uint64_t x = bits_of(s.max_abs_error_golden, F.f) ^ bits_of(s.max_abs_error_candidate, F.f);
  if (band >= F.width || band > F.p - 1 || (x >> band) == 0 || __builtin_popcountll(x >> band) != 1) return false;
  const int bit = 63 - __builtin_clzll(x);
  if (bit < F.p - 1) return false;
  auto& v = B.add(PEAT_ERROR_MODEL_BITFLIP_SINGLE, 0.8, 1);
  v.bit = bit;
  v.polarity = static_cast<int>((bits_of(s.max_abs_error_candidate, F.f) >> bit) & 1u);
  v.first_index = s.max_abs_error_index;
  evidence(v, "the 1 differing pair (index {}) differs in bit {} ({} field) and otherwise only below bit {}",
           s.max_abs_error_index, bit, F.field(bit), band);
  evidence(v, "rounding of K = {} terms moves a value by <= K u / u_s + 2 = {:.3g} ULP: bits below {} (g = {:.6g}, c = {:.6g})",
           F.K, lim, band, s.max_abs_error_golden, s.max_abs_error_candidate);
  set_spatial(v, sp);
  return true;
}

// ---- 4 STUCK_AT: one bit, several pairs, one direction --------------------------------
bool Rules::stuck_at() {
  const peat_signature_t& s = s_;
  if (!(sb >= 0 && polarity >= 0)) return false;
  // Mantissa bits 0 and 1 change a value by at most 3 ULP, as rounding does: one
  // direction only counts when a fair coin would rarely give it (<= 1e-3).
  const bool low = sb < 2 && !F.is_exponent(sb) && !F.is_sign(sb);
  if (low && coin_tail(F.nb, F.nb) > 1e-3) return false;
  auto& v = B.add(PEAT_ERROR_MODEL_STUCK_AT, 0.95, static_cast<int64_t>(F.nb));
  v.bit = sb;
  v.polarity = polarity;
  v.lane_period = sp.lane_period;
  v.lane = sp.lane;
  evidence(v, "all {} mismatching pairs differ in exactly bit {} ({} field), every change towards {}", F.nb, sb,
           F.field(sb), polarity);
  if (F.is_sign(sb))
    evidence(v, "all errors have one sign: |sum e| = sum |e| = {:.6g}", sum_of(s.sum_abs_error));
  else
    evidence(v, "c/g range [{:.6g}, {:.6g}] on one side of 1", s.ratio_min, s.ratio_max);
  if (sp.lane_period > 0)
    evidence(v, "every mismatch in lane {} of {} (element index mod {})", sp.lane, sp.lane_period, sp.lane_period);
  set_spatial(v, sp);
  return true;
}

// ---- 5 SCALING: c/g constant over the well-conditioned pairs -----------------------
bool Rules::scaling() {
  const peat_signature_t& s = s_;
  // The ratio pairs cover half of the finite pairs, or (sparse outputs: a ReLU's
  // zeros) every pair outside them can be equal (c = g = 0 scales to itself).
  const bool covered = static_cast<double>(s.ratio_count) >= 0.5 * static_cast<double>(s.finite_count) ||
                       (F.n <= s.ratio_count && s.spurious_count == 0 &&
                        s.count - F.n >= s.finite_count - s.ratio_count);
  if (!(s.ratio_count >= 4 && covered && n >= 0.5 * static_cast<double>(s.ratio_count))) return false;
  const peat_signature_sums_t ratio = analyzer::sums_of(s);
  const double mean = ratio.ratio_mean;
  const double sd = std::sqrt(std::max(0.0, ratio.ratio_m2 / static_cast<double>(s.ratio_count)));
  const double rel_sd = mean != 0 ? sd / std::fabs(mean) : INFINITY;
  // c = fl(alpha g) keeps every c/g within alpha (1 +- u_s): the range too, not
  // only the spread (the moments alone can overflow or hide one outlier).
  // (The range bounds the spread exactly; the moments, read from rounded
  // squares, can lose that precision in f64.)
  const double range = s.ratio_max - s.ratio_min;
  // A factor of exactly 0 is no scale: c = 0 for every g != 0 keeps nothing of
  // g, which is what an output never written shows (DROPPED_WRITES, rule 9).
  if (!(mean != 0 && std::fabs(mean - 1) >= 16 * F.u_store && std::isfinite(mean) &&
        range <= 8 * F.u_store * std::fabs(mean)))
    return false;
  auto& v = B.add(PEAT_ERROR_MODEL_SCALING, 1.0 - 0.5 * std::min(1.0, range / (8 * F.u_store * std::fabs(mean))),
                  static_cast<int64_t>(F.n));
  v.alpha = mean;
  evidence(v, "c/g over {} well-conditioned pairs: mean {:.6g}, range {:.3g} <= 8u |mean| = {:.3g} (relative sd {:.3g})",
           s.ratio_count, mean, range, 8 * F.u_store * std::fabs(mean), rel_sd);
  evidence(v, "|mean - 1| = {:.3g} >= 16u = {:.3g}; range [{:.6g}, {:.6g}]", std::fabs(mean - 1),
           16 * F.u_store, s.ratio_min, s.ratio_max);
  if (static_cast<double>(s.ratio_count) < 0.5 * static_cast<double>(s.finite_count))
    evidence(v, "sparse: {} of {} finite pairs outside the ratios, {} pairs bitwise equal", s.finite_count - s.ratio_count,
             s.finite_count, s.count - F.nb);
  set_spatial(v, sp);
  return true;
}

// ---- 6 BITFLIP_MULTI: one bit, several pairs, both directions -------------------------
// (Mantissa bits 0 and 1 flipping both ways are 1-3 ULP changes: rounding, below.)
bool Rules::bitflip_multi_one_bit() {
  if (!(sb >= 0 && !(sb < 2 && !F.is_sign(sb) && !F.is_exponent(sb)))) return false;
  auto& v = B.add(PEAT_ERROR_MODEL_BITFLIP_MULTI, 0.9, static_cast<int64_t>(F.nb));
  v.bit = sb;
  evidence(v, "{} pairs differ, each in exactly bit {} ({} field), flips in both directions", F.nb, sb, F.field(sb));
  set_spatial(v, sp);
  return true;
}

// ---- 10 BITFLIP_MULTI: a few pairs, each off in at most 4 bits, mostly far apart -------------
bool Rules::bitflip_multi_sparse() {
  const peat_signature_t& s = s_;
  // "Far" for a reduction: beyond what its rounding may move a value, K u / u_s
  // ULP (gamma_K relative to |g|, one ULP being >= u_s |g|), at least 4 ULP.
  uint64_t far_k = far;
  if (F.k_bound) {
    uint64_t d = 4;
    const double lim = static_cast<double>(F.K) * F.u_op / F.u_store;
    while (static_cast<double>(d) < lim && d < (uint64_t{1} << 62)) d <<= 1;
    far_k = F.ulp_at_least(d);
  }
  if (!(!rounding_sized && F.popcount_at_most(4) == F.nb &&
        ((far_k >= 2 && static_cast<double>(far_k) >= 0.5 * n) || (F.n == 1 && far_k == 1)) &&
        n <= std::max(16.0, 0.01 * N)))
    return false;
  auto& v = B.add(PEAT_ERROR_MODEL_BITFLIP_MULTI, 0.9, static_cast<int64_t>(F.nb));
  v.first_index = sp.present ? sp.first : s.max_abs_error_index;
  evidence(v, "{} of {} pairs differ, each in at most 4 bits ({} in 1, {} in 2)", F.nb, s.count,
           s.xor_popcount_hist[1], s.xor_popcount_hist[2]);
  evidence(v, "{} of them beyond rounding ({} ULP or more apart, >= 50 %)", far_k,
           F.k_bound ? std::max<uint64_t>(4, uint64_t{1} << static_cast<int>(std::ceil(std::log2(std::max(
                           4.0, static_cast<double>(F.K) * F.u_op / F.u_store)))))
                     : uint64_t{4});
  set_spatial(v, sp);
  return true;
}

}  // namespace peat::impl::detector::rules
