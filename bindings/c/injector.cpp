// C entry points of peat/injector.h: check, convert, forward.
#include <peat/injector.h>

#include "bindings/c/barrier.hpp"
#include "lib/injector/inject.hpp"
#include "lib/injector/injector.hpp"
#include "lib/session/session.hpp"

#include <memory>

using namespace peat::impl;  // the C layer forwards to the core (lib/)

namespace {

// The action of a decide call, or PEAT_ACTION_INVALID when it failed.
template <typename Body> peat_action_t decided(const char* function, peat_injector_t* injector, Body&& body) {
  peat_action_t action = PEAT_ACTION_INVALID;
  const peat_status_t status = c_call(function, [&] { action = body(deref(injector, "injector")); });
  return status == PEAT_STATUS_OK ? action : PEAT_ACTION_INVALID;
}

}  // namespace

extern "C" {

PEAT_API void peat_inject_spec_init(peat_inject_spec_t* spec, peat_inject_kind_t kind) {
  if (spec) *spec = injector::default_spec(kind);
}
PEAT_API void peat_inject_truth_init(peat_inject_truth_t* p) { if (p) *p = injector::empty_truth(); }

PEAT_API peat_status_t peat_inject_apply(const peat_inject_spec_t* spec, DLTensor* tensor, const DLTensor* source,
                                         uint64_t seed, uint32_t op, uint32_t call, peat_inject_truth_t* out_truth) {
  return c_call(__func__, [&] {
    const peat_inject_spec_t s = injector::read_spec(spec, "spec");
    require_arg(tensor, "tensor");
    injector::with_truth_out(out_truth, [&](auto& t) { injector::apply(s, tensor, source, seed, op, call, t); });
  });
}

PEAT_API peat_status_t peat_inject_round_value(double value, peat_float_format_t format, peat_rounding_t rounding,
                                               int32_t saturate, double* out_value) {
  return c_call(__func__, [&] {
    require_arg(out_value, "out_value");
    *out_value = injector::checked_round_value(value, format, rounding, saturate);
  });
}

PEAT_API const char* peat_inject_kind_name(peat_inject_kind_t kind) { return injector::kind_name(kind); }
PEAT_API const char* peat_action_name(peat_action_t action) { return injector::action_name(action); }
PEAT_API void peat_injector_options_init(peat_injector_options_t* p) { if (p) *p = injector::default_options(); }
PEAT_API void peat_injector_policy_init(peat_injector_policy_t* p) { if (p) *p = injector::default_policy(); }

PEAT_API peat_status_t peat_injector_create(peat_session_t* session, const peat_injector_options_t* options,
                                            peat_injector_t** out_injector) {
  return c_with(__func__, session, "session", [&](auto& s) {
    require_arg(out_injector, "out_injector");
    const auto opts = read_options(options, "options", peat_injector_options_init);
    *out_injector = std::make_unique<peat_injector>(s, opts).release();
  });
}

PEAT_API void peat_injector_destroy(peat_injector_t* injector) { delete injector; }

PEAT_API peat_status_t peat_injector_add_policy(peat_injector_t* injector, const peat_injector_policy_t* policy,
                                                uint32_t* out_index) {
  return c_with(__func__, injector, "injector", [&](auto& inj) {
    require_arg(policy, "policy");
    set_optional(out_index, inj.add_policy(read_options(policy, "policy", peat_injector_policy_init)));
  });
}

PEAT_API peat_status_t peat_injector_clear_policies(peat_injector_t* injector) {
  return c_call(__func__, [&] { deref(injector, "injector").clear_policies(); });
}

PEAT_API peat_action_t peat_injector_decide(peat_injector_t* injector, uint32_t op, uint64_t* out_call) {
  uint64_t call = 0;
  const peat_action_t action = decided(__func__, injector, [&](auto& inj) { return inj.decide(op, call); });
  if (action != PEAT_ACTION_INVALID && out_call) *out_call = call;
  return action;
}

PEAT_API peat_action_t peat_injector_decide_call(peat_injector_t* injector, uint32_t op, uint64_t call) {
  return decided(__func__, injector, [&](auto& inj) { return inj.decide_call(op, call); });
}

PEAT_API peat_action_t peat_injector_decide_policy(peat_injector_t* injector, uint32_t op, uint64_t* out_call,
                                                   int32_t* out_policy) {
  uint64_t call = 0;
  const injector::Policy* fired = nullptr;
  const peat_action_t action = decided(__func__, injector, [&](auto& inj) { return inj.decide(op, call, &fired); });
  if (action != PEAT_ACTION_INVALID && out_call) *out_call = call;
  if (out_policy) *out_policy = action != PEAT_ACTION_INVALID && fired ? static_cast<int32_t>(fired->index) : -1;
  return action;
}

PEAT_API peat_status_t peat_injector_inject(peat_injector_t* injector, int32_t policy, uint32_t op, uint64_t call,
                                            DLTensor* tensor, const DLTensor* stale, peat_inject_truth_t* out_truth) {
  return c_with(__func__, injector, "injector", [&](auto& inj) {
    require_arg(tensor, "tensor");
    injector::with_truth_out(out_truth, [&](auto& t) { inj.inject(policy, op, call, tensor, stale, t); });
  });
}

PEAT_API peat_status_t peat_injector_set_candidate(peat_injector_t* injector, const char* op_pattern,
                                                   peat_kernel_fn fn, void* ctx) {
  return c_with(__func__, injector, "injector", [&](auto& inj) {
    require_arg(op_pattern, "op_pattern");
    inj.set_candidate(op_pattern, fn, ctx, "(function pointer)");
  });
}

PEAT_API peat_status_t peat_injector_set_candidate_symbol(peat_injector_t* injector, const char* op_pattern,
                                                          const char* spec, void* ctx) {
  return c_with(__func__, injector, "injector", [&](auto& inj) {
    require_arg(op_pattern, "op_pattern");
    require_arg(spec, "spec");
    inj.set_candidate_symbol(op_pattern, spec, ctx);
  });
}

PEAT_API peat_status_t peat_injector_dispatch(peat_injector_t* injector, uint32_t op, const DLTensor* inputs,
                                              int32_t n_in, DLTensor* outputs, int32_t n_out, const void* attrs,
                                              peat_kernel_fn golden_fn, void* golden_ctx, peat_action_t* out_action,
                                              uint64_t* out_call) {
  return c_with(__func__, injector, "injector", [&](auto& inj) {
    peat_action_t action = PEAT_ACTION_INVALID;
    uint64_t call = 0;
    inj.dispatch(op, inputs, n_in, outputs, n_out, attrs, golden_fn, golden_ctx, action, call);
    if (out_action) *out_action = action;
    if (out_call) *out_call = call;
  });
}

PEAT_API peat_status_t peat_injector_firing_count(const peat_injector_t* injector, uint64_t* out_count,
                                                  uint64_t* out_dropped) {
  return c_with(__func__, injector, "injector", [&](const auto& inj) {
    require_arg(out_count, "out_count");
    *out_count = inj.firing_count();
    if (out_dropped) *out_dropped = inj.firings_dropped();
  });
}

PEAT_API peat_status_t peat_injector_firing(const peat_injector_t* injector, uint64_t index, peat_firing_t* out) {
  return c_get_struct(__func__, injector, "injector", out, [&](auto& inj) { return inj.firing(index); });
}

PEAT_API peat_status_t peat_injector_firing_signature(const peat_injector_t* injector, uint64_t index,
                                                      peat_signature_t* out) {
  return c_get_struct(__func__, injector, "injector", out, [&](auto& inj) { return inj.firing_signature(index); });
}

PEAT_API peat_status_t peat_injector_firing_rerun_signature(const peat_injector_t* injector, uint64_t index,
                                                            peat_signature_t* out) {
  return c_get_struct(__func__, injector, "injector", out,
                      [&](auto& inj) { return inj.firing_rerun_signature(index); });
}

PEAT_API peat_status_t peat_injector_write_log(const peat_injector_t* injector, const char* path, int32_t append) {
  return c_with(__func__, injector, "injector", [&](const auto& inj) {
    require_arg(path, "path");
    inj.write_log(path, append != 0);
  });
}

}  // extern "C"
