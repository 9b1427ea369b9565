#include "lib/analyzer/sums.hpp"

#include "backends/common/exact_sum.h"

#include <cmath>
#include <cstring>

namespace peat::impl::analyzer {
namespace {

// Double-double helpers (error-free transformations).
struct DD {
  double hi, lo;
};
DD two_sum(double a, double b) {
  const double s = a + b, bp = s - a;
  return {s, (a - (s - bp)) + (b - bp)};
}
DD two_prod(double a, double b) {
  const double p = a * b;
  return {p, std::fma(a, b, -p)};
}
// (x.hi + x.lo) / n in double-double.
DD div(DD x, double n) {
  const double q = x.hi / n;
  const DD back = two_prod(q, n);
  return {q, ((x.hi - back.hi) - back.lo + x.lo) / n};
}

}  // namespace

double sum_value(const peat_exact_sum_t& s) noexcept { return hd::exact_sum_value(s); }

peat_signature_sums_t sums_of(const peat_signature_t& s) noexcept {
  peat_signature_sums_t out;
  std::memset(&out, 0, sizeof(out));
  out.struct_size = sizeof(out);
  out.sum_error = sum_value(s.sum_error);
  out.sum_abs_error = sum_value(s.sum_abs_error);
  out.sum_sq_error = sum_value(s.sum_sq_error);
  out.sum_sq_golden = sum_value(s.sum_sq_golden);
  out.sum_sq_candidate = sum_value(s.sum_sq_candidate);
  out.sum_golden_candidate = sum_value(s.sum_golden_candidate);
  if (s.ratio_count == 0) return out;
  // With S1 = sum d, S2 = sum d^2 (d = ratio - 1): mean = 1 + S1/n and
  // M2 = S2 - S1^2/n, in double-double from the exact sums so that the
  // cancellation in M2 (ratios close together) keeps about 100 bits.
  const double n = static_cast<double>(s.ratio_count);
  DD s1, s2;
  hd::exact_sum_value2(s.ratio_dev_sum, s1.hi, s1.lo);
  hd::exact_sum_value2(s.ratio_dev_sq_sum, s2.hi, s2.lo);
  const DD mean_d = div(s1, n);
  const DD one_plus = two_sum(1.0, mean_d.hi);
  out.ratio_mean = one_plus.hi + (one_plus.lo + mean_d.lo);
  DD sq = two_prod(s1.hi, s1.hi);
  sq.lo += 2 * s1.hi * s1.lo;
  const DD q = div(sq, n);
  const DD diff = two_sum(s2.hi, -q.hi);
  const double m2 = diff.hi + (diff.lo + (s2.lo - q.lo));
  out.ratio_m2 = std::isnan(m2) ? m2 : (m2 > 0 ? m2 : 0.0);
  return out;
}

}  // namespace peat::impl::analyzer
