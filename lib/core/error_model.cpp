#include "lib/core/error_model.hpp"

namespace peat::impl {

const char* error_model_name(peat_error_model_t model) noexcept {
  switch (model) {
    case PEAT_ERROR_MODEL_EXACT: return "EXACT";
    case PEAT_ERROR_MODEL_ROUNDING: return "ROUNDING";
    case PEAT_ERROR_MODEL_REDUCED_PRECISION: return "REDUCED_PRECISION";
    case PEAT_ERROR_MODEL_BITFLIP_SINGLE: return "BITFLIP_SINGLE";
    case PEAT_ERROR_MODEL_BITFLIP_MULTI: return "BITFLIP_MULTI";
    case PEAT_ERROR_MODEL_STUCK_AT: return "STUCK_AT";
    case PEAT_ERROR_MODEL_REGION: return "REGION";
    case PEAT_ERROR_MODEL_DROPPED_WRITES: return "DROPPED_WRITES";
    case PEAT_ERROR_MODEL_SCALING: return "SCALING";
    case PEAT_ERROR_MODEL_NONFINITE: return "NONFINITE";
    case PEAT_ERROR_MODEL_NONDETERMINISM: return "NONDETERMINISM";
    case PEAT_ERROR_MODEL_GARBAGE: return "GARBAGE";
    case PEAT_ERROR_MODEL_UNKNOWN: return "UNKNOWN";
    default: return "unknown";
  }
}

}  // namespace peat::impl
