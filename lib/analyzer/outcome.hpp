// Training-outcome comparison: a golden loss series against a runtime-FI one,
// and two checkpoints (named tensor sets) tensor by tensor.
#pragma once

#include <peat/analyzer.h>

#include <cstddef>
#include <string>

namespace peat::impl::analyzer {

// See peat_compare_loss. Throws INVALID_ARGUMENT for bad options / length.
peat_loss_comparison_t compare_loss(const double* golden, const double* candidate, const int64_t* steps,
                                    std::size_t length, const peat_loss_compare_options_t& options);

// See peat_compare_checkpoints. Fills out[0 .. min(capacity, n)) and returns n
// (the number of results). `first_problem` receives the message of the first
// pair that could not be compared ("" when none). Throws INVALID_ARGUMENT for
// malformed input arrays.
std::size_t compare_checkpoints(const peat_named_tensor_t* golden, std::size_t n_golden,
                                const peat_named_tensor_t* candidate, std::size_t n_candidate,
                                const peat_signature_config_t& config, peat_tensor_drift_t* out,
                                peat_signature_t* out_signatures, std::size_t capacity,
                                std::string& first_problem);

}  // namespace peat::impl::analyzer
