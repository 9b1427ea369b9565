// Training-outcome comparison: a golden loss series against a runtime-FI one,
// and two checkpoints (named tensor sets) tensor by tensor.
#pragma once

#include <peat/analyzer.h>

#include <cstddef>
#include <string>

namespace peat::impl::analyzer {

// See peat_compare_loss: `golden` and `candidate` may be NULL only when
// `length` is 0; NULL `options` means the defaults. Throws INVALID_ARGUMENT
// for a NULL series, bad options or length.
peat_loss_comparison_t compare_loss(const double* golden, const double* candidate, const int64_t* steps,
                                    std::size_t length, const peat_loss_compare_options_t* options);

// See peat_compare_checkpoints (NULL `config`: the defaults). `out_count`
// (when not NULL) receives n, the number of results; out[0 .. n) are filled,
// and a capacity below n throws BUFFER_TOO_SMALL. Returns the message of the
// first pair that could not be compared ("" when none). Throws
// INVALID_ARGUMENT for malformed input arrays.
std::string compare_checkpoints(const peat_named_tensor_t* golden, std::size_t n_golden,
                                const peat_named_tensor_t* candidate, std::size_t n_candidate,
                                const peat_signature_config_t* config, peat_tensor_drift_t* out,
                                peat_signature_t* out_signatures, std::size_t capacity, std::size_t* out_count);

}  // namespace peat::impl::analyzer
