// C entry points of peat/playback.h: check, convert, forward.
#include <peat/playback.h>

#include "bindings/c/barrier.hpp"
#include "lib/detector/defaults.hpp"
#include "lib/playback/playback.hpp"
#include "lib/playback/record_context.hpp"
#include "lib/playback/views.hpp"
#include "lib/trace/reader.hpp"

#include <memory>

using namespace peat::impl;  // the C layer forwards to the core (lib/)

extern "C" {

PEAT_API void peat_playback_options_init(peat_playback_options_t* p) { if (p) *p = playback::default_options(); }

PEAT_API peat_status_t peat_playback_create(const peat_trace_reader_t* reader, const peat_playback_options_t* options,
                                            peat_playback_t** out_playback) {
  return c_with(__func__, reader, "reader", [&](const auto& r) {
    require_arg(out_playback, "out_playback");
    *out_playback = nullptr;
    const auto opts = read_options(options, "options", peat_playback_options_init);
    *out_playback = std::make_unique<peat_playback>(r, opts).release();
  });
}

PEAT_API void peat_playback_destroy(peat_playback_t* playback) { delete playback; }

PEAT_API peat_status_t peat_playback_set_candidate(peat_playback_t* playback, peat_kernel_fn fn, void* ctx) {
  return c_with(__func__, playback, "playback", [&](auto& p) { p.set_candidate(fn, ctx, "function pointer"); });
}

PEAT_API peat_status_t peat_playback_set_candidate_symbol(peat_playback_t* playback, const char* spec, void* ctx) {
  return c_with(__func__, playback, "playback", [&](auto& p) {
    require_arg(spec, "spec");
    p.set_candidate_symbol(spec, ctx);
  });
}

PEAT_API peat_status_t peat_playback_candidate(const peat_playback_t* playback, peat_kernel_fn* out_fn,
                                               void** out_ctx) {
  return c_with(__func__, playback, "playback", [&](const auto& p) {
    require_arg(out_fn, "out_fn");
    *out_fn = p.candidate();
    set_optional(out_ctx, p.candidate_ctx());
  });
}

PEAT_API peat_status_t peat_playback_run(peat_playback_t* playback) {
  return c_call(__func__, [&] { (void)deref(playback, "playback").run(); });
}

PEAT_API peat_status_t peat_playback_summary(const peat_playback_t* playback, peat_playback_summary_t* out) {
  return c_get_struct(__func__, playback, "playback", out, [](auto& p) { return playback::summary_view(p.summary()); });
}

PEAT_API peat_status_t peat_playback_result_count(const peat_playback_t* playback, uint64_t* out_count) {
  return c_get(__func__, playback, "playback", out_count, "out_count", [](auto& p) { return p.results().size(); });
}

PEAT_API peat_status_t peat_playback_result(const peat_playback_t* playback, uint64_t index,
                                            peat_playback_result_t* out) {
  return c_get_struct(__func__, playback, "playback", out,
                            [&](auto& p) { return playback::result_view(p.result(index)); });
}

PEAT_API peat_status_t peat_playback_result_signature(const peat_playback_t* playback, uint64_t index,
                                                      uint64_t output, peat_playback_compare_t which,
                                                      peat_signature_t* out) {
  return c_get_struct(__func__, playback, "playback", out,
                            [&](auto& p) { return p.result_signature(index, output, which); });
}

PEAT_API peat_status_t peat_playback_group_count(const peat_playback_t* playback, peat_playback_group_kind_t kind,
                                                 uint64_t* out_count) {
  return c_get(__func__, playback, "playback", out_count, "out_count", [&](auto& p) { return p.group_count(kind); });
}

PEAT_API peat_status_t peat_playback_group(const peat_playback_t* playback, peat_playback_group_kind_t kind,
                                           uint64_t index, peat_playback_group_t* out) {
  return c_get_struct(__func__, playback, "playback", out,
                            [&](auto& p) { return playback::group_view(p.group(kind, index), kind); });
}

PEAT_API peat_status_t peat_playback_group_signature(const peat_playback_t* playback,
                                                     peat_playback_group_kind_t kind, uint64_t index,
                                                     uint64_t output, peat_playback_compare_t which,
                                                     peat_signature_t* out) {
  return c_get_struct(__func__, playback, "playback", out,
                            [&](auto& p) { return p.group_signature(kind, index, output, which); });
}

PEAT_API peat_status_t peat_playback_partition_share(const peat_playback_t* playback, uint32_t rank,
                                                     uint64_t* out_first_record, uint64_t* out_end_record,
                                                     uint64_t* out_records) {
  return c_call(__func__, [&] {
    const auto share = deref(playback, "playback").share(rank);
    if (out_first_record != nullptr) *out_first_record = share.first;
    if (out_end_record != nullptr) *out_end_record = share.end;
    if (out_records != nullptr) *out_records = share.records;
  });
}

PEAT_API peat_status_t peat_playback_export(const peat_playback_t* playback, void* buffer, size_t capacity,
                                            size_t* out_size) {
  return c_with(__func__, playback, "playback", [&](const auto& p) { p.export_to(buffer, capacity, out_size); });
}

PEAT_API peat_status_t peat_playback_import(peat_playback_t* playback, const void* data, size_t size) {
  return c_with(__func__, playback, "playback", [&](auto& p) {
    require_arg(data, "data");
    p.import_results(static_cast<const std::byte*>(data), size);
  });
}

PEAT_API peat_status_t peat_playback_write_jsonl(const peat_playback_t* playback, const char* path, int32_t append) {
  return c_with(__func__, playback, "playback", [&](const auto& p) {
    require_arg(path, "path");
    if (append != 0 && append != 1) fail(PEAT_STATUS_INVALID_ARGUMENT, "append is {}; it must be 0 or 1", append);
    p.write_jsonl(path, append != 0);
  });
}

PEAT_API peat_status_t peat_playback_group_verdicts(const peat_playback_t* playback, peat_playback_group_kind_t kind,
                                                    uint64_t index, uint64_t output, peat_playback_verdicts_t* out) {
  return c_get_struct(__func__, playback, "playback", out,
                            [&](auto& p) { return p.group_verdicts(kind, index, output); });
}

PEAT_API peat_status_t peat_playback_result_detection(const peat_playback_t* playback, uint64_t index,
                                                      uint64_t output, peat_detection_t* out) {
  return c_get_struct(__func__, playback, "playback", out, [&](auto& p) { return p.result_detection(index, output); });
}

PEAT_API peat_status_t peat_playback_detect_context(const peat_trace_reader_t* reader, uint64_t record,
                                                    uint64_t output, int64_t signature_k,
                                                    peat_detect_context_t* context) {
  return c_with(__func__, reader, "reader", [&](const auto& r) {
    require_struct(context, "context");
    detector::write_op_context(context, playback::record_op_context(r, record, output, signature_k));
  });
}

}  // extern "C"
