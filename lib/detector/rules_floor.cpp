// The rules of noise and what stands above it (docs/error-models.md rules 5',
// 9', 10', 11-14): ROUNDING within a reduction's deterministic bound, the
// floor beneath an anomaly (ROUNDING or REDUCED_PRECISION), a stuck bit or
// zeros over a floor, the noise floor itself with an outlier or overflowed
// flips above it, and GARBAGE / UNKNOWN when nothing holds.
#include "lib/detector/rules.hpp"

#include "lib/detector/detector.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

namespace peat::impl::detector::rules {

// The narrow format of a REDUCED_PRECISION floor with `eff` effective
// mantissa bits (none when nothing fits).
//  - The candidate's values on a grid that a narrow format holds
//    (Features::grid_bits = m <= 10, m < p): a value stored in a format keeps no bit
//    below that format's last, so the narrowest format with >= m bits holds
//    every one of them. That format is named whatever precision was lost
//    before the rounding to it (an fp16 accumulation reads about 7 effective
//    bits on the 10-bit grid). 10 bits: fp16 when the golden fits its range
//    (max |g| <= 65504), tf32 otherwise.
//  - Values off every narrow grid (more bits than fp16 or tf32 keep; an
//    exact sum of narrow products has more than its factors) were stored at
//    a wider precision: the precision was lost on the inputs or in the arithmetic, and `eff`
//    names the format within 2 bits; 10 bits is tf32 (the input format of a
//    GEMM with f32 output -- fp16 inputs read the same).
//  - A signature without the grid histogram: by `eff`, 10 bits as fp16 when
//    the range allows.
bool Rules::on_narrow_grid(int grid) const {
  return grid >= 0 && grid < F.p && grid <= format_mantissa_bits(PEAT_FORMAT_FP16);
}
peat_float_format_t Rules::format_near(double eff) const {
  const int grid = F.grid_bits();
  if (on_narrow_grid(grid)) {
    for (peat_float_format_t f : {PEAT_FORMAT_FP8_E5M2, PEAT_FORMAT_FP8_E4M3, PEAT_FORMAT_BF16, PEAT_FORMAT_FP16})
      if (format_mantissa_bits(f) >= grid && format_mantissa_bits(f) < F.p)
        return f == PEAT_FORMAT_FP16 && s_.max_abs_golden > 65504.0 ? PEAT_FORMAT_TF32 : f;
    return -1;
  }
  peat_float_format_t f = nearest_format(eff);
  if (grid < 0 && f == PEAT_FORMAT_TF32 && s_.max_abs_golden <= 65504.0) f = PEAT_FORMAT_FP16;
  if (std::fabs(eff - format_mantissa_bits(f)) > 2) f = -1;
  return f;
}

// The evidence for format_near's choice: the grid the candidate lies on.
std::string Rules::grid_evidence() const {
  const int grid = F.grid_bits();
  if (grid < 0) return "the signature holds no candidate grid (named by effective bits)";
  if (on_narrow_grid(grid))
    return fmt::format("every mismatching candidate value lies on a {}-bit mantissa grid (no set bit below bit {} "
                       "of the {} word): stored in that narrow format", grid, F.p - grid, float_name(F.f));
  return fmt::format("candidate values carry up to {} mantissa bits, more than any narrow format keeps: stored "
                     "wider, so the loss came before the store (inputs or arithmetic)", grid);
}

// ---- 0 ROUNDING within the deterministic bound of a reduction ---------------------------
// Every pair within 2 gamma_K (+ 2 u_s for the two roundings to storage) of
// the golden, relative to |g|: both outputs lie within Higham's bound of the
// exact sum (when |g| stands for sum |a_i b_i|, i.e. the sum does not
// cancel). Runs before the flip rules: a long dot product tens of ULP off is
// rounding, however few outputs it has.
bool Rules::within_gamma() {
  const peat_signature_t& s = s_;
  if (!gamma_ok) return false;
  const double bound = gamma_bound;
  auto& v = B.add(PEAT_ERROR_MODEL_ROUNDING, 0.9, static_cast<int64_t>(F.n));
  v.effective_mantissa_bits = F.k_bound && rel_l2 > 0 ? std::clamp(-std::log2(rel_l2) - 1.8, 0.0, static_cast<double>(F.p))
                                                      : static_cast<double>(F.p);
  evidence(v, "max relative error {:.3g} <= 2 gamma_K + 2 u_s = {:.3g} (K = {}, u = {:.3g}): within the "
              "deterministic bound", s.max_rel_error, bound, F.K, F.u_op);
  evidence(v, "{} pairs differ, relative L2 {:.3g}, the largest {} ULP apart", F.n, rel_l2, max_pair_ulps);
  return true;
}

// The floor beneath an anomaly that accounts for the `skip` largest errors:
// judged on the relative-error and ULP histograms of the other mismatches
// (their sums are not separable from the anomaly's): ROUNDING when their
// median relative error is within the op's probabilistic bound (reductions)
// or half of them within 3 ULP (other ops); REDUCED_PRECISION when their
// effective bits are below the golden's; none otherwise.
Rules::Floor Rules::floor_of(uint64_t skip) const {
  const peat_signature_t& s = s_;
  Floor fl;
  if (F.n <= skip) return fl;
  fl.rest = F.n - skip;
  // Median relative error of the rest: below 2^-(eff + 1).
  fl.eff = F.effective_bits(0.5, skip + F.nf + s.spurious_count);
  const double median_rel = std::ldexp(1.0, -static_cast<int>(std::lround(fl.eff)) - 1);
  const int q = F.median_ulp_bucket(skip);  // half of the rest lie below 2^q ULP
  if (F.k_bound) {
    const double bound = ctx_.rounding_slack * std::sqrt(2.0 * static_cast<double>(F.K)) * F.u_op +
                         (F.u_op < F.u_store ? 2 * F.u_store : 0);
    if (median_rel <= bound) {
      fl.model = PEAT_ERROR_MODEL_ROUNDING;
      fl.why = fmt::format("the other {} mismatches: median relative error < {:.3g} <= {} sqrt(2K) u{} = {:.3g} (K = {})",
                           fl.rest, median_rel, ctx_.rounding_slack, F.u_op < F.u_store ? " + 2 u_storage" : "", bound, F.K);
      return fl;
    }
  } else if (q <= 2) {
    fl.model = PEAT_ERROR_MODEL_ROUNDING;
    fl.why = fmt::format("the other {} mismatches: half of them within {} ULP", fl.rest, (1 << q) - 1);
    return fl;
  }
  if (fl.eff >= 1 && fl.eff <= F.p - (F.k_bound ? 1 : 3)) {
    fl.model = PEAT_ERROR_MODEL_REDUCED_PRECISION;
    fl.why = fmt::format("the other {} mismatches: median relative error < {:.3g}, effective mantissa bits {:.0f} <= {}",
                         fl.rest, median_rel, fl.eff, F.p - (F.k_bound ? 1 : 3));
  }
  return fl;
}
bool Rules::floor_beneath(uint64_t skip, const char* anomaly) { return add_floor(floor_of(skip), anomaly); }
bool Rules::add_floor(const Floor& fl, const char* anomaly) {
  if (fl.model == PEAT_ERROR_MODEL_UNKNOWN) return false;
  auto& v = B.add(fl.model, fl.model == PEAT_ERROR_MODEL_ROUNDING ? 0.8 : 0.75, static_cast<int64_t>(fl.rest));
  v.effective_mantissa_bits = fl.eff;
  if (fl.model == PEAT_ERROR_MODEL_REDUCED_PRECISION) v.nearest_format = format_near(fl.eff);
  evidence(v, "{}", fl.why);
  evidence(v, "a floor beneath {}: effective mantissa bits {:.0f} (median of the rest){}{}", anomaly, fl.eff,
           fl.model == PEAT_ERROR_MODEL_REDUCED_PRECISION ? ", nearest format " : "",
           fl.model == PEAT_ERROR_MODEL_REDUCED_PRECISION ? format_name(v.nearest_format) : "");
  if (fl.model == PEAT_ERROR_MODEL_REDUCED_PRECISION) evidence(v, "{}", grid_evidence());
  return true;
}

// ---- 10b STUCK_AT over a noise floor ---------------------------------------------------------
// A bit b whose pairs (those with b the highest differing bit) change one
// way, stand above the floor, and are no carry tail:
//  (a) one direction: T_b >= 8 pairs have b as their highest differing bit,
//      S_b of them with b set in c (less the c = 0 and new NaN/Inf pairs),
//      and a fair coin gives |up - down| that large with probability <= 1e-3
//      -- noise moves values up and down alike;
//  (b) alone: T_b >= 4 (X_b-1 - T_b-1), X the pairs differing in a bit: at
//      most a quarter of the top-b pairs also differ in bit b-1 -- a stuck bit
//      changes b and leaves the bits below it to the noise, a scale or a
//      carry across a power of two changes the top bits below b too;
//  (c) far: at least |2 S_b - T_b| pairs lie >= 2^(b-1) ULP apart (flipping
//      a non-sign bit b moves a value by 2^b ULP), while half of the other
//      mismatches lie below 2^(b-3) ULP;
//  (d) the other mismatches form a floor (floor_of: ROUNDING or
//      REDUCED_PRECISION), which is ranked after the stuck bit.
bool Rules::stuck_over_floor() {
  const peat_signature_t& s = s_;
  if (!F.has_top()) return false;
  int best = -1;
  double best_d = 0;
  // Not the sign bit: noise flips the sign of values near zero, in a direction
  // set by the signs of those values (not a fair coin), and every such flip is
  // "far" on the ordered line; the exact-pattern rule 4 still names a stuck sign.
  for (int b = 2; b < F.width - 1; ++b) {
    const double T = static_cast<double>(s.xor_top_bit_hist[b]), S = static_cast<double>(s.xor_top_bit_set_hist[b]);
    // Pairs that clear every bit (c = 0: flushes, dropped writes) or set the
    // exponent (new NaN/Inf) are set aside: they are not a stuck bit.
    const double up = S - std::min(S, static_cast<double>(F.nf));
    const double down = (T - S) - std::min(T - S, static_cast<double>(s.dropped_count));
    const double D = std::fabs(up - down);
    if (T < 8 || coin_tail(static_cast<uint64_t>(up + down), static_cast<uint64_t>(D)) > 1e-3) continue;
    // Pairs above bit b-1 that differ in it: an upper bound on the top-b pairs touching b-1.
    const double touching = static_cast<double>(s.xor_bit_hist[b - 1] - s.xor_top_bit_hist[b - 1]);
    if (T < 4 * touching) continue;
    const int far_bucket = b;
    if (static_cast<double>(F.ulp_bucket_at_least(far_bucket)) < D) continue;
    if (F.median_ulp_bucket(s.xor_top_bit_hist[b]) > far_bucket - 3) continue;
    if (D > best_d) { best = b; best_d = D; }
  }
  if (best < 0) return false;
  const uint64_t T = s.xor_top_bit_hist[best], S = s.xor_top_bit_set_hist[best];
  const Floor fl = floor_of(T);
  if (fl.model == PEAT_ERROR_MODEL_UNKNOWN) return false;
  const int pol = 2 * S > T ? 1 : 0;
  auto& v = B.add(PEAT_ERROR_MODEL_STUCK_AT, 0.85, static_cast<int64_t>(T));
  v.bit = best;
  v.polarity = pol;
  evidence(v, "{} pairs have bit {} ({} field) as their highest differing bit, {} of them changed towards {}: "
              "|up - down| = {:.0f}, a fair coin's chance {:.2g} <= 1e-3", T, best, F.field(best), pol ? S : T - S, pol,
           best_d, coin_tail(T, static_cast<uint64_t>(best_d)));
  evidence(v, "alone: {} >= 4 x {} pairs above bit {} differing in it; {} pairs >= 2^{} ULP apart", T,
           s.xor_bit_hist[best - 1] - s.xor_top_bit_hist[best - 1], best - 1,
           F.ulp_bucket_at_least(best), best - 1);
  evidence(v, "half of the other mismatches lie below 2^{} ULP", F.median_ulp_bucket(T));
  add_floor(fl, "the stuck bit");
  return true;
}

// The mantissa bits of the widest narrow format below the golden's, + 2:
// tf32/fp16 (10) for f32/f64, bf16 (7) for f16, fp8 e4m3 (3) for bf16.
int Rules::narrow_limit() const { return (F.p > 10 ? 10 : F.p > 7 ? 7 : 3) + 2; }

// Effective bits of an elementwise candidate: the 0.95 quantile of its
// relative errors, unless the norm's estimate (-log2(relative L2) - 1.8) is
// more than 2 bits higher: then the large relative errors sit on tiny values
// (a format's subnormal range, where it keeps fewer bits) which the norm
// weighs by their size, and the norm's estimate is the format's precision.
double Rules::elementwise_bits(double eff_q, double l2) const {
  if (!(l2 > 0)) return eff_q;
  const double eff_l2 = std::clamp(-std::log2(l2) - 1.8, 0.0, static_cast<double>(F.p));
  return eff_l2 > eff_q + 2 ? eff_l2 : eff_q;
}

// ---- 10c DROPPED_WRITES over a rounding floor ---------------------------------------------
// Rounding does not turn a non-zero value into zero (short of the underflow
// threshold); a reduced-precision floor may (flush to zero), so only a
// ROUNDING floor beneath the zeros is accepted.
bool Rules::dropped_over_floor() {
  const peat_signature_t& s = s_;
  if (s.dropped_count == 0 || F.nf > 0) return false;
  const Floor fl = floor_of(s.dropped_count);
  if (fl.model != PEAT_ERROR_MODEL_ROUNDING) return false;
  auto& v = B.add(PEAT_ERROR_MODEL_DROPPED_WRITES, 0.85, static_cast<int64_t>(s.dropped_count));
  evidence(v, "{} pairs are c = 0 where g != 0, above a rounding floor (which never writes 0 for a non-zero value)",
           s.dropped_count);
  set_spatial(v, sp);
  add_floor(fl, "the zeros");
  return true;
}

// ---- 10'' Outliers over a floor: a gap in the ULP distances -----------------------------------
// Rounding noise, however heavy its tail (outputs that cancel), fills the
// log2 ULP histogram without holes; a flip of an exponent or top mantissa bit
// moves a value by 2^(p-4) ULP or more. So k >= 2 pairs that lie above a run of
// >= kGapBuckets empty buckets (a factor of 2^6 in distance), at least
// 2^(p-5) ULP apart, beyond a reduction's absolute allowance, with k at most
// a quarter of the mismatches and the rest a floor (floor_of(k)), are an
// anomaly over that floor, never the floor alone or GARBAGE:
//  - one highest differing bit b for all k, one direction, and at most a
//    quarter of them differing in a bit between the floor's and b: STUCK_AT b
//    (a stuck bit changes only the values whose bit was the other way, and
//    only that bit above the noise; random flips do not keep hitting one bit);
//  - otherwise, when they differ in at most 4 bits each above the floor's on
//    average: BITFLIP_MULTI (the most frequent highest bit);
//  - more (values written wrong): not this rule.
// Rule 9' (T_b >= 8 with a coin test) takes the stuck bits with many pairs
// first; new NaN/Inf and zeros have their own rules (8, 9, 10'). Beyond a
// reduction's absolute allowance, or for other ops beyond the normwise bound
// 2 max(u, u_s) of rule 11 (b').
bool Rules::outliers_over_floor() {
  const peat_signature_t& s = s_;
  constexpr int kGapBuckets = 6;
  if (!F.has_top() || F.nf > 0 || s.dropped_count > 0 || s.ulp_hist[PEAT_SIGNATURE_ULP_NAN_BUCKET] > 0) return false;
  if (F.k_bound && s.max_abs_error <= abs_allow) return false;
  // Without a reduction bound, outliers on tiny values (an elementwise op near
  // its underflow) that leave the normwise error within one rounding per side
  // are rule 11 (b')'s: no anomaly.
  if (!F.k_bound && rel_l2 <= 2 * std::max(F.u_op, F.u_store)) return false;
  uint64_t k = 0;
  int lowest = -1, floor_top = -1, empty = 0;
  for (int b = PEAT_SIGNATURE_ULP_NAN_BUCKET - 1; b >= 1; --b) {
    if (s.ulp_hist[b] == 0) {
      ++empty;
      continue;
    }
    if (lowest >= 0 && empty >= kGapBuckets) {
      floor_top = b;
      break;
    }
    k += s.ulp_hist[b];
    lowest = b;
    empty = 0;
  }
  if (floor_top < 0 || k < 2 || lowest - 1 < F.p - 5) return false;
  // The k pairs' highest differing bits: at or above bit lowest - 2 (a move of
  // >= 2^(lowest-1) ULP changes a bit that high), where the floor's pairs (below
  // 2^floor_top ULP) have none of theirs.
  // Sign changes are set aside: noise flips the sign of values near zero, and
  // every such flip is far on the ordered line (as in rule 9').
  uint64_t at_top = 0, most = 0;
  int bits = 0, bit = -1;
  for (int b = std::max(0, lowest - 2); b < F.width; ++b) {
    const uint64_t t = s.xor_top_bit_hist[b];
    if (t == 0) continue;
    at_top += t;
    if (F.is_sign(b)) continue;
    ++bits;
    if (t > most) most = t, bit = b;
  }
  const uint64_t signs = s.xor_top_bit_hist[F.width - 1];
  if (at_top != k || bit < 0 || floor_top + 1 >= lowest - 2) return false;
  k -= std::min(k, signs);
  if (k < 2) return false;
  const Floor fl = floor_of(k + signs);
  if (fl.model == PEAT_ERROR_MODEL_UNKNOWN) return false;
  // The k pairs' differing bits above the floor's highest differing bit (only
  // pairs whose highest bit is higher can differ there; signs set aside): a
  // stuck bit changes b alone, a flip one bit, a few flips a few; values
  // written wrong change many (then this is no flip: rule 13).
  int floor_bit = -1;
  for (int b = 0; b < std::max(0, lowest - 2); ++b)
    if (s.xor_top_bit_hist[b] > 0) floor_bit = b;
  uint64_t high = 0, below_b = 0;
  for (int b = floor_bit + 1; b < F.width - 1; ++b) {
    high += s.xor_bit_hist[b];
    if (b < bit) below_b += s.xor_bit_hist[b];
  }
  if (high > 4 * k) return false;
  const uint64_t set = s.xor_top_bit_set_hist[bit];
  const bool stuck = bits == 1 && (set == k || set == 0) && 4 * below_b <= k;
  auto& v = B.add(stuck ? PEAT_ERROR_MODEL_STUCK_AT : PEAT_ERROR_MODEL_BITFLIP_MULTI, k >= 8 ? 0.85 : 0.75,
                  static_cast<int64_t>(k));
  v.bit = bit;
  if (stuck) v.polarity = set == k ? 1 : 0;
  evidence(v, "{} of {} mismatches lie >= 2^{} ULP apart, above {} empty log2 buckets; the other {} lie below 2^{} ULP "
              "(noise leaves no such gap){}", k + signs, F.n, lowest - 1, lowest - 1 - floor_top, F.n - k - signs,
           floor_top, signs > 0 ? fmt::format("; {} of them sign changes near zero, set aside", signs) : "");
  if (stuck)
    evidence(v, "all {} have bit {} ({} field) as their highest differing bit, all changed towards {}", k, bit,
             F.field(bit), set == k ? 1 : 0);
  else
    evidence(v, "their highest differing bits: {} distinct, bit {} ({} field) in {} of them", bits, bit, F.field(bit),
             most);
  if (F.k_bound)
    evidence(v, "max |e| = {:.3g} > the reduction's rounding allowance {:.3g}", s.max_abs_error, abs_allow);
  v.first_index = s.max_abs_error_index;
  add_floor(fl, stuck ? "the stuck bit" : "the flips");
  return true;
}

// ---- 11/12 a noise floor (ROUNDING / REDUCED_PRECISION), possibly with outliers above it --------
bool Rules::noise_floor() {
  const peat_signature_t& s = s_;
  const peat_detect_context_t& ctx = ctx_;
  // The largest error is an outlier when it stands 32x above the root mean
  // square of the other mismatches (noise has no such gap).
  const double max2 = s.max_abs_error * s.max_abs_error;
  // The gap an outlier needs: 32, well above the extreme value of n Gaussian
  // errors (max / RMS <= sqrt(2 ln n) <= 5.6 for n <= 4M), for the heavy tails
  // of ill-conditioned ops (a norm over few values, sums that cancel).
  const double gap = 32;
  const double rest_rms = F.n >= 2 ? std::sqrt(std::max(0.0, sum_of(s.sum_sq_error) - max2) / (n - 1)) : 0;
  // It must stand out in relative terms too: in a signature merged over
  // records of different magnitudes, the largest absolute error can be a
  // large value rounded like all the others (its c/g deviation no larger
  // than theirs). Compared with the RMS of the other c/g deviations when the
  // ratio statistics cover the pairs; a pair outside them (|g| small) keeps
  // the absolute test alone.
  const bool rel_outlier = [&] {
    if (s.ratio_count < 2 || s.max_abs_error_golden == 0 || !std::isfinite(s.max_abs_error_golden) ||
        !std::isfinite(s.max_abs_error_candidate))
      return true;
    const double d_out = s.max_abs_error_candidate / s.max_abs_error_golden - 1;
    const double rest_d2 = std::max(0.0, sum_of(s.ratio_dev_sq_sum) - d_out * d_out);
    const double rest_rel_rms = std::sqrt(rest_d2 / static_cast<double>(s.ratio_count - 1));
    if (std::fabs(d_out) >= gap * rest_rel_rms) return true;
    // The RMS of c/g deviations is heavy-tailed where outputs cancel; a change of
    // >= 1/4 (a sign, exponent or top-mantissa flip) that is also 32x the median
    // relative error of the others is no value rounded like them.
    const double median_rel = std::ldexp(1.0, -static_cast<int>(std::lround(F.effective_bits(0.5, 1))) - 1);
    return std::fabs(d_out) >= 0.25 && std::fabs(d_out) >= gap * median_rel;
  }();
  // Effective mantissa bits: for a reduction (heavy-tailed relative errors where
  // it cancels) from the relative L2 error, whose value for rounding to m bits
  // is about 2^-(m+1)/sqrt(3); otherwise the 0.95 quantile of the relative errors.
  auto eff_of = [&](bool out, double l2) {
    return F.k_bound ? (l2 > 0 ? std::clamp(-std::log2(l2) - 1.8, 0.0, static_cast<double>(F.p))
                               : static_cast<double>(F.p))
                     : elementwise_bits(F.effective_bits(0.95, (out ? 1 : 0) + s.dropped_count), l2);
  };
  // The outlier's bits above the noise band (max(p - 4, ceil(p - eff) + 2)):
  // one that differs in none of them is a large noise value, not a flip.
  auto high_bits = [&](double e) {
    const int band = std::clamp(static_cast<int>(std::ceil(F.p - e)) + 2, F.p - 4, F.p);
    const uint64_t x = bits_of(s.max_abs_error_golden, F.f) ^ bits_of(s.max_abs_error_candidate, F.f);
    return __builtin_popcountll(band >= 64 ? 0 : (x >> band));
  };
  bool outlier = F.n >= 2 && s.max_abs_error > 0 && s.max_abs_error >= gap * rest_rms && rel_outlier &&
                 max_pair_ulps >= 4 && !(F.k_bound && s.max_abs_error <= abs_allow);
  if (outlier && high_bits(eff_of(true, F.relative_l2(max2))) == 0) outlier = false;
  const uint64_t skip = (outlier ? 1 : 0) + F.nf + s.spurious_count + s.dropped_count;
  const double bulk_l2 = F.relative_l2(outlier ? max2 : 0);
  const double eff = eff_of(outlier, bulk_l2);
  const uint64_t bulk = F.n > skip ? F.n - skip : 0;
  const uint64_t near = F.n - std::min(F.n, far);  // within 3 ULP
  bool rounding = false;
  std::string why;
  if (ctx.reference != nullptr) {
    double ref_l2 = 0;
    const double rg2 = sum_of(ctx.reference->sum_sq_golden);
    if (rg2 > 0) ref_l2 = std::sqrt(sum_of(ctx.reference->sum_sq_error) / rg2);
    if (bulk_l2 <= ctx.rounding_slack * ref_l2) {
      rounding = true;
      why = fmt::format("relative L2 {:.3g} <= {} x the golden's own error against float64 ({:.3g})", bulk_l2,
                        ctx.rounding_slack, ref_l2);
    }
  }
  if (!rounding && F.k_bound) {
    const double bound = ctx.rounding_slack * std::sqrt(2.0 * static_cast<double>(F.K)) * F.u_op +
                         (F.u_op < F.u_store ? 2 * F.u_store : 0);
    if (bulk_l2 <= bound) {
      rounding = true;
      why = fmt::format("relative L2 {:.3g} <= {} sqrt(2K) u{} = {:.3g} (K = {}, u = {:.3g})", bulk_l2,
                        ctx.rounding_slack, F.u_op < F.u_store ? " + 2 u_storage" : "", bound, F.K, F.u_op);
    }
  }
  // Ops without a reduction bound: both outputs within one rounding of f(x)
  // each, so normwise ||c - g|| <= 2 u ||f|| -- judged on the norm, not per
  // element, since small outputs (cancellation, values near a root) have large
  // relative errors without any loss of accuracy.
  if (!rounding && !F.k_bound && F.nf == 0) {
    const double bound = 2 * std::max(F.u_op, F.u_store);
    if (bulk_l2 <= bound) {
      rounding = true;
      why = fmt::format("normwise: relative L2 {:.3g} <= 2u = {:.3g} (u = {:.3g}): each side within one rounding",
                        bulk_l2, bound, std::max(F.u_op, F.u_store));
    }
  }
  if (!rounding && rounding_sized) {
    rounding = true;
    why = fmt::format("max |e| = {:.3g} <= {} sqrt(2K) u RMS(g) + 2 u_s |g| = {:.3g} (K = {}, u = {:.3g})",
                      s.max_abs_error, ctx.rounding_slack, abs_allow, F.K, F.u_op);
  }
  // Beyond the bound but with more effective bits than any narrower format
  // keeps (the widest below the golden, + 2): the golden's own arithmetic,
  // amplified by the op's conditioning (x - mean in a norm over few values,
  // sums that cancel), which sqrt(2K) u relative to ||g|| does not include.
  // (Unless the error is one-sided: a systematic factor, rule 12'.)
  const std::optional<double> factor = outlier ? std::nullopt : one_sided_factor();
  if (!rounding && F.k_bound && F.nf == 0 && bulk_l2 > 0 && eff > narrow_limit() && !factor) {
    rounding = true;
    why = fmt::format("effective mantissa bits {:.1f} > {} (the widest format narrower than {}, + 2): the op's own "
                      "rounding, ill-conditioned (relative L2 {:.3g})", eff, narrow_limit(), float_name(F.f), bulk_l2);
  }
  if (!rounding && static_cast<double>(near) + static_cast<double>(outlier ? 1 : 0) >= 0.99 * n) {
    rounding = true;
    why = fmt::format("{} of {} mismatches within 3 ULP (>= 99 %): a few ULP of {}", near, F.n, float_name(F.f));
  }
  // Beyond the rounding allowance and still noise-like: for a reduction any
  // effective precision below the golden's; otherwise at least 3 bits lost.
  // Noise-like: for a reduction normwise (eff >= 1 from the relative L2 error
  // is ||c - g|| <= 0.14 ||g||): where its terms cancel, most outputs can be
  // small beside the terms and carry large relative errors (a batch norm's
  // input gradient over 2 values per channel is such a difference) without
  // the result as a whole being lost; otherwise fewer than half the
  // mismatches 1/4 or more off.
  const bool reduced = !rounding && bulk > 0 && eff >= 1 && eff <= F.p - (F.k_bound ? 1 : 3) &&
                       (F.k_bound || static_cast<double>(rel_big) < 0.5 * n);
  const bool floor = rounding || reduced;
  if (floor && outlier) {
    // The outlier's bits above the noise band tell one flip from several.
    // (Flips this far above the noise sit in the top mantissa bits or higher; the
    // band starts no lower than 4 bits below the top of the mantissa.)
    const int band = std::clamp(static_cast<int>(std::ceil(F.p - eff)) + 2, F.p - 4, F.p);
    const uint64_t x = bits_of(s.max_abs_error_golden, F.f) ^ bits_of(s.max_abs_error_candidate, F.f);
    const int high = __builtin_popcountll(band >= 64 ? 0 : (x >> band));
    auto& v = B.add(high <= 1 ? PEAT_ERROR_MODEL_BITFLIP_SINGLE : PEAT_ERROR_MODEL_BITFLIP_MULTI, 0.85, 1);
    if (x != 0) {
      v.bit = 63 - __builtin_clzll(x);
      if (high <= 1) v.polarity = static_cast<int>((bits_of(s.max_abs_error_candidate, F.f) >> v.bit) & 1u);
    }
    v.first_index = s.max_abs_error_index;
    evidence(v, "largest error |e| = {:.6g} at index {} is {:.0f}x the RMS {:.3g} of the other mismatches (>= {:.0f})",
             s.max_abs_error, s.max_abs_error_index, rest_rms > 0 ? s.max_abs_error / rest_rms : INFINITY, rest_rms, gap);
    evidence(v, "g = {:.6g}, c = {:.6g}: {} differing bit(s) at or above bit {} (the noise reaches about bit {})",
             s.max_abs_error_golden, s.max_abs_error_candidate, high, band, band - 2);
    set_spatial(v, sp);
    v.first_index = s.max_abs_error_index;  // the outlier, not the map's first mismatch
  }
  // A new NaN/Inf above a floor, each differing in one high bit only (the floor never
  // reaches the top mantissa bit): flips that overflowed.
  uint64_t high_hits = 0;
  int high_bit = -1;
  for (int b = std::max(0, F.p - 1); b < F.width; ++b)
    if (s.xor_bit_hist[b] > 0) { high_hits += s.xor_bit_hist[b]; high_bit = b; }
  if (floor && !outlier && F.nf > 0 && high_hits == F.nf) {
    auto& v = B.add(F.nf == 1 ? PEAT_ERROR_MODEL_BITFLIP_SINGLE : PEAT_ERROR_MODEL_BITFLIP_MULTI, 0.8,
                    static_cast<int64_t>(F.nf));
    v.bit = high_bit;
    evidence(v, "{} new NaN/Inf, and exactly {} differing bit(s) at or above bit {} (one per NaN/Inf): flips that "
                "overflowed", F.nf, high_hits, F.p - 1);
    set_spatial(v, sp);
  }
  if (F.nf > 0 && floor) {
    auto& v = B.add(PEAT_ERROR_MODEL_NONFINITE, 0.9, static_cast<int64_t>(F.nf));
    evidence(v, "{} new NaN/Inf where the golden is finite, above a noise floor", F.nf);
  }
  if (rounding) {
    auto& v = B.add(PEAT_ERROR_MODEL_ROUNDING, 0.9, static_cast<int64_t>(bulk));
    v.effective_mantissa_bits = eff;
    evidence(v, "{}", why);
    evidence(v, "{} pairs differ, relative L2 {:.3g}, effective mantissa bits {:.0f}", bulk, bulk_l2, eff);
    if (F.k_bound && !outlier && static_cast<double>(F.K) * F.u_op < 1) {
      const double gamma = static_cast<double>(F.K) * F.u_op / (1 - static_cast<double>(F.K) * F.u_op);
      evidence(v, "deterministic bound: max relative error {:.3g} vs 2 gamma_K = {:.3g} (exceeded only where the sum cancels)",
               s.max_rel_error, 2 * gamma);
    }
    return true;
  }
  if (reduced && factor) {
    varying_scale(*factor, eff, bulk_l2, bulk);
    return true;
  }
  if (reduced) {
    auto& v = B.add(PEAT_ERROR_MODEL_REDUCED_PRECISION, 0.85, static_cast<int64_t>(bulk));
    v.effective_mantissa_bits = eff;
    v.nearest_format = format_near(eff);
    evidence(v, "effective mantissa bits {:.1f} < {} ({}): nearest format {}", eff, F.p,
             F.k_bound ? "from the relative L2 error" : "0.95 quantile of the relative errors",
             format_name(v.nearest_format));
    evidence(v, "{}", grid_evidence());
    if (F.k_bound)
      evidence(v, "relative L2 {:.3g} exceeds the rounding bound {} sqrt(2K) u = {:.3g}", bulk_l2,
               ctx.rounding_slack, ctx.rounding_slack * std::sqrt(2.0 * static_cast<double>(F.K)) * F.u_op);
    else
      evidence(v, "{} of {} mismatches are 4 ULP or more apart", far, F.n);
    if (s.dropped_count > 0) evidence(v, "{} values flushed to zero", s.dropped_count);
    return true;
  }
  return false;
}

// ---- 13/14 GARBAGE / UNKNOWN -------------------------------------------------------------------
void Rules::garbage_or_unknown() {
  if (static_cast<double>(rel_big) >= 0.5 * n || F.cosine() < 0.9) {
    auto& v = B.add(PEAT_ERROR_MODEL_GARBAGE, 0.8, static_cast<int64_t>(F.n));
    if (static_cast<double>(rel_big) >= 0.5 * n)
      evidence(v, "{} of {} mismatches have relative error >= 1/4 or none defined (>= 50 %)", rel_big, F.n);
    else
      evidence(v, "cosine(g, c) {:.4f} < 0.9 ({} of {} mismatches have relative error >= 1/4 or none defined)",
               F.cosine(), rel_big, F.n);
    evidence(v, "{} differ in more than 4 bits; cosine {:.4f}, relative L2 {:.3g}",
             F.nb - std::min(F.nb, F.popcount_at_most(4)), F.cosine(), rel_l2);
    set_spatial(v, sp);
  } else {
    auto& v = B.add(PEAT_ERROR_MODEL_UNKNOWN, 0.5, static_cast<int64_t>(F.n));
    evidence(v, "no sufficient condition held: {} mismatches, relative L2 {:.3g}, {} of them >= 4 ULP apart", F.n,
             rel_l2, far);
  }
}

// ---- 12' SCALING by a factor that varies over the output ----------------------------
// An error beyond the rounding allowance whose c/g lies on one side of 1 in
// every well-conditioned pair is a systematic factor, not lost precision:
// rounding to nearest at any precision (narrow inputs, a narrow accumulator,
// another order) moves values up and down alike, so n pairs all on one side
// have probability 2^-n under it. A factor that differs per row or channel
// (a normalisation with another epsilon, a scale computed in another way)
// gives exactly this. Truncation to a narrow format is one-sided too, but its
// values lie on that format's grid: the candidate must carry more mantissa
// bits than any narrow format keeps (Features::grid_bits). Needs >= 32 ratio
// pairs covering at least half the mismatches, no sign change and
// |mean c/g - 1| >= 16 u_s.
std::optional<double> Rules::one_sided_factor() const {
  const peat_signature_t& s = s_;
  const int grid = F.grid_bits();
  if (grid < 0 || on_narrow_grid(grid)) return std::nullopt;
  if (!(s.ratio_count >= 32 && static_cast<double>(s.ratio_count) >= 0.5 * n && s.sign_flip_count == 0 &&
        s.ratio_min > 0 && (s.ratio_min >= 1 || s.ratio_max <= 1)))
    return std::nullopt;
  const double mean = analyzer::sums_of(s).ratio_mean;
  if (!(std::isfinite(mean) && std::fabs(mean - 1) >= 16 * F.u_store)) return std::nullopt;
  return mean;
}
void Rules::varying_scale(double mean, double eff, double bulk_l2, uint64_t bulk) {
  const peat_signature_t& s = s_;
  auto& v = B.add(PEAT_ERROR_MODEL_SCALING, 0.8, static_cast<int64_t>(bulk));
  v.alpha = mean;
  v.effective_mantissa_bits = eff;
  evidence(v, "c/g {} 1 in all {} well-conditioned pairs (range [{:.6g}, {:.6g}], mean {:.6g}): a factor that varies "
              "over the output (per row or channel, e.g. a normalisation with another epsilon); rounding moves values "
              "both ways, all on one side by chance 2^-{}",
           s.ratio_min >= 1 ? ">=" : "<=", s.ratio_count, s.ratio_min, s.ratio_max, mean, s.ratio_count);
  evidence(v, "{}; not a truncation to a narrow format", grid_evidence());
  evidence(v, "relative L2 {:.3g} beyond the rounding allowance ({:.1f} effective mantissa bits if read as noise)",
           bulk_l2, eff);
  set_spatial(v, sp);
}

}  // namespace peat::impl::detector::rules
