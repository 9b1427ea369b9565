// Derived metrics of a signature (functions, not fields: DESIGN.md §5).
#pragma once

#include <peat/analyzer.h>

#include "lib/analyzer/sums.hpp"

namespace peat::impl::analyzer {

double rmse(const peat_signature_t& s) noexcept;
double relative_l2(const peat_signature_t& s) noexcept;
double sqnr_db(const peat_signature_t& s) noexcept;
double cosine(const peat_signature_t& s) noexcept;
bool allclose(const peat_signature_t& s) noexcept;
// Throws INVALID_ARGUMENT (quantile) or BAD_STATE (empty signature).
double effective_mantissa_bits(const peat_signature_t& s, double quantile);
// Throws BAD_STATE when K is unknown or K u >= 1.
void rounding_bound_ratio(const peat_signature_t& s, double& deterministic, double& probabilistic);

}  // namespace peat::impl::analyzer
