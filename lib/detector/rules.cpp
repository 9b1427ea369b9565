// The order in which the Detector's rules run (Rules::run) and the quantities
// several of them share (Rules::derive); the rules themselves are in
// rules_exact_flips.cpp, rules_spatial.cpp and rules_floor.cpp.
#include "lib/detector/rules.hpp"

#include <cmath>
#include <cstdint>

namespace peat::impl::detector::rules {

void Rules::run() {
  nondeterminism();
  if (exact()) return;
  derive();
  bool done = bitflip_single() || stuck_at() || scaling() || bitflip_multi_one_bit() || within_gamma() || region() ||
              nonfinite() || dropped_writes() || stuck_over_floor() || bitflip_multi_sparse() ||
              dropped_over_floor() || outliers_over_floor() || noise_floor();
  if (!done) garbage_or_unknown();
  if (F.nf > 0 && !B.has(PEAT_ERROR_MODEL_NONFINITE)) {
    auto& v = B.add(PEAT_ERROR_MODEL_NONFINITE, 0.9, static_cast<int64_t>(F.nf));
    evidence(v, "{} new NaN/Inf where the golden is finite", F.nf);
  }
}

void Rules::derive() {
  const peat_signature_t& s = s_;
  rel_l2 = F.relative_l2();
  sb = F.single_bit();
  far = F.ulp_at_least(4);
  rel_big = F.rel_at_least(-2) + s.spurious_count + F.nf;
  // Reductions whose accumulation is wider than the storage (u < u_s): the outputs of
  // two summation orders differ in few elements, by one storage ULP, or by more on
  // outputs that cancel (tiny |g|). Every error within this absolute allowance is
  // rounding-sized.
  abs_allow = F.k_bound ? ctx_.rounding_slack * std::sqrt(2.0 * static_cast<double>(F.K)) * F.u_op * F.rms_golden() +
                              (F.u_op < F.u_store ? 2 * F.u_store * std::fabs(s.max_abs_error_golden) : 0)
                        : 0;
  rounding_sized = F.k_bound && F.u_op < F.u_store && F.nf == 0 && s.spurious_count == 0 &&
                   s.max_abs_error <= abs_allow;
  // Within the deterministic bound 2 gamma_K + 2 u_s (relative to |g|), and
  // the bound small enough that no sign, exponent or top mantissa flip (>= 1/4
  // relative) fits in it.
  if (F.k_bound && F.nf == 0 && s.spurious_count == 0 && s.dropped_count == 0 && s.lost_nonfinite_count == 0) {
    const double Ku = static_cast<double>(F.K) * F.u_op;
    if (Ku < 0.5) {
      gamma_bound = 2 * Ku / (1 - Ku) + 2 * F.u_store;
      gamma_ok = gamma_bound < 0.125 && s.max_rel_error <= gamma_bound;
    }
  }
  max_pair_ulps = [&] {
    if (s.max_abs_error_index < 0) return uint64_t{0};
    const uint64_t a = bits_of(s.max_abs_error_golden, F.f), b = bits_of(s.max_abs_error_candidate, F.f);
    const uint64_t sign = uint64_t{1} << (F.width - 1);
    const uint64_t ma = a & (sign - 1), mb = b & (sign - 1);
    if ((a & sign) == (b & sign)) return ma > mb ? ma - mb : mb - ma;
    return ma + mb;
  }();
  if (sb >= 0) {
    if (F.is_sign(sb)) {
      const double se = sum_of(s.sum_error), sa = sum_of(s.sum_abs_error);
      if (sa > 0 && std::fabs(std::fabs(se) - sa) <= 1e-9 * sa) polarity = se < 0 ? 1 : 0;
    } else if (s.ratio_count > 0) {
      if (s.ratio_min >= 1) polarity = 1;
      else if (s.ratio_max <= 1) polarity = 0;
    }
  }
}

}  // namespace peat::impl::detector::rules
