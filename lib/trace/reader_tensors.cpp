// Reader: a record's tensor lists, references (format 1.2) and loading a
// tensor's decoded bytes.
#include "lib/trace/reader.hpp"

#include "lib/core/error.hpp"
#include "lib/trace/codec.hpp"
#include "lib/trace/delta.hpp"
#include "lib/trace/record.hpp"
#include "trace/trace_generated.h"

#include <zstd.h>

#include <algorithm>

namespace peat::impl::trace {

const char* slot_name(peat_trace_slot_t slot) noexcept {
  switch (slot) {
    case PEAT_TRACE_SLOT_INPUT: return "inputs";
    case PEAT_TRACE_SLOT_OUTPUT: return "outputs";
    case PEAT_TRACE_SLOT_CHECKPOINT: return "tensors";
    default: return "?";
  }
}

uint64_t Reader::tensor_count(uint64_t index, peat_trace_slot_t slot) const {
  const RecordEntry& e = entry(index);
  const flatbuffers::Vector<flatbuffers::Offset<fb::Tensor>>* v = nullptr;
  if (e.kind == PEAT_TRACE_KIND_OP && (slot == PEAT_TRACE_SLOT_INPUT || slot == PEAT_TRACE_SLOT_OUTPUT)) {
    const auto* op = e.record->body_as_OpInvocation();
    v = slot == PEAT_TRACE_SLOT_INPUT ? op->inputs() : op->outputs();
  } else if (e.kind == PEAT_TRACE_KIND_CHECKPOINT && slot == PEAT_TRACE_SLOT_CHECKPOINT) {
    v = e.record->body_as_Checkpoint()->tensors();
  } else {
    fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: record {} (kind {}) has no tensor slot {}", path_, index, e.kind, slot);
  }
  return v ? v->size() : 0;
}

const fb::Tensor& Reader::tensor(uint64_t index, peat_trace_slot_t slot, uint64_t t) const {
  const uint64_t n = tensor_count(index, slot);
  if (t >= n)
    fail(PEAT_STATUS_NOT_FOUND, "{}: record {} has {} {}; there is no {}[{}]", path_, index, n, slot_name(slot),
         slot_name(slot), t);
  const RecordEntry& e = entries_[index];
  const auto* v = slot == PEAT_TRACE_SLOT_CHECKPOINT ? e.record->body_as_Checkpoint()->tensors()
                  : slot == PEAT_TRACE_SLOT_INPUT    ? e.record->body_as_OpInvocation()->inputs()
                                                     : e.record->body_as_OpInvocation()->outputs();
  return *v->Get(static_cast<uint32_t>(t));
}

namespace {
// Position of a tensor in its record's order: inputs (or a checkpoint's
// tensors), then outputs.
uint64_t position(const RecordEntry& e, peat_trace_slot_t slot, uint64_t t) {
  if (slot != PEAT_TRACE_SLOT_OUTPUT) return t;
  const auto* in = e.record->body_as_OpInvocation()->inputs();
  return (in ? in->size() : 0) + t;
}
}  // namespace

TensorLoc Reader::locate(uint64_t index, peat_trace_slot_t slot, uint64_t t, uint64_t seq,
                         peat_trace_slot_t to_slot, uint64_t to_t, const char* verb, bool delta) const {
  const fb::Tensor& td = tensor(index, slot, t);
  const RecordEntry& e = entries_[index];
  const auto bad_ref = [&](const std::string& why) {
    fail(PEAT_STATUS_CORRUPT_DATA, "{}: record {} at byte {}: {}[{}] {} {}[{}] of the record numbered {}: {}", path_,
         index, e.offset, slot_name(slot), t, verb, slot_name(to_slot), to_t, seq, why);
  };
  // Records are listed in increasing sequence numbers: find the target's entry.
  const auto it = std::lower_bound(entries_.begin(), entries_.end(), seq,
                                   [](const RecordEntry& x, uint64_t s) { return x.seq < s; });
  if (seq > e.seq) bad_ref("a later record (references and delta bases point backwards)");
  if (it == entries_.end() || it->seq != seq || !it->has_seq)
    bad_ref("this file does not hold that record (lost when the writer was killed, damaged, or left out of a "
            "recovered copy); it is not followed");
  const uint64_t target = static_cast<uint64_t>(it - entries_.begin());
  const bool op_slot = to_slot == PEAT_TRACE_SLOT_INPUT || to_slot == PEAT_TRACE_SLOT_OUTPUT;
  if ((it->kind == PEAT_TRACE_KIND_OP) != op_slot || (it->kind != PEAT_TRACE_KIND_OP && it->kind != PEAT_TRACE_KIND_CHECKPOINT))
    bad_ref(fmt::format("that record (kind {}) has no such slot", it->kind));
  if (to_t >= tensor_count(target, to_slot))
    bad_ref(fmt::format("that record has {} tensors there", tensor_count(target, to_slot)));
  if (target == index && position(*it, to_slot, to_t) >= position(e, slot, t))
    bad_ref("not an earlier tensor of the same record");
  const fb::Tensor& stored = tensor(target, to_slot, to_t);
  if (stored.ref_seq().has_value()) bad_ref("that tensor is itself a reference (references name stored bytes)");
  if (delta && stored.base_seq().has_value()) bad_ref("that tensor is itself a delta (a base is stored whole)");
  if (stored.raw_bytes() != td.raw_bytes() || stored.dtype_code() != td.dtype_code() ||
      stored.dtype_bits() != td.dtype_bits() || stored.dtype_lanes() != td.dtype_lanes())
    bad_ref(fmt::format("its dtype or size ({} bytes) differs from this tensor's ({} bytes)", stored.raw_bytes(),
                        td.raw_bytes()));
  return {target, to_slot, to_t};
}

TensorLoc Reader::resolve(uint64_t index, peat_trace_slot_t slot, uint64_t t) const {
  const fb::Tensor& td = tensor(index, slot, t);
  if (!td.ref_seq().has_value()) return {index, slot, t};
  return locate(index, slot, t, *td.ref_seq(), static_cast<peat_trace_slot_t>(td.ref_slot()), td.ref_index(),
                "refers to", false);
}

std::optional<TensorLoc> Reader::base(uint64_t index, peat_trace_slot_t slot, uint64_t t) const {
  const fb::Tensor& td = tensor(index, slot, t);
  if (!td.base_seq().has_value()) return std::nullopt;
  return locate(index, slot, t, *td.base_seq(), static_cast<peat_trace_slot_t>(td.base_slot()), td.base_index(),
                "is a delta against", true);
}

void Reader::load(uint64_t index, peat_trace_slot_t slot, uint64_t t, void* dst, std::size_t capacity) const {
  const TensorLoc loc = resolve(index, slot, t);
  index = loc.index, slot = loc.slot, t = loc.t;
  const fb::Tensor& td = tensor(index, slot, t);
  const RecordEntry& e = entries_[index];
  const uint64_t raw = td.raw_bytes();
  if (raw > capacity)
    fail(PEAT_STATUS_BUFFER_TOO_SMALL, "{}: record {}: {}[{}] needs {} bytes, the buffer has {}", path_, index,
         slot_name(slot), t, raw, capacity);
  if (raw > 0 && dst == nullptr) fail(PEAT_STATUS_INVALID_ARGUMENT, "destination buffer is NULL");
  const uint64_t at = e.payload_offset + td.payload_offset();
  const auto codec = static_cast<peat_trace_codec_t>(td.codec());
  const DLDataType dt{td.dtype_code(), td.dtype_bits(), td.dtype_lanes()};
  auto* out = static_cast<std::byte*>(dst);
  if (codec == PEAT_TRACE_CODEC_RAW) {
    if (raw) read_at(at, out, raw);
  } else {
    std::vector<std::byte> encoded(td.encoded_bytes());
    if (!encoded.empty()) read_at(at, encoded.data(), encoded.size());
    // The frame's own declared size, checked before decode allocates for it.
    if (!encoded.empty()) {
      const unsigned long long declared = ZSTD_getFrameContentSize(encoded.data(), encoded.size());
      if (declared == ZSTD_CONTENTSIZE_ERROR || (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared != raw))
        fail(PEAT_STATUS_CORRUPT_DATA, "{}: record {} at byte {}: {}[{}] payload at byte {}: the zstd frame {} but the "
             "tensor declares {} bytes", path_, index, e.offset, slot_name(slot), t, at,
             declared == ZSTD_CONTENTSIZE_ERROR ? std::string("is not a zstd frame")
                                                : fmt::format("holds {} bytes", declared), raw);
    }
    std::vector<std::byte> scratch;
    if (codec == PEAT_TRACE_CODEC_XOR_DELTA_SHUFFLE_ZSTD) {
      // Format 1.3: the base's bytes first, then the decoded XOR applied to them.
      const std::optional<TensorLoc> b = base(index, slot, t);
      load(b->index, b->slot, b->t, out, raw);
      std::vector<std::byte> delta(raw);
      const char* why = decode(PEAT_TRACE_CODEC_SHUFFLE_ZSTD, encoded.data(), encoded.size(), delta.data(), raw,
                               element_size(dt), scratch);
      if (*why)
        fail(PEAT_STATUS_CORRUPT_DATA, "{}: record {} at byte {}: {}[{}] payload at byte {}: {}", path_, index,
             e.offset, slot_name(slot), t, at, why);
      xor_into(out, delta.data(), raw);
    } else {
      const char* why = decode(codec, encoded.data(), encoded.size(), out, raw, element_size(dt), scratch);
      if (*why)
        fail(PEAT_STATUS_CORRUPT_DATA, "{}: record {} at byte {}: {}[{}] payload at byte {}: {}", path_, index,
             e.offset, slot_name(slot), t, at, why);
    }
  }
  if (checksum(out, raw) != td.checksum())
    fail(PEAT_STATUS_CORRUPT_DATA, "{}: record {} at byte {}: {}[{}] payload at byte {}: checksum mismatch", path_,
         index, e.offset, slot_name(slot), t, at);
}

peat_attr_t attr_view(const fb::Attr& a) noexcept {
  peat_attr_t v{};
  v.key = a.key() ? a.key()->c_str() : "";
  v.type = static_cast<peat_attr_type_t>(a.type());
  v.i = a.i();
  v.f = a.f();
  v.s = a.s() ? a.s()->c_str() : "";
  v.ints = a.ints() ? a.ints()->data() : nullptr;
  v.n_ints = a.ints() ? a.ints()->size() : 0;
  return v;
}

}  // namespace peat::impl::trace
