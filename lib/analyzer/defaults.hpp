// The defaults of the analyzer's C structs (peat/analyzer.h): the
// peat_*_init functions of the C layer forward here, and lib/ uses these
// directly, so each default is written once.
#pragma once

#include <peat/analyzer.h>

namespace peat::impl::analyzer {

peat_signature_config_t default_config() noexcept;
peat_spatial_map_t empty_map() noexcept;
peat_aggregator_options_t default_aggregator_options() noexcept;
peat_loss_compare_options_t default_loss_compare_options() noexcept;
peat_noise_band_options_t default_noise_band_options() noexcept;

// peat_default_tolerance: the default rtol / atol of `dtype` (analyze.hpp's
// default_tolerance; INVALID_ARGUMENT for no supported float) into either
// output, each of which may be NULL.
void default_tolerance(DLDataType dtype, double* rtol, double* atol);

// Reads the caller's (possibly older, NULL = defaults) config.
peat_signature_config_t read_config(const peat_signature_config_t* config, const char* name = "config");

}  // namespace peat::impl::analyzer
