// C entry points of peat/trace.h: check, convert, forward.
#include <peat/trace.h>

#include "barrier.hpp"
#include "core/versioned_struct.hpp"
#include "options.hpp"
#include "trace/copy.hpp"
#include "trace/format.hpp"
#include "trace/reader.hpp"
#include "trace/record.hpp"
#include "trace/trace_generated.h"

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstring>
#include <memory>

namespace {

const peat::trace::Reader& as_reader(const peat_trace_reader_t* reader) {
  peat::require_arg(reader, "reader");
  return *reader;
}

const char* str(const flatbuffers::String* s) { return s ? s->c_str() : ""; }

void check_slot(peat_trace_slot_t slot) {
  if (slot < PEAT_TRACE_SLOT_INPUT || slot > PEAT_TRACE_SLOT_CHECKPOINT)
    peat::fail(PEAT_STATUS_INVALID_ARGUMENT, "slot {} is not a peat_trace_slot_code value (0..2)", slot);
}

struct OwnedTensor {
  DLManagedTensor managed{};
  std::vector<int64_t> shape;
  std::unique_ptr<std::byte[]> data;
};

void delete_owned(DLManagedTensor* t) {
  if (t) delete static_cast<OwnedTensor*>(t->manager_ctx);
}

}  // namespace

extern "C" {

PEAT_API void peat_trace_reader_options_init(peat_trace_reader_options_t* options) {
  if (options == nullptr) return;
  *options = peat_trace_reader_options_t{};
  options->struct_size = sizeof(peat_trace_reader_options_t);
  options->max_tensor_bytes = peat::trace::kDefaultMaxTensorBytes;
  options->max_meta_bytes = peat::trace::kDefaultMaxMetaBytes;
  options->max_record_bytes = peat::trace::default_max_record_bytes();
}

PEAT_API peat_status_t peat_trace_open(const char* path, const peat_trace_reader_options_t* options,
                                       peat_trace_reader_t** out_reader) {
  return peat::c_call(__func__, [&] {
    peat::require_arg(path, "path");
    peat::require_arg(out_reader, "out_reader");
    const auto opts = peat::read_options(options, "options", peat_trace_reader_options_init);
    *out_reader = std::make_unique<peat_trace_reader>(path, opts, false).release();
  });
}

PEAT_API peat_status_t peat_trace_recover(const char* path, const peat_trace_reader_options_t* options,
                                          peat_trace_reader_t** out_reader, peat_trace_recovery_t* out_recovery) {
  return peat::c_call(__func__, [&] {
    peat::require_arg(path, "path");
    peat::require_arg(out_reader, "out_reader");
    if (out_recovery) peat::require_out_struct(out_recovery, "out_recovery");
    const auto opts = peat::read_options(options, "options", peat_trace_reader_options_init);
    auto reader = std::make_unique<peat_trace_reader>(path, opts, true);
    if (out_recovery) {
      const auto& r = reader->recovery();
      out_recovery->complete = r.complete ? 1 : 0;
      out_recovery->records = r.records;
      out_recovery->valid_bytes = r.valid_bytes;
      out_recovery->file_bytes = r.file_bytes;
      const std::size_t n = std::min(r.stop_reason.size(), sizeof(out_recovery->stop_reason) - 1);
      std::memcpy(out_recovery->stop_reason, r.stop_reason.data(), n);
      out_recovery->stop_reason[n] = '\0';
    }
    *out_reader = reader.release();
  });
}

PEAT_API peat_status_t peat_trace_skipped(const peat_trace_reader_t* reader, uint64_t* out_count,
                                          const char** out_first) {
  return peat::c_call(__func__, [&] {
    const auto& r = as_reader(reader);
    peat::require_arg(out_count, "out_count");
    *out_count = r.skipped().size();
    if (out_first) *out_first = r.skipped().empty() ? "" : r.skipped().front().why.c_str();
  });
}

PEAT_API peat_status_t peat_trace_copy_intact(const peat_trace_reader_t* reader, const char* out_path,
                                              uint64_t* out_written, uint64_t* out_dropped) {
  return peat::c_call(__func__, [&] {
    const auto& r = as_reader(reader);
    peat::require_arg(out_path, "out_path");
    const peat::trace::CopyResult result = peat::trace::copy_intact(r, out_path);
    if (out_written) *out_written = result.written;
    if (out_dropped) *out_dropped = result.dropped;
  });
}

PEAT_API void peat_trace_close(peat_trace_reader_t* reader) { delete reader; }

PEAT_API peat_status_t peat_trace_run_info(const peat_trace_reader_t* reader, peat_trace_run_info_t* out) {
  return peat::c_call(__func__, [&] {
    const auto& r = as_reader(reader);
    peat::require_out_struct(out, "out");
    const auto& info = r.run_info();
    const uint32_t size = out->struct_size;
    *out = peat_trace_run_info_t{};
    out->struct_size = size;
    out->format_major = r.format_major();
    out->format_minor = r.format_minor();
    out->framework = str(info.framework());
    out->device = str(info.device());
    out->vendor = str(info.vendor());
    out->library_version = str(info.library_version());
    out->run_name = str(info.run_name());
    out->rank = info.rank();
    out->world_size = info.world_size();
    out->created_unix_ns = info.created_unix_ns();
    out->n_tags = info.tags() ? info.tags()->size() : 0;
  });
}

PEAT_API peat_status_t peat_trace_tag(const peat_trace_reader_t* reader, uint64_t index, const char** out_key,
                                      const char** out_value) {
  return peat::c_call(__func__, [&] {
    const auto& r = as_reader(reader);
    peat::require_arg(out_key, "out_key");
    peat::require_arg(out_value, "out_value");
    const auto* tags = r.run_info().tags();
    const uint64_t n = tags ? tags->size() : 0;
    if (index >= n) peat::fail(PEAT_STATUS_NOT_FOUND, "{}: tag {} does not exist (the header has {})", r.path(), index, n);
    const auto* kv = tags->Get(static_cast<uint32_t>(index));
    *out_key = str(kv->key());
    *out_value = str(kv->value());
  });
}

PEAT_API peat_status_t peat_trace_record_count(const peat_trace_reader_t* reader, uint64_t* out_count) {
  return peat::c_call(__func__, [&] {
    const auto& r = as_reader(reader);
    peat::require_arg(out_count, "out_count");
    *out_count = r.size();
  });
}

PEAT_API peat_status_t peat_trace_record_info(const peat_trace_reader_t* reader, uint64_t index,
                                              peat_trace_record_info_t* out) {
  return peat::c_call(__func__, [&] {
    const auto& r = as_reader(reader);
    peat::require_out_struct(out, "out");
    const auto& e = r.entry(index);
    peat_trace_record_info_t info{};
    info.struct_size = out->struct_size;
    info.kind = e.kind;
    info.file_offset = e.offset;
    info.file_bytes = e.bytes;
    info.step = r.step_of(index);
    info.name = "";
    info.module_path = "";
    switch (e.kind) {
      case PEAT_TRACE_KIND_OP: {
        const auto* op = e.record->body_as_OpInvocation();
        info.name = str(op->op());
        info.phase = op->phase();
        info.module_path = str(op->module_path());
        info.call_index = op->call_index();
        info.n_attrs = op->attrs() ? op->attrs()->size() : 0;
        info.n_inputs = op->inputs() ? op->inputs()->size() : 0;
        info.n_outputs = op->outputs() ? op->outputs()->size() : 0;
        break;
      }
      case PEAT_TRACE_KIND_CHECKPOINT: {
        const auto* cp = e.record->body_as_Checkpoint();
        info.name = str(cp->name());
        info.n_tensors = cp->tensors() ? cp->tensors()->size() : 0;
        break;
      }
      case PEAT_TRACE_KIND_SCALAR: {
        const auto* sc = e.record->body_as_Scalar();
        info.name = str(sc->name());
        info.value = sc->value();
        break;
      }
      default:
        info.unix_ns = e.record->body_as_StepMarker()->unix_ns();
    }
    *out = info;
  });
}

PEAT_API peat_status_t peat_trace_attr(const peat_trace_reader_t* reader, uint64_t index, uint64_t attr,
                                       peat_attr_t* out) {
  return peat::c_call(__func__, [&] {
    const auto& r = as_reader(reader);
    peat::require_arg(out, "out");
    const auto& e = r.entry(index);
    if (e.kind != PEAT_TRACE_KIND_OP)
      peat::fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: record {} is not an op invocation (kind {})", r.path(), index, e.kind);
    const auto* attrs = e.record->body_as_OpInvocation()->attrs();
    const uint64_t n = attrs ? attrs->size() : 0;
    if (attr >= n)
      peat::fail(PEAT_STATUS_NOT_FOUND, "{}: record {} has {} attributes; there is no attribute {}", r.path(), index, n, attr);
    *out = peat::trace::attr_view(*attrs->Get(static_cast<uint32_t>(attr)));
  });
}

PEAT_API void peat_trace_filter_init(peat_trace_filter_t* filter) {
  if (filter == nullptr) return;
  *filter = peat_trace_filter_t{};
  filter->struct_size = sizeof(peat_trace_filter_t);
  filter->kinds = 0;
  filter->op_glob = nullptr;
  filter->step_min = INT64_MIN;
  filter->step_max = INT64_MAX;
  filter->phase = -1;
}

PEAT_API peat_status_t peat_trace_next(const peat_trace_reader_t* reader, const peat_trace_filter_t* filter,
                                       uint64_t start, uint64_t* out_index) {
  bool found = false;
  const peat_status_t status = peat::c_call(__func__, [&] {
    const auto& r = as_reader(reader);
    peat::require_arg(out_index, "out_index");
    const auto f = peat::read_options(filter, "filter", peat_trace_filter_init);
    constexpr uint32_t kKnown = (1u << PEAT_TRACE_KIND_OP) | (1u << PEAT_TRACE_KIND_CHECKPOINT) |
                                (1u << PEAT_TRACE_KIND_SCALAR) | (1u << PEAT_TRACE_KIND_STEP);
    if ((f.kinds & ~kKnown) != 0)
      peat::fail(PEAT_STATUS_INVALID_ARGUMENT, "filter.kinds 0x{:x} has bits that name no record kind", f.kinds);
    if (f.phase < -1 || f.phase > PEAT_PHASE_OTHER)
      peat::fail(PEAT_STATUS_INVALID_ARGUMENT, "filter.phase {} is not -1 or a peat_phase_code value (0..3)", f.phase);
    for (uint64_t i = start; i < r.size(); ++i) {
      if (r.matches(i, f)) {
        *out_index = i;
        found = true;
        return;
      }
    }
  });
  if (status == PEAT_STATUS_OK && !found) return PEAT_STATUS_NOT_FOUND;
  return status;
}

PEAT_API peat_status_t peat_trace_tensor_count(const peat_trace_reader_t* reader, uint64_t index,
                                               peat_trace_slot_t slot, uint64_t* out_count) {
  return peat::c_call(__func__, [&] {
    const auto& r = as_reader(reader);
    peat::require_arg(out_count, "out_count");
    check_slot(slot);
    *out_count = r.tensor_count(index, slot);
  });
}

PEAT_API peat_status_t peat_trace_tensor_info(const peat_trace_reader_t* reader, uint64_t index,
                                              peat_trace_slot_t slot, uint64_t tensor, peat_trace_tensor_info_t* out) {
  return peat::c_call(__func__, [&] {
    const auto& r = as_reader(reader);
    check_slot(slot);
    const auto& t = r.tensor(index, slot, tensor);
    peat_trace_tensor_info_t info{};
    info.struct_size = sizeof(info);
    info.ndim = t.shape() ? static_cast<int32_t>(t.shape()->size()) : 0;
    info.name = str(t.name());
    info.dtype = DLDataType{t.dtype_code(), t.dtype_bits(), t.dtype_lanes()};
    info.device = DLDevice{static_cast<DLDeviceType>(t.device_type()), t.device_id()};
    info.shape = info.ndim > 0 ? t.shape()->data() : nullptr;
    int64_t numel = 1;
    for (int32_t d = 0; d < info.ndim; ++d) numel *= t.shape()->Get(static_cast<uint32_t>(d));  // checked at open
    info.numel = numel;
    info.raw_bytes = t.raw_bytes();
    info.encoded_bytes = t.encoded_bytes();
    info.codec = static_cast<peat_trace_codec_t>(t.codec());
    info.checksum = t.checksum();
    info.strides = t.strides() ? t.strides()->data() : nullptr;  // size checked at open
    info.storage_offset = t.storage_offset();
    if (t.ref_seq().has_value()) {  // format 1.2: report where the bytes are and their checksum
      info.is_reference = 1;
      info.ref_slot = static_cast<peat_trace_slot_t>(t.ref_slot());
      info.ref_seq = *t.ref_seq();
      info.ref_tensor = t.ref_index();
      try {
        const peat::trace::TensorLoc loc = r.resolve(index, slot, tensor);
        info.checksum = r.tensor(loc.index, loc.slot, loc.t).checksum();
      } catch (const peat::Error&) {
        info.checksum = 0;  // reported when it is loaded
      }
    }
    peat::write_versioned_out(out, info, offsetof(peat_trace_tensor_info_t, strides), "out");
  });
}

PEAT_API peat_status_t peat_trace_load_tensor(const peat_trace_reader_t* reader, uint64_t index,
                                              peat_trace_slot_t slot, uint64_t tensor, void* dst, size_t capacity) {
  return peat::c_call(__func__, [&] {
    const auto& r = as_reader(reader);
    check_slot(slot);
    if (dst == nullptr && capacity > 0)
      peat::fail(PEAT_STATUS_INVALID_ARGUMENT, "argument 'dst' is NULL but capacity is {}", capacity);
    r.load(index, slot, tensor, dst, capacity);
  });
}

PEAT_API peat_status_t peat_trace_load_tensor_alloc(const peat_trace_reader_t* reader, uint64_t index,
                                                    peat_trace_slot_t slot, uint64_t tensor,
                                                    DLManagedTensor** out_tensor) {
  return peat::c_call(__func__, [&] {
    const auto& r = as_reader(reader);
    peat::require_arg(out_tensor, "out_tensor");
    check_slot(slot);
    const auto& t = r.tensor(index, slot, tensor);
    if (t.raw_bytes() > r.max_tensor_bytes())
      peat::fail(PEAT_STATUS_OUT_OF_MEMORY, "{}: record {}: tensor {} needs {} bytes, above options.max_tensor_bytes ({})",
                 r.path(), index, tensor, t.raw_bytes(), r.max_tensor_bytes());
    r.check_record_bytes(index);
    auto owned = std::make_unique<OwnedTensor>();
    if (t.shape()) owned->shape.assign(t.shape()->begin(), t.shape()->end());
    const std::size_t bytes = static_cast<std::size_t>(t.raw_bytes());
    owned->data.reset(new std::byte[bytes > 0 ? bytes : 1]);
    r.load(index, slot, tensor, owned->data.get(), bytes);
    DLTensor& dl = owned->managed.dl_tensor;
    dl.data = owned->data.get();
    dl.device = DLDevice{kDLCPU, 0};
    dl.ndim = static_cast<int32_t>(owned->shape.size());
    dl.dtype = DLDataType{t.dtype_code(), t.dtype_bits(), t.dtype_lanes()};
    dl.shape = owned->shape.empty() ? nullptr : owned->shape.data();
    dl.strides = nullptr;
    dl.byte_offset = 0;
    owned->managed.manager_ctx = owned.get();
    owned->managed.deleter = delete_owned;
    *out_tensor = &owned.release()->managed;
  });
}

PEAT_API void peat_trace_tensor_free(DLManagedTensor* tensor) {
  if (tensor && tensor->deleter) tensor->deleter(tensor);
}

PEAT_API peat_status_t peat_trace_verify(const peat_trace_reader_t* reader, uint64_t* out_tensors) {
  return peat::c_call(__func__, [&] {
    const auto& r = as_reader(reader);
    uint64_t checked = 0;
    for (uint64_t i = 0; i < r.size(); ++i) {
      const auto kind = r.entry(i).kind;
      const peat_trace_slot_t slots[2] = {
          kind == PEAT_TRACE_KIND_CHECKPOINT ? PEAT_TRACE_SLOT_CHECKPOINT : PEAT_TRACE_SLOT_INPUT,
          PEAT_TRACE_SLOT_OUTPUT};
      const int n_slots = kind == PEAT_TRACE_KIND_OP ? 2 : kind == PEAT_TRACE_KIND_CHECKPOINT ? 1 : 0;
      for (int s = 0; s < n_slots; ++s) {
        const uint64_t n = r.tensor_count(i, slots[s]);
        for (uint64_t t = 0; t < n; ++t) {
          r.check_payload(i, slots[s], t);  // bounded memory whatever the tensor's size
          ++checked;
        }
      }
    }
    if (out_tensors) *out_tensors = checked;
  });
}

}  // extern "C"
