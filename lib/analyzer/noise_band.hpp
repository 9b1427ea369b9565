// The training-impact noise band: the run-to-run spread of golden loss curves
// (reruns with another seed / batch order) and the verdict on a candidate run
// against it (peat_noise_band_t; the rule is stated in include/peat/analyzer.h).
#pragma once

#include <peat/analyzer.h>

#include <cstddef>
#include <vector>

namespace peat::impl::analyzer {

class NoiseBand {
 public:
  // Throws INVALID_ARGUMENT for an empty or non-finite reference and bad options.
  NoiseBand(const double* reference, std::size_t length, const peat_noise_band_options_t& options);

  // Throws INVALID_ARGUMENT for a NULL, empty or non-finite series, a bad drift.
  void add_rerun(const double* loss, std::size_t length, double param_drift);
  peat_noise_band_info_t info() const;
  // The reference golden series as given (the report draws the band around it).
  const std::vector<double>& reference() const noexcept { return reference_; }
  // Throws BAD_STATE while no rerun was added; INVALID_ARGUMENT for bad input.
  peat_impact_t judge(const double* loss, std::size_t length, const int64_t* steps, double param_drift) const;

 private:
  double factor() const;
  double band() const { return factor() * max_deviation_; }

  peat_noise_band_options_t options_;
  std::vector<double> reference_;
  std::vector<double> smoothed_reference_;
  uint32_t reruns_ = 0;
  double max_deviation_ = 0;
  double max_param_drift_;  // NaN until a rerun brings one
};

// Trailing moving average over `window` values (fewer at the start); NaN/Inf
// stay inside the windows they touch.
std::vector<double> moving_average(const double* v, std::size_t length, std::size_t window);

}  // namespace peat::impl::analyzer

struct peat_noise_band : peat::impl::analyzer::NoiseBand {
  using peat::impl::analyzer::NoiseBand::NoiseBand;
};
