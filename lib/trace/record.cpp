#include "lib/trace/record.hpp"

#include "lib/core/error.hpp"
#include "lib/core/utf8.hpp"
#include "lib/trace/codec.hpp"
#include "lib/trace/delta.hpp"
#include "lib/trace/format.hpp"
#include "trace/trace_generated.h"

#include <chrono>
#include <cstring>

namespace peat::impl::trace {

namespace fbs = ::flatbuffers;

std::size_t element_size(DLDataType dtype) noexcept {
  return (static_cast<std::size_t>(dtype.bits) * dtype.lanes + 7) / 8;
}

uint64_t now_unix_ns() noexcept {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

void check_tensor(const TensorData& tensor, const std::string& what) {
  if (tensor.dtype.bits == 0 || tensor.dtype.lanes == 0)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: dtype has bits {} and lanes {}; both must be > 0", what,
         tensor.dtype.bits, tensor.dtype.lanes);
  if (tensor.shape.size() > static_cast<std::size_t>(kMaxDims))
    fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: {} dimensions (at most {})", what, tensor.shape.size(), kMaxDims);
  uint64_t numel = 1;
  for (int64_t d : tensor.shape) {
    if (d < 0) fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: negative extent {}", what, d);
    if (__builtin_mul_overflow(numel, static_cast<uint64_t>(d), &numel))
      fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: element count overflows", what);
  }
  if (!tensor.strides.empty() && tensor.strides.size() != tensor.shape.size())
    fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: {} strides for {} dimensions", what, tensor.strides.size(),
         tensor.shape.size());
  if (tensor.storage_offset < 0)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: negative storage offset {}", what, tensor.storage_offset);
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(numel, element_size(tensor.dtype), &bytes) ||
      (!tensor.ref && bytes != tensor.bytes.size()))
    fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: holds {} bytes but its shape and dtype need {}", what,
         tensor.bytes.size(), bytes);
  if (tensor.ref && !tensor.bytes.empty())
    fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: a reference to stored bytes holds {} bytes of its own", what,
         tensor.bytes.size());
  if (tensor.ref && tensor.ref->slot != PEAT_TRACE_SLOT_INPUT && tensor.ref->slot != PEAT_TRACE_SLOT_OUTPUT &&
      tensor.ref->slot != PEAT_TRACE_SLOT_CHECKPOINT)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: reference to unknown slot {}", what, tensor.ref->slot);
  if (tensor.base && tensor.base->slot != PEAT_TRACE_SLOT_INPUT && tensor.base->slot != PEAT_TRACE_SLOT_OUTPUT &&
      tensor.base->slot != PEAT_TRACE_SLOT_CHECKPOINT)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: delta base in unknown slot {}", what, tensor.base->slot);
}

uint64_t tensor_bytes(const TensorData& tensor) noexcept {
  if (!tensor.ref) return tensor.bytes.size();
  uint64_t n = element_size(tensor.dtype);
  for (int64_t d : tensor.shape) n *= static_cast<uint64_t>(d);  // checked by check_tensor
  return n;
}

void check_utf8(std::string_view text, const std::string& what) {
  const std::size_t at = utf8_invalid_at(text);
  if (at != std::string_view::npos)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: byte {} is not valid UTF-8 (trace strings are UTF-8)", what, at);
}

namespace {

// FlatBuffers costs of the bound: a string or vector adds its length prefix,
// a NUL and alignment; a table its vtable, offsets and alignment.
constexpr uint64_t kStringCost = 16, kTableCost = 96;

uint64_t tensors_bound(const std::vector<TensorData>& ts) {
  uint64_t n = 16;
  for (const TensorData& t : ts)
    n += kTableCost + 8 + t.name.size() + kStringCost + 8 * t.shape.size() + kStringCost + 8 * t.strides.size() +
         kStringCost + (t.ref ? 24 : 0) + (t.base ? 24 : 0);
  return n;
}

void check_tensor_names(const std::vector<TensorData>& ts, const char* slot) {
  for (std::size_t i = 0; i < ts.size(); ++i) check_utf8(ts[i].name, fmt::format("{}[{}].name", slot, i));
}

}  // namespace

