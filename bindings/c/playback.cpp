// C entry points of peat/playback.h: check, convert, forward.
#include <peat/playback.h>

#include "barrier.hpp"
#include "options.hpp"
#include "playback/playback.hpp"
#include "playback/record_context.hpp"
#include "trace/reader.hpp"

#include <cstring>
#include <memory>
#include <vector>
#include <string>

namespace {

peat::playback::Playback& as_playback(peat_playback_t* playback) {
  peat::require_arg(playback, "playback");
  return *playback;
}

const peat::playback::Playback& as_playback(const peat_playback_t* playback) {
  peat::require_arg(playback, "playback");
  return *playback;
}

void copy_signature(const peat_signature_t& from, peat_signature_t* out) {
  peat::require_out_struct(out, "out");
  *out = from;  // full size: the caller's struct is at least ours
}

}  // namespace

extern "C" {

PEAT_API void peat_playback_options_init(peat_playback_options_t* options) {
  if (options == nullptr) return;
  *options = peat_playback_options_t{};
  options->struct_size = sizeof(peat_playback_options_t);
  options->thread_safe = 0;
  options->run_twice = 0;
  options->attrs_mode = PEAT_PLAYBACK_ATTRS_NULL;
  options->filter = nullptr;
  options->config = nullptr;
  options->max_in_flight = 4;
  options->num_threads = 0;
  options->progress = nullptr;
  options->progress_user = nullptr;
  options->isolate = 0;
  options->timeout_ms = 10000;
  options->partition_rank = 0;
  options->partition_world = 1;
}

PEAT_API peat_status_t peat_playback_create(const peat_trace_reader_t* reader, const peat_playback_options_t* options,
                                            peat_playback_t** out_playback) {
  return peat::c_call(__func__, [&] {
    peat::require_arg(reader, "reader");
    peat::require_arg(out_playback, "out_playback");
    *out_playback = nullptr;
    const auto opts = peat::read_options(options, "options", peat_playback_options_init);
    *out_playback = std::make_unique<peat_playback>(*reader, opts).release();
  });
}

PEAT_API void peat_playback_destroy(peat_playback_t* playback) { delete playback; }

PEAT_API peat_status_t peat_playback_set_candidate(peat_playback_t* playback, peat_kernel_fn fn, void* ctx) {
  return peat::c_call(__func__, [&] {
    auto& p = as_playback(playback);
    if (fn == nullptr) peat::fail(PEAT_STATUS_INVALID_ARGUMENT, "argument 'fn' is NULL");
    p.set_candidate(fn, ctx, "function pointer");
  });
}

PEAT_API peat_status_t peat_playback_set_candidate_symbol(peat_playback_t* playback, const char* spec, void* ctx) {
  return peat::c_call(__func__, [&] {
    auto& p = as_playback(playback);
    peat::require_arg(spec, "spec");
    p.set_candidate_symbol(spec, ctx);
  });
}

PEAT_API peat_status_t peat_playback_run(peat_playback_t* playback) {
  return peat::c_call(__func__, [&] { (void)as_playback(playback).run(); });
}

PEAT_API peat_status_t peat_playback_summary(const peat_playback_t* playback, peat_playback_summary_t* out) {
  return peat::c_call(__func__, [&] {
    const auto& s = as_playback(playback).summary();
    peat::require_out_struct(out, "out");
    const uint32_t size = out->struct_size;
    *out = peat_playback_summary_t{};
    out->struct_size = size;
    out->cancelled = s.cancelled ? 1 : 0;
    out->selected = s.selected;
    out->done = s.done;
    out->ok = s.ok;
    out->failed = s.failed;
    out->exact = s.exact;
    out->mismatched = s.mismatched;
    out->nondeterministic = s.nondeterministic;
  });
}

PEAT_API peat_status_t peat_playback_result_count(const peat_playback_t* playback, uint64_t* out_count) {
  return peat::c_call(__func__, [&] {
    const auto& p = as_playback(playback);
    peat::require_arg(out_count, "out_count");
    *out_count = p.results().size();
  });
}

PEAT_API peat_status_t peat_playback_result(const peat_playback_t* playback, uint64_t index,
                                            peat_playback_result_t* out) {
  return peat::c_call(__func__, [&] {
    const auto& p = as_playback(playback);
    peat::require_out_struct(out, "out");
    const auto& r = p.result(index);
    const uint32_t size = out->struct_size;
    *out = peat_playback_result_t{};
    out->struct_size = size;
    out->status = r.status;
    out->record = r.record;
    out->op = r.op.c_str();
    out->module_path = r.module_path.c_str();
    out->step = r.step;
    out->call_index = r.call_index;
    out->phase = r.phase;
    out->deterministic = r.deterministic;
    out->n_outputs = r.n_outputs;
    out->elements = r.elements;
    out->bitwise_mismatches = r.bitwise_mismatches;
    out->tolerance_failures = r.tolerance_failures;
    out->message = r.message.c_str();
  });
}

PEAT_API peat_status_t peat_playback_result_signature(const peat_playback_t* playback, uint64_t index,
                                                      uint64_t output, peat_playback_compare_t which,
                                                      peat_signature_t* out) {
  return peat::c_call(__func__, [&] {
    const auto& p = as_playback(playback);
    peat::require_out_struct(out, "out");
    copy_signature(p.result_signature(index, output, which), out);
  });
}

PEAT_API peat_status_t peat_playback_group_count(const peat_playback_t* playback, peat_playback_group_kind_t kind,
                                                 uint64_t* out_count) {
  return peat::c_call(__func__, [&] {
    const auto& p = as_playback(playback);
    peat::require_arg(out_count, "out_count");
    *out_count = p.group_count(kind);
  });
}

PEAT_API peat_status_t peat_playback_group(const peat_playback_t* playback, peat_playback_group_kind_t kind,
                                           uint64_t index, peat_playback_group_t* out) {
  return peat::c_call(__func__, [&] {
    const auto& p = as_playback(playback);
    peat::require_out_struct(out, "out");
    const auto& g = p.group(kind, index);
    const uint32_t size = out->struct_size;
    *out = peat_playback_group_t{};
    out->struct_size = size;
    out->kind = kind;
    out->name = g.name.c_str();
    out->records = g.records;
    out->ok = g.ok;
    out->failed = g.failed;
    out->exact = g.exact;
    out->nondeterministic = g.nondeterministic;
    out->n_outputs = g.n_outputs;
  });
}

PEAT_API peat_status_t peat_playback_group_signature(const peat_playback_t* playback,
                                                     peat_playback_group_kind_t kind, uint64_t index,
                                                     uint64_t output, peat_playback_compare_t which,
                                                     peat_signature_t* out) {
  return peat::c_call(__func__, [&] {
    const auto& p = as_playback(playback);
    peat::require_out_struct(out, "out");
    copy_signature(p.group_signature(kind, index, output, which), out);
  });
}

PEAT_API peat_status_t peat_playback_partition_share(const peat_playback_t* playback, uint32_t rank,
                                                     uint64_t* out_first_record, uint64_t* out_end_record,
                                                     uint64_t* out_records) {
  return peat::c_call(__func__, [&] {
    const auto share = as_playback(playback).share(rank);
    if (out_first_record != nullptr) *out_first_record = share.first;
    if (out_end_record != nullptr) *out_end_record = share.end;
    if (out_records != nullptr) *out_records = share.records;
  });
}

PEAT_API peat_status_t peat_playback_export(const peat_playback_t* playback, void* buffer, size_t capacity,
                                            size_t* out_size) {
  return peat::c_call(__func__, [&] {
    const auto& p = as_playback(playback);
    peat::require_arg(out_size, "out_size");
    if (buffer == nullptr && capacity > 0)
      peat::fail(PEAT_STATUS_INVALID_ARGUMENT, "argument 'buffer' is NULL but capacity is {}", capacity);
    const std::vector<std::byte> bytes = p.export_results();
    *out_size = bytes.size();
    if (buffer == nullptr) return;
    if (capacity < bytes.size())
      peat::fail(PEAT_STATUS_BUFFER_TOO_SMALL, "the export needs {} bytes; capacity is {}", bytes.size(), capacity);
    std::memcpy(buffer, bytes.data(), bytes.size());
  });
}

PEAT_API peat_status_t peat_playback_import(peat_playback_t* playback, const void* data, size_t size) {
  return peat::c_call(__func__, [&] {
    auto& p = as_playback(playback);
    peat::require_arg(data, "data");
    p.import_results(static_cast<const std::byte*>(data), size);
  });
}

PEAT_API peat_status_t peat_playback_write_jsonl(const peat_playback_t* playback, const char* path,
                                                 int32_t append) {
  return peat::c_call(__func__, [&] {
    const auto& p = as_playback(playback);
    peat::require_arg(path, "path");
    if (append != 0 && append != 1)
      peat::fail(PEAT_STATUS_INVALID_ARGUMENT, "append is {}; it must be 0 or 1", append);
    p.write_jsonl(path, append != 0);
  });
}

PEAT_API peat_status_t peat_playback_group_verdicts(const peat_playback_t* playback, peat_playback_group_kind_t kind,
                                                    uint64_t index, uint64_t output,
                                                    peat_playback_verdicts_t* out) {
  return peat::c_call(__func__, [&] {
    const auto& p = as_playback(playback);
    peat::require_out_struct(out, "out");
    const uint32_t size = out->struct_size;
    *out = p.group_verdicts(kind, index, output);
    out->struct_size = size;
  });
}

PEAT_API peat_status_t peat_playback_result_detection(const peat_playback_t* playback, uint64_t index,
                                                      uint64_t output, peat_detection_t* out) {
  return peat::c_call(__func__, [&] {
    const auto& p = as_playback(playback);
    peat::require_out_struct(out, "out");
    const uint32_t size = out->struct_size;
    *out = p.result_detection(index, output);
    out->struct_size = size;
  });
}

PEAT_API peat_status_t peat_playback_detect_context(const peat_trace_reader_t* reader, uint64_t record,
                                                    uint64_t output, int64_t signature_k,
                                                    peat_detect_context_t* context) {
  return peat::c_call(__func__, [&] {
    peat::require_arg(reader, "reader");
    peat::require_own_struct(context, "context", "peat_detect_context_init");
    const auto ctx = peat::playback::record_op_context(*reader, record, output, signature_k);
    context->op_kind = ctx.kind;
    context->reduction_length = ctx.reduction_length;
  });
}

}  // extern "C"
