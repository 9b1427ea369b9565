// C entry points of peat/profiler.h: check, convert, forward.
#include <peat/profiler.h>

#include "barrier.hpp"
#include "options.hpp"
#include "profiler/profiler.hpp"
#include "session/session.hpp"

#include <climits>
#include <memory>

namespace {

peat::Profiler& as_profiler(peat_profiler_t* profiler) {
  peat::require_arg(profiler, "profiler");
  return *profiler;
}

}  // namespace

extern "C" {

PEAT_API void peat_profiler_options_init(peat_profiler_options_t* options) {
  if (options == nullptr) return;
  *options = peat_profiler_options_t{};
  options->struct_size = sizeof(peat_profiler_options_t);
  options->codec = PEAT_TRACE_CODEC_SHUFFLE_ZSTD;
  options->path = nullptr;
  options->framework = nullptr;
  options->device = nullptr;
  options->vendor = nullptr;
  options->tags = nullptr;
  options->n_tags = 0;
  options->zstd_level = 1;
  options->queue_bytes = uint64_t{256} << 20;
  options->full_queue_policy = PEAT_QUEUE_BLOCK;
  options->default_record = 1;
  options->byte_budget = 0;
  options->content_index_entries = 65536;  // trace::kDefaultContentIndexEntries
}

PEAT_API peat_status_t peat_profiler_create(peat_session_t* session, const peat_profiler_options_t* options,
                                            peat_profiler_t** out_profiler) {
  return peat::c_call(__func__, [&] {
    peat::require_arg(session, "session");
    peat::require_arg(options, "options");
    peat::require_arg(out_profiler, "out_profiler");
    const auto opts = peat::read_options(options, "options", peat_profiler_options_init);
    *out_profiler = std::make_unique<peat_profiler>(*session, opts).release();
  });
}

PEAT_API void peat_profiler_destroy(peat_profiler_t* profiler) { delete profiler; }

PEAT_API void peat_sample_rule_init(peat_sample_rule_t* rule) {
  if (rule == nullptr) return;
  *rule = peat_sample_rule_t{};
  rule->struct_size = sizeof(peat_sample_rule_t);
  rule->record = 1;
  rule->op_glob = nullptr;
  rule->every_n = 1;
  rule->first_k = 0;
  rule->step_begin = 0;
  rule->step_end = INT64_MAX;
  rule->count_by = PEAT_SAMPLE_BY_SITE;
}

PEAT_API peat_status_t peat_profiler_add_rule(peat_profiler_t* profiler, const peat_sample_rule_t* rule) {
  return peat::c_call(__func__, [&] {
    auto& p = as_profiler(profiler);
    peat::require_arg(rule, "rule");
    const auto r = peat::read_options(rule, "rule", peat_sample_rule_init);
    if (r.op_glob == nullptr || *r.op_glob == '\0') peat::fail(PEAT_STATUS_INVALID_ARGUMENT, "rule.op_glob is NULL or empty");
    if (r.record != 0 && r.record != 1) peat::fail(PEAT_STATUS_INVALID_ARGUMENT, "rule.record is {}; it must be 0 or 1", r.record);
    if (r.step_end < r.step_begin)
      peat::fail(PEAT_STATUS_INVALID_ARGUMENT, "rule.step_end {} is before rule.step_begin {}", r.step_end, r.step_begin);
    if (r.count_by != PEAT_SAMPLE_BY_SITE && r.count_by != PEAT_SAMPLE_BY_CALL)
      peat::fail(PEAT_STATUS_INVALID_ARGUMENT, "rule.count_by is {}; it must be a peat_sample_count_code value (0..1)",
                 r.count_by);
    peat::SampleRule rule_cpp;
    rule_cpp.record = r.record != 0;
    rule_cpp.op_glob = r.op_glob;
    rule_cpp.every_n = r.every_n;
    rule_cpp.first_k = r.first_k;
    rule_cpp.step_begin = r.step_begin;
    rule_cpp.step_end = r.step_end;
    rule_cpp.count_by = r.count_by;
    p.add_rule(std::move(rule_cpp));
  });
}

PEAT_API peat_status_t peat_profiler_should_record(peat_profiler_t* profiler, uint32_t op, uint64_t call, int64_t step,
                                                   int32_t* out_record) {
  return peat::c_call(__func__, [&] {
    auto& p = as_profiler(profiler);
    peat::require_arg(out_record, "out_record");
    if (step < -1) peat::fail(PEAT_STATUS_INVALID_ARGUMENT, "step {} is negative (use -1 for the session's step)", step);
    *out_record = p.should_record(op, call, step < 0 ? p.session().step() : step) ? 1 : 0;
  });
}

PEAT_API void peat_op_record_init(peat_op_record_t* record) {
  if (record == nullptr) return;
  *record = peat_op_record_t{};
  record->struct_size = sizeof(peat_op_record_t);
  record->call_index = PEAT_CALL_NEXT;
  record->step = -1;
  record->phase = -1;
}

PEAT_API peat_status_t peat_profiler_record_op(peat_profiler_t* profiler, const peat_op_record_t* record,
                                               int32_t* out_recorded, uint64_t* out_call) {
  return peat::c_call(__func__, [&] {
    auto& p = as_profiler(profiler);
    peat::require_arg(record, "record");
    const auto r = peat::read_options(record, "record", peat_op_record_init);
    if (r.force != 0 && r.force != 1) peat::fail(PEAT_STATUS_INVALID_ARGUMENT, "record.force is {}; it must be 0 or 1", r.force);
    peat::OpArgs args;
    args.op = r.op;
    args.call_index = r.call_index;
    args.step = r.step;
    args.phase = r.phase;
    args.force = r.force != 0;
    args.module_path = r.module_path;
    args.attrs = r.attrs;
    args.n_attrs = r.n_attrs;
    args.inputs = peat::TensorList{r.inputs, r.input_names, r.n_inputs};
    args.outputs = peat::TensorList{r.outputs, r.output_names, r.n_outputs};
    args.stream = r.stream;
    const bool recorded = p.record_op(args, out_call);
    if (out_recorded) *out_recorded = recorded ? 1 : 0;
  });
}

PEAT_API peat_status_t peat_profiler_record_checkpoint(peat_profiler_t* profiler, const char* name, int64_t step,
                                                       const char* const* names, const DLTensor* const* tensors,
                                                       uint64_t n, void* stream, int32_t* out_recorded) {
  return peat::c_call(__func__, [&] {
    auto& p = as_profiler(profiler);
    const bool recorded = p.record_checkpoint(name, step, peat::TensorList{tensors, names, n}, stream);
    if (out_recorded) *out_recorded = recorded ? 1 : 0;
  });
}

PEAT_API peat_status_t peat_profiler_record_scalar(peat_profiler_t* profiler, const char* name, int64_t step,
                                                   double value) {
  return peat::c_call(__func__, [&] { as_profiler(profiler).record_scalar(name, step, value); });
}

PEAT_API peat_status_t peat_profiler_mark_step(peat_profiler_t* profiler, int64_t step) {
  return peat::c_call(__func__, [&] { as_profiler(profiler).mark_step(step); });
}

PEAT_API peat_status_t peat_profiler_flush(peat_profiler_t* profiler) {
  return peat::c_call(__func__, [&] { as_profiler(profiler).flush(); });
}

PEAT_API peat_status_t peat_profiler_close(peat_profiler_t* profiler) {
  return peat::c_call(__func__, [&] { as_profiler(profiler).close(); });
}

PEAT_API peat_status_t peat_profiler_stats(const peat_profiler_t* profiler, peat_profiler_stats_t* out) {
  return peat::c_call(__func__, [&] {
    peat::require_arg(profiler, "profiler");
    peat::require_arg(out, "out");
    if (out->struct_size < sizeof(peat_profiler_stats_t))
      peat::fail(PEAT_STATUS_VERSION_MISMATCH, "out->struct_size is {}; this library needs {}", out->struct_size,
                 sizeof(peat_profiler_stats_t));
    const uint32_t size = out->struct_size;
    *out = profiler->stats();
    out->struct_size = size;
  });
}

}  // extern "C"