uint64_t meta_bytes_bound(const RecordData& record) noexcept {
  uint64_t n = 2 * kTableCost;  // root Record table and its body table
  if (const auto* op = std::get_if<OpData>(&record)) {
    n += op->op.size() + op->module_path.size() + 2 * kStringCost + 16;
    for (const AttrData& a : op->attrs)
      n += kTableCost + 8 + a.key.size() + a.s.size() + 2 * kStringCost + 8 * a.ints.size() + kStringCost;
    n += tensors_bound(op->inputs) + tensors_bound(op->outputs);
  } else if (const auto* cp = std::get_if<CheckpointData>(&record)) {
    n += cp->name.size() + kStringCost + tensors_bound(cp->tensors);
  } else if (const auto* sc = std::get_if<ScalarData>(&record)) {
    n += sc->name.size() + kStringCost;
  }
  return n;
}

void check_record(const RecordData& record) {
  if (const auto* op = std::get_if<OpData>(&record)) {
    check_utf8(op->op, "op name");
    check_utf8(op->module_path, "module_path");
    for (std::size_t i = 0; i < op->attrs.size(); ++i) {
      check_utf8(op->attrs[i].key, fmt::format("attrs[{}].key", i));
      check_utf8(op->attrs[i].s, fmt::format("attrs[{}] ('{}') string value", i, op->attrs[i].key));
    }
    check_tensor_names(op->inputs, "inputs");
    check_tensor_names(op->outputs, "outputs");
  } else if (const auto* cp = std::get_if<CheckpointData>(&record)) {
    check_utf8(cp->name, "checkpoint name");
    check_tensor_names(cp->tensors, "tensors");
  } else if (const auto* sc = std::get_if<ScalarData>(&record)) {
    check_utf8(sc->name, "scalar name");
  }
  const uint64_t bound = meta_bytes_bound(record);
  if (bound > kDefaultMaxMetaBytes)
    fail(PEAT_STATUS_INVALID_ARGUMENT,
         "record metadata (names, attributes, shapes) of about {} bytes is above the {}-byte limit of trace readers "
         "(max_meta_bytes); the record is not written",
         bound, kDefaultMaxMetaBytes);
}

namespace {

using TensorOffsets = fbs::Offset<fbs::Vector<fbs::Offset<fb::Tensor>>>;

// The payload of a record being encoded: one part per stored tensor.
struct Payload {
  std::vector<ByteBuffer> parts;
  uint64_t size = 0;
};

// Encodes tensors into `payload` and their descriptions into `builder`.
// `owned` is null, or the same tensors as `tensors` with byte buffers the
// encodings may take over (encode_record of an rvalue): each tensor is then
// encoded within its own buffer, which becomes its payload part.
TensorOffsets add_tensors(fbs::FlatBufferBuilder& builder, const std::vector<TensorData>& tensors,
                          std::vector<TensorData>* owned, peat_trace_codec_t codec, int level, Payload& payload,
                          uint64_t& raw_total) {
  std::vector<fbs::Offset<fb::Tensor>> offsets;
  offsets.reserve(tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const TensorData& t = tensors[i];
    // A stored tensor's bytes are encoded into the payload; a reference
    // (format 1.2) stores none: its bytes lie in the record named by ref->seq.
    uint64_t raw = tensor_bytes(t), sum = 0, at = 0, n = 0;
    bool delta = false;
    if (!t.ref) {
      raw = t.bytes.size();
      sum = checksum(t.bytes.data(), t.bytes.size());
      at = payload.size;
      ByteBuffer part;
      if (owned) part = std::move((*owned)[i].bytes);  // `t.bytes` is empty from here on
      const std::byte* in = owned ? part.data() : t.bytes.data();
      const std::size_t es = element_size(t.dtype);
      std::size_t enc = 0;
      delta = t.base && t.base_bytes && codec == PEAT_TRACE_CODEC_SHUFFLE_ZSTD && t.base_bytes->size() == raw &&
              encode_delta(level, in, t.base_bytes->data(), raw, es, part, &enc);
      if (t.base && !delta && t.base_misses) t.base_misses->fetch_add(1, std::memory_order_relaxed);
      n = delta ? enc : encode_replacing(codec, level, in, raw, es, part);
      part.resize(pad8(part.size()));
      payload.size += part.size();
      if (!part.empty()) payload.parts.push_back(std::move(part));
    }
    raw_total += raw;
    const auto name = builder.CreateString(t.name);
    const auto shape = builder.CreateVector(t.shape);
    const auto strides = t.strides.empty() ? fbs::Offset<fbs::Vector<int64_t>>() : builder.CreateVector(t.strides);
    fb::TensorBuilder tb(builder);
    tb.add_name(name);
    tb.add_dtype_code(t.dtype.code);
    tb.add_dtype_bits(t.dtype.bits);
    tb.add_dtype_lanes(t.dtype.lanes);
    tb.add_shape(shape);
    tb.add_device_type(t.device.device_type);
    tb.add_device_id(t.device.device_id);
    tb.add_codec(t.ref ? fb::Codec::Raw : delta ? fb::Codec::XorDeltaShuffleZstd : static_cast<fb::Codec>(codec));
    tb.add_raw_bytes(raw);
    if (t.ref) {
      tb.add_ref_seq(t.ref->seq);
      tb.add_ref_slot(static_cast<uint8_t>(t.ref->slot));
      tb.add_ref_index(t.ref->index);
    } else {
      tb.add_payload_offset(at);
      tb.add_encoded_bytes(n);
      tb.add_checksum(sum);
    }
    if (delta) {
      tb.add_base_seq(t.base->seq);
      tb.add_base_slot(static_cast<uint8_t>(t.base->slot));
      tb.add_base_index(t.base->index);
    }
    if (!t.strides.empty()) tb.add_strides(strides);
    if (t.storage_offset != 0) tb.add_storage_offset(t.storage_offset);
    offsets.push_back(tb.Finish());
  }
  return builder.CreateVector(offsets);
}

}  // namespace

