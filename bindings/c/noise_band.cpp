// C entry points of the training-impact noise band (peat/analyzer.h): argument
// checks and forwarding to peat::analyzer::NoiseBand.
#include <peat/analyzer.h>

#include "analyzer/noise_band.hpp"
#include "barrier.hpp"
#include "options.hpp"

#include <cstring>
#include <memory>

PEAT_API void peat_noise_band_options_init(peat_noise_band_options_t* options) {
  if (options == nullptr) return;
  std::memset(options, 0, sizeof(*options));
  options->struct_size = sizeof(peat_noise_band_options_t);
  options->window = 20;
  options->widen = 0;
  options->patience = 1;
}

PEAT_API peat_status_t peat_noise_band_create(const double* reference, size_t length,
                                              const peat_noise_band_options_t* options, peat_noise_band_t** out_band) {
  return peat::c_call(__func__, [&] {
    peat::require_arg(out_band, "out_band");
    if (length > 0) peat::require_arg(reference, "reference");
    const auto opts = peat::read_options(options, "options", peat_noise_band_options_init);
    *out_band = std::make_unique<peat_noise_band>(reference, length, opts).release();
  });
}

PEAT_API void peat_noise_band_destroy(peat_noise_band_t* band) { delete band; }

PEAT_API peat_status_t peat_noise_band_add_rerun(peat_noise_band_t* band, const double* loss, size_t length,
                                                 double param_drift) {
  return peat::c_call(__func__, [&] {
    peat::require_arg(band, "band");
    peat::require_arg(loss, "loss");
    band->add_rerun(loss, length, param_drift);
  });
}

PEAT_API peat_status_t peat_noise_band_info(const peat_noise_band_t* band, peat_noise_band_info_t* out) {
  return peat::c_call(__func__, [&] {
    peat::require_arg(band, "band");
    peat::require_out_struct(out, "out");
    *out = band->info();
  });
}

PEAT_API peat_status_t peat_noise_band_judge(const peat_noise_band_t* band, const double* loss, size_t length,
                                             const int64_t* steps, double param_drift, peat_impact_t* out) {
  return peat::c_call(__func__, [&] {
    peat::require_arg(band, "band");
    peat::require_arg(loss, "loss");
    peat::require_out_struct(out, "out");
    *out = band->judge(loss, length, steps, param_drift);
  });
}
