// The defaults of the report's C structs (peat/report.h) and the checks and
// conversion of what peat_report_add_signature / _add_fi_run hand in: the C
// layer forwards here.
#pragma once

#include <peat/report.h>

#include "lib/report/model.hpp"

namespace peat::impl::report {

peat_report_options_t default_options() noexcept;
peat_report_fi_run_t default_fi_run() noexcept;

// Throws INVALID_ARGUMENT unless max_table_rows is in 1..1000000.
void check_options(const peat_report_options_t& options);

// Throws unless `detection` is a whole peat_detection_t of this library with a
// verdict_count in range.
void check_detection(const peat_detection_t& detection);

// A caller's run (already read by the versioned rule) as the report's FiRun;
// throws INVALID_ARGUMENT naming the field at fault.
FiRun fi_run_from(const peat_report_fi_run_t& run);

}  // namespace peat::impl::report
