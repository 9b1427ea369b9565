// See views.hpp.
#include "lib/trace/views.hpp"

#include "lib/core/error.hpp"
#include "lib/core/versioned_struct.hpp"
#include "lib/trace/format.hpp"
#include "lib/trace/record.hpp"
#include "trace/trace_generated.h"

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstring>
#include <memory>
#include <vector>

namespace peat::impl::trace {

namespace {

const char* str(const flatbuffers::String* s) { return s ? s->c_str() : ""; }

struct OwnedTensor {
  DLManagedTensor managed{};
  std::vector<int64_t> shape;
  std::unique_ptr<std::byte[]> data;
};

void delete_owned(DLManagedTensor* t) {
  if (t) delete static_cast<OwnedTensor*>(t->manager_ctx);
}

}  // namespace

peat_trace_reader_options_t default_reader_options() noexcept {
  auto o = zeroed_struct<peat_trace_reader_options_t>();
  o.max_tensor_bytes = kDefaultMaxTensorBytes;
  o.max_meta_bytes = kDefaultMaxMetaBytes;
  o.max_record_bytes = default_max_record_bytes();
  return o;
}

peat_trace_filter_t default_filter() noexcept {
  auto f = zeroed_struct<peat_trace_filter_t>();
  f.step_min = INT64_MIN;
  f.step_max = INT64_MAX;
  f.phase = -1;
  return f;
}

void check_slot(peat_trace_slot_t slot) {
  if (slot < PEAT_TRACE_SLOT_INPUT || slot > PEAT_TRACE_SLOT_CHECKPOINT)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "slot {} is not a peat_trace_slot_code value (0..2)", slot);
}

namespace {
std::unique_ptr<peat_trace_reader> make_reader(const std::string& path, const peat_trace_reader_options_t* options,
                                               bool recover) {
  const auto opts =
      read_options(options, "options", [](peat_trace_reader_options_t* o) { *o = default_reader_options(); });
  return std::make_unique<peat_trace_reader>(path, opts, recover);
}
}  // namespace

std::unique_ptr<peat_trace_reader> open_reader(const std::string& path, const peat_trace_reader_options_t* options) {
  return make_reader(path, options, false);
}

std::unique_ptr<peat_trace_reader> recover_reader(const std::string& path, const peat_trace_reader_options_t* options,
                                                  peat_trace_recovery_t* recovery) {
  if (recovery) require_struct(recovery, "out_recovery");
  auto reader = make_reader(path, options, true);
  if (recovery) write_versioned(recovery, recovery_view(*reader), "out_recovery");
  return reader;
}

peat_trace_recovery_t recovery_view(const Reader& reader) {
  const auto& r = reader.recovery();
  auto out = zeroed_struct<peat_trace_recovery_t>();
  out.complete = r.complete ? 1 : 0;
  out.records = r.records;
  out.valid_bytes = r.valid_bytes;
  out.file_bytes = r.file_bytes;
  const std::size_t n = std::min(r.stop_reason.size(), sizeof(out.stop_reason) - 1);
  std::memcpy(out.stop_reason, r.stop_reason.data(), n);
  out.stop_reason[n] = '\0';
  return out;
}

peat_trace_run_info_t run_info_view(const Reader& r) {
  const auto& info = r.run_info();
  auto out = zeroed_struct<peat_trace_run_info_t>();
  out.format_major = r.format_major();
  out.format_minor = r.format_minor();
  out.framework = str(info.framework());
  out.device = str(info.device());
  out.vendor = str(info.vendor());
  out.library_version = str(info.library_version());
  out.run_name = str(info.run_name());
  out.rank = info.rank();
  out.world_size = info.world_size();
  out.created_unix_ns = info.created_unix_ns();
  out.n_tags = info.tags() ? info.tags()->size() : 0;
  return out;
}

void tag_view(const Reader& r, uint64_t index, const char** key, const char** value) {
  const auto* tags = r.run_info().tags();
  const uint64_t n = tags ? tags->size() : 0;
  if (index >= n) fail(PEAT_STATUS_NOT_FOUND, "{}: tag {} does not exist (the header has {})", r.path(), index, n);
  const auto* kv = tags->Get(static_cast<uint32_t>(index));
  *key = str(kv->key());
  *value = str(kv->value());
}

peat_trace_record_info_t record_info_view(const Reader& r, uint64_t index) {
  const auto& e = r.entry(index);
  auto info = zeroed_struct<peat_trace_record_info_t>();
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
  return info;
}

