// See defaults.hpp.
#include "lib/profiler/defaults.hpp"

#include "lib/core/error.hpp"
#include "lib/core/versioned_struct.hpp"
#include "lib/trace/content_index.hpp"

namespace peat::impl::profiler {

peat_profiler_options_t default_profiler_options() noexcept {
  auto o = zeroed_struct<peat_profiler_options_t>();
  o.codec = PEAT_TRACE_CODEC_SHUFFLE_ZSTD;
  o.zstd_level = 1;
  o.queue_bytes = uint64_t{256} << 20;
  o.full_queue_policy = PEAT_QUEUE_BLOCK;
  o.default_record = 1;
  o.content_index_entries = trace::kDefaultContentIndexEntries;
  return o;
}

peat_sample_rule_t default_sample_rule() noexcept {
  const SampleRule d;
  auto r = zeroed_struct<peat_sample_rule_t>();
  r.record = d.record ? 1 : 0;
  r.every_n = d.every_n;
  r.first_k = d.first_k;
  r.step_begin = d.step_begin;
  r.step_end = d.step_end;
  r.count_by = d.count_by;
  return r;
}

peat_op_record_t default_op_record() noexcept {
  const OpArgs d;
  auto r = zeroed_struct<peat_op_record_t>();
  r.call_index = d.call_index;
  r.step = d.step;
  r.phase = d.phase;
  return r;
}

SampleRule sample_rule_from(const peat_sample_rule_t& r) {
  if (r.op_glob == nullptr || *r.op_glob == '\0') fail(PEAT_STATUS_INVALID_ARGUMENT, "rule.op_glob is NULL or empty");
  if (r.record != 0 && r.record != 1) fail(PEAT_STATUS_INVALID_ARGUMENT, "rule.record is {}; it must be 0 or 1", r.record);
  if (r.step_end < r.step_begin)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "rule.step_end {} is before rule.step_begin {}", r.step_end, r.step_begin);
  if (r.count_by != PEAT_SAMPLE_BY_SITE && r.count_by != PEAT_SAMPLE_BY_CALL)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "rule.count_by is {}; it must be a peat_sample_count_code value (0..1)",
         r.count_by);
  SampleRule rule;
  rule.record = r.record != 0;
  rule.op_glob = r.op_glob;
  rule.every_n = r.every_n;
  rule.first_k = r.first_k;
  rule.step_begin = r.step_begin;
  rule.step_end = r.step_end;
  rule.count_by = r.count_by;
  return rule;
}

OpArgs op_args_from(const peat_op_record_t& r) {
  if (r.force != 0 && r.force != 1) fail(PEAT_STATUS_INVALID_ARGUMENT, "record.force is {}; it must be 0 or 1", r.force);
  OpArgs args;
  args.op = r.op;
  args.call_index = r.call_index;
  args.step = r.step;
  args.phase = r.phase;
  args.force = r.force != 0;
  args.module_path = r.module_path;
  args.attrs = r.attrs;
  args.n_attrs = r.n_attrs;
  args.inputs = TensorList{r.inputs, r.input_names, r.n_inputs};
  args.outputs = TensorList{r.outputs, r.output_names, r.n_outputs};
  args.stream = r.stream;
  return args;
}

}  // namespace peat::impl::profiler
