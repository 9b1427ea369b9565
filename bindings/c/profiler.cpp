// C entry points of peat/profiler.h: check, convert, forward.
#include <peat/profiler.h>

#include "bindings/c/barrier.hpp"
#include "lib/profiler/defaults.hpp"
#include "lib/profiler/profiler.hpp"
#include "lib/session/session.hpp"

#include <memory>

using namespace peat::impl;  // the C layer forwards to the core (lib/)

extern "C" {

PEAT_API void peat_profiler_options_init(peat_profiler_options_t* p) { if (p) *p = profiler::default_profiler_options(); }
PEAT_API void peat_sample_rule_init(peat_sample_rule_t* p) { if (p) *p = profiler::default_sample_rule(); }
PEAT_API void peat_op_record_init(peat_op_record_t* p) { if (p) *p = profiler::default_op_record(); }

PEAT_API peat_status_t peat_profiler_create(peat_session_t* session, const peat_profiler_options_t* options,
                                            peat_profiler_t** out_profiler) {
  return c_with(__func__, session, "session", [&](auto& s) {
    require_arg(options, "options");
    require_arg(out_profiler, "out_profiler");
    const auto opts = read_options(options, "options", peat_profiler_options_init);
    *out_profiler = std::make_unique<peat_profiler>(s, opts).release();
  });
}

PEAT_API void peat_profiler_destroy(peat_profiler_t* profiler) { delete profiler; }

PEAT_API peat_status_t peat_profiler_add_rule(peat_profiler_t* profiler, const peat_sample_rule_t* rule) {
  return c_with(__func__, profiler, "profiler", [&](auto& p) {
    require_arg(rule, "rule");
    p.add_rule(profiler::sample_rule_from(read_options(rule, "rule", peat_sample_rule_init)));
  });
}

PEAT_API peat_status_t peat_profiler_should_record(peat_profiler_t* profiler, uint32_t op, uint64_t call, int64_t step,
                                                   int32_t* out_record) {
  return c_get(__func__, profiler, "profiler", out_record, "out_record",
               [&](auto& p) { return p.should_record(op, call, step) ? 1 : 0; });
}

PEAT_API peat_status_t peat_profiler_record_op(peat_profiler_t* profiler, const peat_op_record_t* record,
                                               int32_t* out_recorded, uint64_t* out_call) {
  return c_with(__func__, profiler, "profiler", [&](auto& p) {
    require_arg(record, "record");
    const auto args = profiler::op_args_from(read_options(record, "record", peat_op_record_init));
    set_optional(out_recorded, p.record_op(args, out_call) ? 1 : 0);
  });
}

PEAT_API peat_status_t peat_profiler_record_checkpoint(peat_profiler_t* profiler, const char* name, int64_t step,
                                                       const char* const* names, const DLTensor* const* tensors,
                                                       uint64_t n, void* stream, int32_t* out_recorded) {
  return c_with(__func__, profiler, "profiler", [&](auto& p) {
    const bool recorded = p.record_checkpoint(name, step, profiler::TensorList{tensors, names, n}, stream);
    set_optional(out_recorded, recorded ? 1 : 0);
  });
}

PEAT_API peat_status_t peat_profiler_record_scalar(peat_profiler_t* profiler, const char* name, int64_t step,
                                                   double value) {
  return c_call(__func__, [&] { deref(profiler, "profiler").record_scalar(name, step, value); });
}

PEAT_API peat_status_t peat_profiler_mark_step(peat_profiler_t* profiler, int64_t step) {
  return c_call(__func__, [&] { deref(profiler, "profiler").mark_step(step); });
}

PEAT_API peat_status_t peat_profiler_flush(peat_profiler_t* profiler) {
  return c_call(__func__, [&] { deref(profiler, "profiler").flush(); });
}

PEAT_API peat_status_t peat_profiler_close(peat_profiler_t* profiler) {
  return c_call(__func__, [&] { deref(profiler, "profiler").close(); });
}

PEAT_API peat_status_t peat_profiler_stats(const peat_profiler_t* profiler, peat_profiler_stats_t* out) {
  return c_get_struct(__func__, profiler, "profiler", out, [](auto& p) { return p.stats(); });
}

}  // extern "C"