peat_attr_t attr_of(const Reader& r, uint64_t index, uint64_t attr) {
  const auto& e = r.entry(index);
  if (e.kind != PEAT_TRACE_KIND_OP)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: record {} is not an op invocation (kind {})", r.path(), index, e.kind);
  const auto* attrs = e.record->body_as_OpInvocation()->attrs();
  const uint64_t n = attrs ? attrs->size() : 0;
  if (attr >= n)
    fail(PEAT_STATUS_NOT_FOUND, "{}: record {} has {} attributes; there is no attribute {}", r.path(), index, n, attr);
  return attr_view(*attrs->Get(static_cast<uint32_t>(attr)));
}

peat_trace_tensor_info_t tensor_info_view(const Reader& r, uint64_t index, peat_trace_slot_t slot, uint64_t tensor) {
  check_slot(slot);
  const auto& t = r.tensor(index, slot, tensor);
  auto info = zeroed_struct<peat_trace_tensor_info_t>();
  info.ndim = t.shape() ? static_cast<int32_t>(t.shape()->size()) : 0;
  info.name = str(t.name());
  info.dtype = DLDataType{t.dtype_code(), t.dtype_bits(), t.dtype_lanes()};
  info.device = DLDevice{static_cast<DLDeviceType>(t.device_type()), t.device_id()};
  info.shape = info.ndim > 0 ? t.shape()->data() : nullptr;
  // Unsigned, as the check at open multiplies: a shape such as [2^62, 2, 0]
  // has partial products beyond INT64_MAX while its element count is 0.
  uint64_t numel = 1;
  for (int32_t d = 0; d < info.ndim; ++d) numel *= static_cast<uint64_t>(t.shape()->Get(static_cast<uint32_t>(d)));
  info.numel = static_cast<int64_t>(numel);  // at most INT64_MAX: checked at open
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
      const TensorLoc loc = r.resolve(index, slot, tensor);
      info.checksum = r.tensor(loc.index, loc.slot, loc.t).checksum();
    } catch (const Error&) {
      info.checksum = 0;  // reported when it is loaded
    }
  }
  return info;
}

std::optional<uint64_t> next_match(const Reader& r, const peat_trace_filter_t& f, uint64_t start) {
  constexpr uint32_t kKnown = (1u << PEAT_TRACE_KIND_OP) | (1u << PEAT_TRACE_KIND_CHECKPOINT) |
                              (1u << PEAT_TRACE_KIND_SCALAR) | (1u << PEAT_TRACE_KIND_STEP);
  if ((f.kinds & ~kKnown) != 0)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "filter.kinds 0x{:x} has bits that name no record kind", f.kinds);
  if (f.phase < -1 || f.phase > PEAT_PHASE_OTHER)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "filter.phase {} is not -1 or a peat_phase_code value (0..3)", f.phase);
  for (uint64_t i = start; i < r.size(); ++i)
    if (r.matches(i, f)) return i;
  return std::nullopt;
}

DLManagedTensor* load_owned(const Reader& r, uint64_t index, peat_trace_slot_t slot, uint64_t tensor) {
  check_slot(slot);
  const auto& t = r.tensor(index, slot, tensor);
  if (t.raw_bytes() > r.max_tensor_bytes())
    fail(PEAT_STATUS_OUT_OF_MEMORY, "{}: record {}: tensor {} needs {} bytes, above options.max_tensor_bytes ({})",
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
  return &owned.release()->managed;
}

uint64_t verify_payloads(const Reader& r) {
  uint64_t checked = 0;
  for (uint64_t i = 0; i < r.size(); ++i) {
    const auto kind = r.entry(i).kind;
    const peat_trace_slot_t slots[2] = {
        kind == PEAT_TRACE_KIND_CHECKPOINT ? PEAT_TRACE_SLOT_CHECKPOINT : PEAT_TRACE_SLOT_INPUT, PEAT_TRACE_SLOT_OUTPUT};
    const int n_slots = kind == PEAT_TRACE_KIND_OP ? 2 : kind == PEAT_TRACE_KIND_CHECKPOINT ? 1 : 0;
    for (int s = 0; s < n_slots; ++s) {
      const uint64_t n = r.tensor_count(i, slots[s]);
      for (uint64_t t = 0; t < n; ++t) {
        r.check_payload(i, slots[s], t);  // bounded memory whatever the tensor's size
        ++checked;
      }
    }
  }
  return checked;
}

}  // namespace peat::impl::trace