std::vector<std::byte> frame_head(uint16_t kind, const uint8_t* meta, std::size_t meta_len, uint64_t payload_bytes) {
  if (meta_len > kMaxMetaBytes) fail(PEAT_STATUS_INVALID_ARGUMENT, "record metadata of {} bytes is too large", meta_len);
  std::vector<std::byte> out(kFrameFixed + pad8(meta_len));
  auto* p = reinterpret_cast<unsigned char*>(out.data());
  put_u32(p, kRecordMagic);
  put_u16(p + 4, kind);
  put_u16(p + 6, 0);
  put_u32(p + 8, static_cast<uint32_t>(meta_len));
  put_u32(p + 12, 0);
  put_u64(p + 16, payload_bytes);
  if (meta_len > 0) std::memcpy(p + kFrameFixed, meta, meta_len);  // meta may be NULL when empty
  // checksum of the first 24 bytes followed by the metadata
  std::vector<unsigned char> covered(24 + meta_len);
  std::memcpy(covered.data(), p, 24);
  if (meta_len > 0) std::memcpy(covered.data() + 24, meta, meta_len);
  put_u64(p + 24, checksum(covered.data(), covered.size()));
  return out;
}

std::vector<std::byte> frame(uint16_t kind, const uint8_t* meta, std::size_t meta_len,
                             const std::vector<std::byte>& payload) {
  std::vector<std::byte> out = frame_head(kind, meta, meta_len, payload.size());
  const std::size_t at = out.size();
  out.resize(at + pad8(payload.size()));
  if (!payload.empty()) std::memcpy(out.data() + at, payload.data(), payload.size());
  return out;
}

