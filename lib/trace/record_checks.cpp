// Checks of one record's FlatBuffer metadata against its frame (see
// record_checks.hpp).
#include "lib/trace/record_checks.hpp"

#include "lib/core/error.hpp"
#include "lib/core/strided_copy.hpp"
#include "lib/core/utf8.hpp"
#include "lib/trace/codec.hpp"
#include "lib/trace/format.hpp"
#include "lib/trace/record.hpp"
#include "trace/trace_generated.h"

namespace peat::impl::trace {

namespace {

// FlatBuffers' verifier only checks 4-byte alignment of a vector's length
// prefix, so a crafted buffer can place 8-byte elements on a 4-byte boundary;
// reading them (and handing users a pointer to them, as shape and ints are)
// would be a misaligned access. The writer always aligns them to 8.
template <typename T>
bool misaligned(const flatbuffers::Vector<T>* v) {
  return v != nullptr && v->size() > 0 && reinterpret_cast<std::uintptr_t>(v->Data()) % alignof(T) != 0;
}

}  // namespace

std::string check_str(const flatbuffers::String* s, const std::string& what) {
  if (s == nullptr) return {};
  const std::size_t at = utf8_invalid_at(std::string_view(s->c_str(), s->size()));
  if (at == std::string_view::npos) return {};
  return fmt::format("{}: byte {} is not valid UTF-8", what, at);
}

namespace {

// Most bytes a zstd frame of `enc` bytes can decode to: a block holds at most
// 128 KiB and costs at least 3 bytes.
uint64_t zstd_decoded_bound(uint64_t enc) { return (enc / 3 + 1) * (uint64_t{128} << 10); }

// Checks one tensor description against the record's payload; "" when sound.
std::string check_tensor_desc(const fb::Tensor* t, uint64_t payload_len, uint16_t minor) {
  if (t == nullptr) return "null tensor entry";
  if (std::string why = check_str(t->name(), "name"); !why.empty()) return why;
  if (t->dtype_bits() == 0 || t->dtype_lanes() == 0) return "tensor dtype has zero bits or lanes";
  const auto* shape = t->shape();
  if (misaligned(shape)) return "tensor shape vector is not 8-byte aligned";
  const uint32_t ndim = shape ? shape->size() : 0;
  if (ndim > static_cast<uint32_t>(kMaxDims)) return fmt::format("tensor has {} dimensions (at most {})", ndim, kMaxDims);
  uint64_t numel = 1;
  for (uint32_t d = 0; d < ndim; ++d) {
    const int64_t extent = shape->Get(d);
    if (extent < 0) return fmt::format("tensor extent {} is negative", extent);
    if (__builtin_mul_overflow(numel, static_cast<uint64_t>(extent), &numel)) return "tensor element count overflows";
  }
  const DLDataType dt{t->dtype_code(), t->dtype_bits(), t->dtype_lanes()};
  uint64_t raw = 0;
  if (__builtin_mul_overflow(numel, element_size(dt), &raw) || raw > static_cast<uint64_t>(INT64_MAX))
    return "tensor byte size overflows";
  if (raw != t->raw_bytes())
    return fmt::format("tensor declares {} bytes but its shape and dtype give {}", t->raw_bytes(), raw);
  if (const auto* strides = t->strides()) {  // format 1.1: the recorded layout
    if (misaligned(strides)) return "tensor strides vector is not 8-byte aligned";
    if (strides->size() != ndim)
      return fmt::format("tensor has {} strides for {} dimensions", strides->size(), ndim);
    int64_t lo = 0, hi = 0, span = 0;
    if (!strided_span(static_cast<int>(ndim), shape ? shape->data() : nullptr, strides->data(), &lo, &hi) ||
        __builtin_sub_overflow(hi, lo, &span) || span >= INT64_MAX / 64)
      return "tensor strides span more elements than a storage can hold";
  }
  if (t->storage_offset() < 0) return fmt::format("tensor storage offset {} is negative", t->storage_offset());
  if (t->ref_seq().has_value()) {  // format 1.2: a reference, resolved when it is loaded (Reader::resolve)
    if (minor < kMinorWithRefs) return "tensor reference (format 1.2) in a file of an older format";
    if (t->base_seq().has_value()) return "tensor reference with a delta base";
    if (t->ref_slot() > PEAT_TRACE_SLOT_CHECKPOINT)
      return fmt::format("tensor reference to unknown slot {}", static_cast<int>(t->ref_slot()));
    if (t->codec() != fb::Codec::Raw || t->encoded_bytes() != 0 || t->payload_offset() != 0)
      return "tensor reference with a payload of its own";
    return {};
  }
  const auto codec = static_cast<peat_trace_codec_t>(t->codec());
  const bool delta = codec == PEAT_TRACE_CODEC_XOR_DELTA_SHUFFLE_ZSTD;
  if (codec != PEAT_TRACE_CODEC_RAW && codec != PEAT_TRACE_CODEC_SHUFFLE_ZSTD && !delta)
    return fmt::format("tensor has unknown codec {}", static_cast<int>(codec));
  if (delta && minor < kMinorWithDeltas)
    return "XOR-delta tensor (codec 2, format 1.3) in a file of an older format";
  if (delta != t->base_seq().has_value())
    return delta ? "XOR-delta tensor without a base" : "tensor with a delta base but not the XOR-delta codec";
  if (delta && t->base_slot() > PEAT_TRACE_SLOT_CHECKPOINT)
    return fmt::format("XOR-delta tensor whose base is in unknown slot {}", static_cast<int>(t->base_slot()));
  const uint64_t enc = t->encoded_bytes();
  if (enc > payload_len || t->payload_offset() > payload_len - enc)
    return fmt::format("tensor payload [{}, +{}) lies outside the record's {}-byte payload", t->payload_offset(), enc,
                       payload_len);
  if (codec == PEAT_TRACE_CODEC_RAW && enc != raw)
    return fmt::format("raw tensor has {} encoded bytes but {} decoded bytes", enc, raw);
  if (codec != PEAT_TRACE_CODEC_RAW && enc > encoded_bound(PEAT_TRACE_CODEC_SHUFFLE_ZSTD, raw))
    return fmt::format("compressed tensor of {} bytes is larger than the bound for {} bytes", enc, raw);
  if (codec != PEAT_TRACE_CODEC_RAW && raw > 0 && raw > zstd_decoded_bound(enc))
    return fmt::format("compressed tensor of {} bytes declares {} decoded bytes, more than zstd can decode from it",
                       enc, raw);
  return {};
}

std::string check_tensors(const flatbuffers::Vector<flatbuffers::Offset<fb::Tensor>>* v, const char* what,
                          uint64_t payload_len, uint16_t minor) {
  if (v == nullptr) return {};
  for (uint32_t i = 0; i < v->size(); ++i) {
    std::string why = check_tensor_desc(v->Get(i), payload_len, minor);
    if (!why.empty()) return fmt::format("{}[{}]: {}", what, i, why);
  }
  return {};
}

}  // namespace

std::string check_body(const fb::Record* rec, uint16_t kind, uint64_t payload_len, uint16_t minor) {
  switch (kind) {
    case PEAT_TRACE_KIND_OP: {
      const auto* op = rec->body_as_OpInvocation();
      if (op == nullptr) return "frame kind 'op' but the metadata holds another record type";
      if (op->op() == nullptr || op->op()->size() == 0) return "op record without an op name";
      if (std::string why = check_str(op->op(), "op name"); !why.empty()) return why;
      if (std::string why = check_str(op->module_path(), "module_path"); !why.empty()) return why;
      if (op->phase() < PEAT_PHASE_FORWARD || op->phase() > PEAT_PHASE_OTHER)
        return fmt::format("op record has unknown phase {}", op->phase());
      if (const auto* attrs = op->attrs()) {
        for (uint32_t i = 0; i < attrs->size(); ++i) {
          const fb::Attr* a = attrs->Get(i);
          if (a == nullptr || a->key() == nullptr) return fmt::format("attrs[{}] has no key", i);
          if (static_cast<int>(a->type()) > PEAT_ATTR_INT_ARRAY)
            return fmt::format("attrs[{}] has unknown type {}", i, static_cast<int>(a->type()));
          if (misaligned(a->ints())) return fmt::format("attrs[{}]: ints vector is not 8-byte aligned", i);
          if (std::string why = check_str(a->key(), fmt::format("attrs[{}].key", i)); !why.empty()) return why;
          if (std::string why = check_str(a->s(), fmt::format("attrs[{}].s", i)); !why.empty()) return why;
        }
      }
      std::string why = check_tensors(op->inputs(), "inputs", payload_len, minor);
      if (why.empty()) why = check_tensors(op->outputs(), "outputs", payload_len, minor);
      return why;
    }
    case PEAT_TRACE_KIND_CHECKPOINT: {
      const auto* cp = rec->body_as_Checkpoint();
      if (cp == nullptr) return "frame kind 'checkpoint' but the metadata holds another record type";
      if (std::string why = check_str(cp->name(), "checkpoint name"); !why.empty()) return why;
      return check_tensors(cp->tensors(), "tensors", payload_len, minor);
    }
    case PEAT_TRACE_KIND_SCALAR: {
      const auto* sc = rec->body_as_Scalar();
      if (sc == nullptr) return "frame kind 'scalar' but the metadata holds another record type";
      if (sc->name() == nullptr) return "scalar record without a name";
      return check_str(sc->name(), "scalar name");
    }
    case PEAT_TRACE_KIND_STEP:
      return rec->body_as_StepMarker() ? "" : "frame kind 'step' but the metadata holds another record type";
    case kKindIndex: {
      const auto* ix = rec->body_as_Index();
      if (ix == nullptr) return "frame kind 'index' but the metadata holds another record type";
      if (payload_len != 0) return "index record with a payload";
      if (misaligned(ix->offsets())) return "index offsets vector is not 8-byte aligned";
      if (misaligned(ix->seqs())) return "index seqs vector is not 8-byte aligned";
      return {};
    }
    default:
      return fmt::format("unknown record kind {}", kind);
  }
}

uint64_t raw_total_of(const fb::Record* rec, uint16_t kind) {
  uint64_t total = 0;
  const auto add = [&](const flatbuffers::Vector<flatbuffers::Offset<fb::Tensor>>* v) {
    if (v == nullptr) return;
    for (uint32_t i = 0; i < v->size(); ++i)
      if (__builtin_add_overflow(total, v->Get(i)->raw_bytes(), &total)) total = UINT64_MAX;
  };
  if (kind == PEAT_TRACE_KIND_OP) {
    add(rec->body_as_OpInvocation()->inputs());
    add(rec->body_as_OpInvocation()->outputs());
  } else if (kind == PEAT_TRACE_KIND_CHECKPOINT) {
    add(rec->body_as_Checkpoint()->tensors());
  }
  return total;
}

}  // namespace peat::impl::trace
