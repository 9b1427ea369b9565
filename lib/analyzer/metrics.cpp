#include "lib/analyzer/metrics.hpp"

#include "lib/core/dtype.hpp"
#include "lib/core/error.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace peat::impl::analyzer {

double rmse(const peat_signature_t& s) noexcept {
  if (s.finite_count == 0) return 0;
  return std::sqrt(std::max(0.0, sum_value(s.sum_sq_error)) / static_cast<double>(s.finite_count));
}

double relative_l2(const peat_signature_t& s) noexcept {
  const double e2 = std::max(0.0, sum_value(s.sum_sq_error)), g2 = std::max(0.0, sum_value(s.sum_sq_golden));
  if (e2 == 0) return 0;
  if (g2 == 0) return std::numeric_limits<double>::infinity();
  return std::sqrt(e2 / g2);
}

double sqnr_db(const peat_signature_t& s) noexcept {
  const double e2 = std::max(0.0, sum_value(s.sum_sq_error)), g2 = std::max(0.0, sum_value(s.sum_sq_golden));
  if (e2 == 0) return std::numeric_limits<double>::infinity();
  return 10.0 * std::log10(g2 / e2);
}

double cosine(const peat_signature_t& s) noexcept {
  const double g2 = std::max(0.0, sum_value(s.sum_sq_golden)), c2 = std::max(0.0, sum_value(s.sum_sq_candidate));
  if (g2 == 0 && c2 == 0) return 1;
  if (g2 == 0 || c2 == 0) return 0;
  return sum_value(s.sum_golden_candidate) / (std::sqrt(g2) * std::sqrt(c2));
}

bool allclose(const peat_signature_t& s) noexcept { return s.tolerance_fail_count == 0; }

double effective_mantissa_bits(const peat_signature_t& s, double quantile) {
  if (!(quantile > 0 && quantile <= 1)) fail(PEAT_STATUS_INVALID_ARGUMENT, "quantile {} is not in (0, 1]", quantile);
  const auto kind = float_kind(s.golden_dtype);
  if (!kind) fail(PEAT_STATUS_BAD_STATE, "the signature is empty (no golden dtype)");
  const int golden_bits = mantissa_bits(*kind);
  uint64_t defined = 0;
  for (int b = 0; b < PEAT_SIGNATURE_REL_UNDEFINED_BUCKET; ++b) defined += s.rel_hist[b];
  if (defined == 0) fail(PEAT_STATUS_BAD_STATE, "the signature has no pair with a defined relative error");
  // The smallest bucket whose cumulative count reaches quantile * defined.
  const double target = quantile * static_cast<double>(defined);
  uint64_t cumulative = 0;
  int bucket = 0;
  for (; bucket < PEAT_SIGNATURE_REL_UNDEFINED_BUCKET; ++bucket) {
    cumulative += s.rel_hist[bucket];
    if (static_cast<double>(cumulative) >= target) break;
  }
  if (bucket == 0) return golden_bits;
  int lower_exponent;  // the bucket's lower edge 2^lower_exponent
  if (bucket == 1)
    lower_exponent = PEAT_SIGNATURE_REL_MIN_EXPONENT - 1;
  else if (bucket == PEAT_SIGNATURE_REL_LARGE_BUCKET)
    lower_exponent = 0;
  else
    lower_exponent = bucket - 2 + PEAT_SIGNATURE_REL_MIN_EXPONENT;
  const double bits = -static_cast<double>(lower_exponent) - 2;
  return std::clamp(bits, 0.0, static_cast<double>(golden_bits));
}

void rounding_bound_ratio(const peat_signature_t& s, double& deterministic, double& probabilistic) {
  const double k = static_cast<double>(s.reduction_length), u = s.unit_roundoff;
  if (s.reduction_length <= 0)
    fail(PEAT_STATUS_BAD_STATE, "the reduction length K is unknown (set config.reduction_length)");
  if (!(u > 0) || k * u >= 1)
    fail(PEAT_STATUS_BAD_STATE, "K u = {} * {} is not below 1: the bound gamma_K does not exist", k, u);
  const double gamma = k * u / (1 - k * u);
  deterministic = s.max_rel_error / (2 * gamma);
  probabilistic = relative_l2(s) / (std::sqrt(2 * k) * u);
}

}  // namespace peat::impl::analyzer
