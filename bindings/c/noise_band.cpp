// C entry points of the training-impact noise band (peat/analyzer.h): argument
// checks and forwarding to analyzer::NoiseBand.
#include <peat/analyzer.h>

#include "lib/analyzer/defaults.hpp"
#include "lib/analyzer/noise_band.hpp"
#include "bindings/c/barrier.hpp"

#include <memory>

using namespace peat::impl;  // the C layer forwards to the core (lib/)

PEAT_API void peat_noise_band_options_init(peat_noise_band_options_t* options) {
  if (options) *options = analyzer::default_noise_band_options();
}

PEAT_API peat_status_t peat_noise_band_create(const double* reference, size_t length,
                                              const peat_noise_band_options_t* options, peat_noise_band_t** out_band) {
  return c_call(__func__, [&] {
    require_arg(out_band, "out_band");
    if (length > 0) require_arg(reference, "reference");
    const auto opts = read_options(options, "options", peat_noise_band_options_init);
    *out_band = std::make_unique<peat_noise_band>(reference, length, opts).release();
  });
}

PEAT_API void peat_noise_band_destroy(peat_noise_band_t* band) { delete band; }

PEAT_API peat_status_t peat_noise_band_add_rerun(peat_noise_band_t* band, const double* loss, size_t length,
                                                 double param_drift) {
  return c_with(__func__, band, "band", [&](auto& b) { b.add_rerun(loss, length, param_drift); });
}

PEAT_API peat_status_t peat_noise_band_info(const peat_noise_band_t* band, peat_noise_band_info_t* out) {
  return c_get_struct(__func__, band, "band", out, [](auto& b) { return b.info(); });
}

PEAT_API peat_status_t peat_noise_band_judge(const peat_noise_band_t* band, const double* loss, size_t length,
                                             const int64_t* steps, double param_drift, peat_impact_t* out) {
  return c_with(__func__, band, "band", [&](const auto& b) {
    require_arg(loss, "loss");
    require_struct(out, "out");
    write_versioned(out, b.judge(loss, length, steps, param_drift), "out");
  });
}
