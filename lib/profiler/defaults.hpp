// The profiler's C structs on the lib/ side: their defaults (the
// peat_*_init functions forward here) and their conversion to the C++ types,
// with the checks of their fields.
#pragma once

#include <peat/profiler.h>

#include "lib/profiler/profiler.hpp"

namespace peat::impl::profiler {

peat_profiler_options_t default_profiler_options() noexcept;
// From SampleRule's member defaults (profiler.hpp), the one home of them.
peat_sample_rule_t default_sample_rule() noexcept;
peat_op_record_t default_op_record() noexcept;

// Check the fields (INVALID_ARGUMENT naming rule.<field> / record.<field>)
// and convert. The results borrow the C struct's pointers.
SampleRule sample_rule_from(const peat_sample_rule_t& rule);
OpArgs op_args_from(const peat_op_record_t& record);

}  // namespace peat::impl::profiler
