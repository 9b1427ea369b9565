// C entry points of peat/trace.h: check, convert, forward.
#include <peat/trace.h>

#include "bindings/c/barrier.hpp"
#include "lib/trace/copy.hpp"
#include "lib/trace/reader.hpp"
#include "lib/trace/views.hpp"

using namespace peat::impl;  // the C layer forwards to the core (lib/)

extern "C" {

PEAT_API void peat_trace_reader_options_init(peat_trace_reader_options_t* options) {
  if (options) *options = trace::default_reader_options();
}
PEAT_API void peat_trace_filter_init(peat_trace_filter_t* p) { if (p) *p = trace::default_filter(); }

PEAT_API peat_status_t peat_trace_open(const char* path, const peat_trace_reader_options_t* options,
                                       peat_trace_reader_t** out_reader) {
  return c_call(__func__, [&] {
    require_arg(path, "path");
    require_arg(out_reader, "out_reader");
    *out_reader = trace::open_reader(path, options).release();
  });
}

PEAT_API peat_status_t peat_trace_recover(const char* path, const peat_trace_reader_options_t* options,
                                          peat_trace_reader_t** out_reader, peat_trace_recovery_t* out_recovery) {
  return c_call(__func__, [&] {
    require_arg(path, "path");
    require_arg(out_reader, "out_reader");
    *out_reader = trace::recover_reader(path, options, out_recovery).release();
  });
}

PEAT_API peat_status_t peat_trace_skipped(const peat_trace_reader_t* reader, uint64_t* out_count,
                                          const char** out_first) {
  return c_with(__func__, reader, "reader", [&](const auto& r) {
    require_arg(out_count, "out_count");
    *out_count = r.skipped().size();
    if (out_first) *out_first = r.skipped().empty() ? "" : r.skipped().front().why.c_str();
  });
}

PEAT_API peat_status_t peat_trace_copy_intact(const peat_trace_reader_t* reader, const char* out_path,
                                              uint64_t* out_written, uint64_t* out_dropped) {
  return c_with(__func__, reader, "reader", [&](const auto& r) {
    require_arg(out_path, "out_path");
    const trace::CopyResult result = trace::copy_intact(r, out_path);
    if (out_written) *out_written = result.written;
    if (out_dropped) *out_dropped = result.dropped;
  });
}

PEAT_API void peat_trace_close(peat_trace_reader_t* reader) { delete reader; }

PEAT_API peat_status_t peat_trace_run_info(const peat_trace_reader_t* reader, peat_trace_run_info_t* out) {
  return c_get_struct(__func__, reader, "reader", out, trace::run_info_view);
}

PEAT_API peat_status_t peat_trace_tag(const peat_trace_reader_t* reader, uint64_t index, const char** out_key,
                                      const char** out_value) {
  return c_with(__func__, reader, "reader", [&](const auto& r) {
    require_arg(out_key, "out_key");
    require_arg(out_value, "out_value");
    trace::tag_view(r, index, out_key, out_value);
  });
}

PEAT_API peat_status_t peat_trace_record_count(const peat_trace_reader_t* reader, uint64_t* out_count) {
  return c_get(__func__, reader, "reader", out_count, "out_count", [](auto& r) { return r.size(); });
}

PEAT_API peat_status_t peat_trace_record_info(const peat_trace_reader_t* reader, uint64_t index,
                                              peat_trace_record_info_t* out) {
  return c_get_struct(__func__, reader, "reader", out, [&](auto& r) { return trace::record_info_view(r, index); });
}

PEAT_API peat_status_t peat_trace_attr(const peat_trace_reader_t* reader, uint64_t index, uint64_t attr,
                                       peat_attr_t* out) {
  return c_get(__func__, reader, "reader", out, "out", [&](auto& r) { return trace::attr_of(r, index, attr); });
}

PEAT_API peat_status_t peat_trace_next(const peat_trace_reader_t* reader, const peat_trace_filter_t* filter,
                                       uint64_t start, uint64_t* out_index) {
  bool found = false;
  const peat_status_t status = c_call(__func__, [&] {
    const auto& r = deref(reader, "reader");
    require_arg(out_index, "out_index");
    const auto next = trace::next_match(r, read_options(filter, "filter", peat_trace_filter_init), start);
    if ((found = next.has_value())) *out_index = *next;
  });
  return status == PEAT_STATUS_OK && !found ? PEAT_STATUS_NOT_FOUND : status;
}

PEAT_API peat_status_t peat_trace_tensor_count(const peat_trace_reader_t* reader, uint64_t index,
                                               peat_trace_slot_t slot, uint64_t* out_count) {
  return c_get(__func__, reader, "reader", out_count, "out_count", [&](auto& r) {
    trace::check_slot(slot);
    return r.tensor_count(index, slot);
  });
}

PEAT_API peat_status_t peat_trace_tensor_info(const peat_trace_reader_t* reader, uint64_t index,
                                              peat_trace_slot_t slot, uint64_t tensor, peat_trace_tensor_info_t* out) {
  return c_with(__func__, reader, "reader",
                [&](const auto& r) { write_versioned(out, trace::tensor_info_view(r, index, slot, tensor), "out"); });
}

PEAT_API peat_status_t peat_trace_load_tensor(const peat_trace_reader_t* reader, uint64_t index,
                                              peat_trace_slot_t slot, uint64_t tensor, void* dst, size_t capacity) {
  return c_with(__func__, reader, "reader", [&](const auto& r) {
    trace::check_slot(slot);
    require_buffer(dst, capacity, "dst");
    r.load(index, slot, tensor, dst, capacity);
  });
}

PEAT_API peat_status_t peat_trace_load_tensor_alloc(const peat_trace_reader_t* reader, uint64_t index,
                                                    peat_trace_slot_t slot, uint64_t tensor,
                                                    DLManagedTensor** out_tensor) {
  return c_get(__func__, reader, "reader", out_tensor, "out_tensor",
               [&](auto& r) { return trace::load_owned(r, index, slot, tensor); });
}

PEAT_API void peat_trace_tensor_free(DLManagedTensor* tensor) {
  if (tensor && tensor->deleter) tensor->deleter(tensor);
}

PEAT_API peat_status_t peat_trace_verify(const peat_trace_reader_t* reader, uint64_t* out_tensors) {
  return c_call(__func__, [&] { set_optional(out_tensors, trace::verify_payloads(deref(reader, "reader"))); });
}

}  // extern "C"
