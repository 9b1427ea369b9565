#include "lib/analyzer/noise_band.hpp"

#include "lib/core/arguments.hpp"
#include "lib/core/error.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace peat::impl::analyzer {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

void require_finite(const double* v, std::size_t length, const char* what) {
  if (length == 0) fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: length is 0", what);
  for (std::size_t i = 0; i < length; ++i)
    if (!std::isfinite(v[i])) fail(PEAT_STATUS_INVALID_ARGUMENT, "{}[{}] is {} (golden losses must be finite)", what, i, v[i]);
}

void require_drift(double drift, const char* what) {
  if (!std::isnan(drift) && !(drift >= 0 && std::isfinite(drift)))
    fail(PEAT_STATUS_INVALID_ARGUMENT, "{} must be >= 0 and finite, or NaN when not known (got {})", what, drift);
}

// |a - b| where a NaN/Inf on one side only is infinitely far (both NaN: equal).
double distance(double a, double b) {
  const double d = std::fabs(a - b);
  if (!std::isnan(d)) return d;
  return (std::isnan(a) && std::isnan(b)) || a == b ? 0.0 : kInf;
}

}  // namespace

std::vector<double> moving_average(const double* v, std::size_t length, std::size_t window) {
  std::vector<double> out(length);
  double sum = 0;
  for (std::size_t i = 0; i < length; ++i) {
    sum += v[i];
    if (i >= window) sum -= v[i - window];
    const std::size_t n = std::min(i + 1, window);
    if (std::isfinite(sum)) {
      out[i] = sum / static_cast<double>(n);
    } else {  // recompute: a running sum cannot recover from Inf - Inf
      double s = 0;
      for (std::size_t j = i + 1 - n; j <= i; ++j) s += v[j];
      out[i] = s / static_cast<double>(n);
    }
  }
  return out;
}

NoiseBand::NoiseBand(const double* reference, std::size_t length, const peat_noise_band_options_t& options)
    : options_(options), max_param_drift_(kNaN) {
  if (options.window < 1) fail(PEAT_STATUS_INVALID_ARGUMENT, "options.window must be >= 1 (got {})", options.window);
  if (options.patience < 1) fail(PEAT_STATUS_INVALID_ARGUMENT, "options.patience must be >= 1 (got {})", options.patience);
  if (!(options.widen == 0 || (options.widen >= 1 && std::isfinite(options.widen))))
    fail(PEAT_STATUS_INVALID_ARGUMENT, "options.widen must be 0 (automatic) or finite and >= 1 (got {})", options.widen);
  require_finite(reference, length, "reference");
  reference_.assign(reference, reference + length);
  smoothed_reference_ = moving_average(reference, length, static_cast<std::size_t>(options.window));
}

double NoiseBand::factor() const {
  if (reruns_ == 0) return kNaN;
  return options_.widen > 0 ? options_.widen : 1.0 + 1.5 / static_cast<double>(reruns_);
}

void NoiseBand::add_rerun(const double* loss, std::size_t length, double param_drift) {
  require_arg(loss, "loss");
  require_finite(loss, length, "loss");
  require_drift(param_drift, "param_drift");
  const std::size_t n = std::min(length, reference_.size());
  const std::size_t w = std::min(static_cast<std::size_t>(options_.window), n);
  const std::vector<double> s = moving_average(loss, n, static_cast<std::size_t>(options_.window));
  double dev = 0;
  for (std::size_t t = w - 1; t < n; ++t) dev = std::max(dev, std::fabs(s[t] - smoothed_reference_[t]));
  max_deviation_ = std::max(max_deviation_, dev);
  if (!std::isnan(param_drift)) max_param_drift_ = std::isnan(max_param_drift_) ? param_drift : std::max(max_param_drift_, param_drift);
  ++reruns_;
}

peat_noise_band_info_t NoiseBand::info() const {
  peat_noise_band_info_t r{};
  r.struct_size = sizeof(r);
  r.reruns = reruns_;
  r.length = static_cast<int64_t>(reference_.size());
  r.window = options_.window;
  r.patience = options_.patience;
  r.factor = factor();
  r.max_deviation = max_deviation_;
  r.band = band();
  r.max_param_drift = max_param_drift_;
  return r;
}

peat_impact_t NoiseBand::judge(const double* loss, std::size_t length, const int64_t* steps, double param_drift) const {
  if (reruns_ == 0) fail(PEAT_STATUS_BAD_STATE, "the band has no golden rerun yet (peat_noise_band_add_rerun)");
  if (length == 0) fail(PEAT_STATUS_INVALID_ARGUMENT, "loss: length is 0");
  require_drift(param_drift, "param_drift");
  const auto step_of = [&](std::size_t i) { return steps ? steps[i] : static_cast<int64_t>(i); };
  const std::size_t n = std::min(length, reference_.size());
  const std::size_t w = std::min(static_cast<std::size_t>(options_.window), n);
  const std::vector<double> s = moving_average(loss, n, static_cast<std::size_t>(options_.window));
  const double b = band();

  peat_impact_t r{};
  r.struct_size = sizeof(r);
  r.steps = static_cast<int64_t>(n - (w - 1));
  r.max_deviation = 0;
  r.max_deviation_step = -1;
  r.first_beyond_step = -1;
  int64_t run = 0;
  for (std::size_t t = w - 1; t < n; ++t) {
    const double d = distance(s[t], smoothed_reference_[t]);
    if (r.max_deviation_step < 0 || d > r.max_deviation) {
      r.max_deviation = d;
      r.max_deviation_step = step_of(t);
    }
    if (d > b) {
      ++r.beyond_count;
      if (++run == options_.patience && r.first_beyond_step < 0)
        r.first_beyond_step = step_of(t + 1 - static_cast<std::size_t>(options_.patience));
    } else {
      run = 0;
    }
  }
  r.final_delta = s[n - 1] - smoothed_reference_[n - 1];
  r.effect = r.max_deviation == 0 ? 0.0 : (b > 0 ? r.max_deviation / b : kInf);
  r.verdict = r.first_beyond_step < 0 ? PEAT_IMPACT_INSIDE_NOISE : PEAT_IMPACT_OUTSIDE_NOISE;
  r.param_drift = param_drift;
  if (std::isnan(param_drift) || std::isnan(max_param_drift_)) r.param_drift_ratio = kNaN;
  else if (max_param_drift_ > 0) r.param_drift_ratio = param_drift / max_param_drift_;
  else r.param_drift_ratio = param_drift > 0 ? kInf : 0.0;
  return r;
}

}  // namespace peat::impl::analyzer