namespace {

// encode_record of `record`; `owned` is null or `record` itself, whose
// tensors' byte buffers the payload may take over.
EncodedRecord encode(const RecordData& record, RecordData* owned, peat_trace_codec_t codec, int level) {
  if (codec != PEAT_TRACE_CODEC_RAW && codec != PEAT_TRACE_CODEC_SHUFFLE_ZSTD)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "unknown trace codec {}", codec);
  check_record(record);
  fbs::FlatBufferBuilder builder(1024);
  Payload payload;
  EncodedRecord out;
  fbs::Offset<void> body;
  fb::Body type = fb::Body::NONE;
  if (const auto* op = std::get_if<OpData>(&record)) {
    for (std::size_t i = 0; i < op->inputs.size(); ++i) check_tensor(op->inputs[i], fmt::format("inputs[{}]", i));
    for (std::size_t i = 0; i < op->outputs.size(); ++i) check_tensor(op->outputs[i], fmt::format("outputs[{}]", i));
    auto* own = owned ? std::get_if<OpData>(owned) : nullptr;
    const auto inputs = add_tensors(builder, op->inputs, own ? &own->inputs : nullptr, codec, level, payload,
                                    out.raw_bytes);
    const auto outputs = add_tensors(builder, op->outputs, own ? &own->outputs : nullptr, codec, level, payload,
                                     out.raw_bytes);
    std::vector<fbs::Offset<fb::Attr>> attrs;
    for (const AttrData& a : op->attrs) {
      const auto key = builder.CreateString(a.key);
      fbs::Offset<fbs::String> s;
      fbs::Offset<fbs::Vector<int64_t>> ints;
      if (a.type == PEAT_ATTR_STRING) s = builder.CreateString(a.s);
      if (a.type == PEAT_ATTR_INT_ARRAY) ints = builder.CreateVector(a.ints);
      fb::AttrBuilder ab(builder);
      ab.add_key(key);
      ab.add_type(static_cast<fb::AttrType>(a.type));
      if (a.type == PEAT_ATTR_INT) ab.add_i(a.i);
      if (a.type == PEAT_ATTR_FLOAT) ab.add_f(a.f);
      if (a.type == PEAT_ATTR_STRING) ab.add_s(s);
      if (a.type == PEAT_ATTR_INT_ARRAY) ab.add_ints(ints);
      attrs.push_back(ab.Finish());
    }
    const auto attr_vec = builder.CreateVector(attrs);
    const auto name = builder.CreateString(op->op);
    const auto path = builder.CreateString(op->module_path);
    body = fb::CreateOpInvocation(builder, name, static_cast<int8_t>(op->phase), path, op->step, op->call_index,
                                  attr_vec, inputs, outputs)
               .Union();
    type = fb::Body::OpInvocation;
    out.kind = PEAT_TRACE_KIND_OP;
  } else if (const auto* cp = std::get_if<CheckpointData>(&record)) {
    for (std::size_t i = 0; i < cp->tensors.size(); ++i) check_tensor(cp->tensors[i], fmt::format("tensors[{}]", i));
    auto* own = owned ? std::get_if<CheckpointData>(owned) : nullptr;
    const auto tensors = add_tensors(builder, cp->tensors, own ? &own->tensors : nullptr, codec, level, payload,
                                     out.raw_bytes);
    const auto name = builder.CreateString(cp->name);
    body = fb::CreateCheckpoint(builder, name, cp->step, tensors).Union();
    type = fb::Body::Checkpoint;
    out.kind = PEAT_TRACE_KIND_CHECKPOINT;
  } else if (const auto* sc = std::get_if<ScalarData>(&record)) {
    const auto name = builder.CreateString(sc->name);
    body = fb::CreateScalar(builder, name, sc->step, sc->value).Union();
    type = fb::Body::Scalar;
    out.kind = PEAT_TRACE_KIND_SCALAR;
  } else {
    const auto& st = std::get<StepData>(record);
    body = fb::CreateStepMarker(builder, st.step, st.unix_ns).Union();
    type = fb::Body::StepMarker;
    out.kind = PEAT_TRACE_KIND_STEP;
  }
  // seq: a placeholder stored in the buffer, stamped by the Writer in file order.
  builder.Finish(fb::CreateRecord(builder, type, body, uint64_t{0}));
  if (builder.GetSize() > kDefaultMaxMetaBytes)  // the bound above makes this unreachable; kept as the rule
    fail(PEAT_STATUS_INVALID_ARGUMENT, "record metadata of {} bytes is above the {}-byte limit of trace readers",
         builder.GetSize(), kDefaultMaxMetaBytes);
  out.frame = frame_head(out.kind, builder.GetBufferPointer(), builder.GetSize(), payload.size);
  out.payload = std::move(payload.parts);  // each part padded to 8 already
  return out;
}

}  // namespace

EncodedRecord encode_record(const RecordData& record, peat_trace_codec_t codec, int level) {
  return encode(record, nullptr, codec, level);
}

EncodedRecord encode_record(RecordData&& record, peat_trace_codec_t codec, int level) {
  return encode(record, &record, codec, level);
}

uint64_t EncodedRecord::payload_bytes() const noexcept {
  uint64_t n = 0;
  for (const ByteBuffer& part : payload) n += part.size();
  return n;
}


