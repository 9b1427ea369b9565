// Names of the error models (peat_error_model_t, declared in peat/core.h
// because the injector and the Detector share it): the one table behind
// peat_error_model_name, the Detector's text and JSON, and the report.
#pragma once

#include <peat/core.h>

namespace peat::impl {

// "ROUNDING", "STUCK_AT", ...; "unknown" for values outside the enum. Static storage.
const char* error_model_name(peat_error_model_t model) noexcept;

}  // namespace peat::impl
