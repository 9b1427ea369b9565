// Defaults of the analyzer's C structs (see defaults.hpp).
#include "lib/analyzer/defaults.hpp"

#include "lib/analyzer/analyze.hpp"
#include "lib/core/arguments.hpp"
#include "lib/core/dtype.hpp"
#include "lib/core/versioned_struct.hpp"

namespace peat::impl::analyzer {

peat_signature_config_t default_config() noexcept {
  auto c = zeroed_struct<peat_signature_config_t>();
  c.rtol = -1;  // negative: the golden dtype's default tolerance
  c.atol = -1;
  c.ratio_min_abs = -1;
  c.tile_rows = 32;
  c.tile_cols = 32;
  c.map_mismatch = PEAT_MISMATCH_TOLERANCE;
  return c;
}

peat_spatial_map_t empty_map() noexcept {
  auto m = zeroed_struct<peat_spatial_map_t>();
  m.first_mismatch = -1;
  m.last_mismatch = -1;
  m.longest_run_start = -1;
  return m;
}

peat_aggregator_options_t default_aggregator_options() noexcept {
  auto o = zeroed_struct<peat_aggregator_options_t>();
  o.max_ops = 4096;
  o.series_capacity = 4096;
  return o;
}

peat_loss_compare_options_t default_loss_compare_options() noexcept {
  auto o = zeroed_struct<peat_loss_compare_options_t>();
  o.band_rel = 0.01;
  o.window = 1;
  o.patience = 1;
  return o;
}

peat_noise_band_options_t default_noise_band_options() noexcept {
  auto o = zeroed_struct<peat_noise_band_options_t>();
  o.window = 20;
  o.patience = 1;
  return o;
}

void default_tolerance(DLDataType dtype, double* rtol, double* atol) {
  double r = 0, a = 0;
  default_tolerance(require_float(dtype, "dtype"), r, a);
  set_optional(rtol, r);
  set_optional(atol, a);
}

peat_signature_config_t read_config(const peat_signature_config_t* config, const char* name) {
  return read_options(config, name, [](peat_signature_config_t* c) { *c = default_config(); });
}

}  // namespace peat::impl::analyzer
