#include "lib/injector/inject.hpp"

namespace peat::impl::injector {

const char* kind_name(peat_inject_kind_t kind) noexcept {
  switch (kind) {
    case PEAT_INJECT_BITFLIP: return "bitflip";
    case PEAT_INJECT_STUCK_AT: return "stuck_at";
    case PEAT_INJECT_VALUE: return "value";
    case PEAT_INJECT_REGION: return "region";
    case PEAT_INJECT_SCALE: return "scale";
    case PEAT_INJECT_TRANSPOSE: return "transpose";
    case PEAT_INJECT_SHIFT: return "shift";
    case PEAT_INJECT_PRECISION: return "precision";
    case PEAT_INJECT_ULP_NOISE: return "ulp_noise";
    default: return "unknown";
  }
}

const char* action_name(peat_action_t action) noexcept {
  switch (action) {
    case PEAT_ACTION_RUN_GOLDEN: return "run_golden";
    case PEAT_ACTION_RUN_CANDIDATE: return "run_candidate";
    case PEAT_ACTION_RUN_BOTH: return "run_both";
    case PEAT_ACTION_INJECT: return "inject";
    default: return "unknown";
  }
}

}  // namespace peat::impl::injector
