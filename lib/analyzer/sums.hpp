// Reading a signature's exact sums (peat_exact_sum_t) as doubles, and the
// ratio mean and M2 derived from them: the one place that turns the
// fixed-point sums into numbers for metrics, the detector and the C API.
#pragma once

#include <peat/analyzer.h>

namespace peat::impl::analyzer {

// The exact sum rounded to the nearest double (NaN/Inf per peat_exact_sum_value).
double sum_value(const peat_exact_sum_t& s) noexcept;

// Every sum of `s` as a double, the ratio mean and M2 (see peat_signature_sums_t;
// struct_size is set).
peat_signature_sums_t sums_of(const peat_signature_t& s) noexcept;

}  // namespace peat::impl::analyzer