bool stamp_seq(std::vector<std::byte>& framed, uint64_t seq) {
  if (framed.size() < kFrameFixed) return false;
  auto* p = reinterpret_cast<unsigned char*>(framed.data());
  const uint32_t meta_len = get_u32(p + 8);
  if (kFrameFixed + uint64_t{meta_len} > framed.size() || meta_len < 8) return false;
  unsigned char* meta = p + kFrameFixed;
  // Root table, its vtable, then the seq field's slot (FlatBuffers layout).
  const uint32_t table = get_u32(meta);
  if (uint64_t{table} + 4 > meta_len) return false;
  const int64_t vtable = static_cast<int64_t>(table) - static_cast<int32_t>(get_u32(meta + table));
  if (vtable < 0 || static_cast<uint64_t>(vtable) + 4 > meta_len) return false;
  const uint16_t vt_size = get_u16(meta + vtable);
  const uint16_t slot = fb::Record::VT_SEQ;
  if (slot + 2u > vt_size || static_cast<uint64_t>(vtable) + slot + 2 > meta_len) return false;
  const uint16_t field = get_u16(meta + vtable + slot);
  if (field == 0 || uint64_t{table} + field + 8 > meta_len) return false;
  put_u64(meta + table + field, seq);
  std::vector<unsigned char> covered(24 + meta_len);
  std::memcpy(covered.data(), p, 24);
  std::memcpy(covered.data() + 24, meta, meta_len);
  put_u64(p + 24, checksum(covered.data(), covered.size()));
  return true;
}

std::vector<std::byte> encode_header(const RunInfoData& info) {
  check_utf8(info.framework, "framework");
  check_utf8(info.device, "device");
  check_utf8(info.vendor, "vendor");
  check_utf8(info.library_version, "library_version");
  check_utf8(info.run_name, "run_name");
  for (std::size_t i = 0; i < info.tags.size(); ++i) {
    check_utf8(info.tags[i].first, fmt::format("tags[{}].key", i));
    check_utf8(info.tags[i].second, fmt::format("tags[{}] ('{}') value", i, info.tags[i].first));
  }
  fbs::FlatBufferBuilder builder(512);
  std::vector<fbs::Offset<fb::KeyValue>> tags;
  for (const auto& [k, v] : info.tags) tags.push_back(fb::CreateKeyValueDirect(builder, k.c_str(), v.c_str()));
  const auto tag_vec = builder.CreateVector(tags);
  builder.Finish(fb::CreateRunInfo(builder, builder.CreateString(info.framework), builder.CreateString(info.device),
                                   builder.CreateString(info.vendor), builder.CreateString(info.library_version),
                                   builder.CreateString(info.run_name), info.rank, info.world_size,
                                   info.created_unix_ns, tag_vec));
  const std::size_t meta_len = builder.GetSize();
  std::vector<std::byte> out(kHeaderFixed + pad8(meta_len));
  auto* p = reinterpret_cast<unsigned char*>(out.data());
  std::memcpy(p, kFileMagic, 8);
  put_u16(p + 8, PEAT_TRACE_FORMAT_MAJOR);
  put_u16(p + 10, PEAT_TRACE_FORMAT_MINOR);
  put_u32(p + 12, 0);
  put_u32(p + 16, static_cast<uint32_t>(meta_len));
  put_u32(p + 20, 0);
  std::memcpy(p + kHeaderFixed, builder.GetBufferPointer(), meta_len);
  std::vector<unsigned char> covered(24 + meta_len);
  std::memcpy(covered.data(), p, 24);
  std::memcpy(covered.data() + 24, builder.GetBufferPointer(), meta_len);
  put_u64(p + 24, checksum(covered.data(), covered.size()));
  return out;
}

std::vector<std::byte> encode_footer(const std::vector<uint64_t>& offsets, const std::vector<uint8_t>& kinds,
                                     const std::vector<uint64_t>& seqs, uint64_t index_offset) {
  fbs::FlatBufferBuilder builder(64 + offsets.size() * 17);
  const auto off = builder.CreateVector(offsets);
  const auto kin = builder.CreateVector(kinds);
  const auto seq = seqs.empty() ? fbs::Offset<fbs::Vector<uint64_t>>() : builder.CreateVector(seqs);
  const auto index = fb::CreateIndex(builder, off, kin, seq);
  builder.Finish(fb::CreateRecord(builder, fb::Body::Index, index.Union()));
  std::vector<std::byte> out = frame(kKindIndex, builder.GetBufferPointer(), builder.GetSize(), {});
  const std::size_t at = out.size();
  out.resize(at + kTrailerSize);
  auto* t = reinterpret_cast<unsigned char*>(out.data() + at);
  std::memcpy(t, kTrailerMagic, 8);
  put_u64(t + 8, index_offset);
  put_u64(t + 16, offsets.size());
  put_u64(t + 24, checksum(t, 24));
  return out;
}

}  // namespace peat::impl::trace
