// Writes the seed corpora of the fuzz targets into DIR/<target>/: real traces
// written by the library's own writer (op records with attributes and tensors
// of several dtypes in both codecs, a checkpoint, a scalar, step markers), cut
// into the shapes each target reads, plus structured inputs for the analyzer
// and injector targets. Deterministic: the same files every build.
#include "trace/codec.hpp"
#include "trace/format.hpp"
#include "trace/record.hpp"
#include "trace/trace_generated.h"
#include "trace/writer.hpp"

#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace peat::impl::trace;

namespace {

void put(const fs::path& dir, const std::string& name, const void* data, std::size_t size) {
  fs::create_directories(dir);
  std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
}

TensorData tensor(const std::string& name, DLDataType dtype, std::vector<int64_t> shape, uint32_t seed) {
  TensorData t;
  t.name = name;
  t.dtype = dtype;
  t.shape = std::move(shape);
  int64_t n = 1;
  for (int64_t e : t.shape) n *= e;
  t.bytes.resize(static_cast<std::size_t>(n) * element_size(dtype));
  std::mt19937 rng(seed);
  // Small-exponent floats compress like real activations.
  for (std::size_t i = 0; i < t.bytes.size(); ++i)
    t.bytes[i] = static_cast<std::byte>((i % element_size(dtype)) + 1 == element_size(dtype) ? 0x3C : rng() & 0xFF);
  return t;
}

std::vector<RecordData> records() {
  std::vector<RecordData> out;
  OpData op;
  op.op = "aten::matmul";
  op.module_path = "encoder.layer0.attn";
  op.step = 1;
  op.call_index = 4;
  op.attrs = {{"alpha", PEAT_ATTR_FLOAT, 0, 0.5, "", {}},
              {"transpose", PEAT_ATTR_INT, 1, 0, "", {}},
              {"layout", PEAT_ATTR_STRING, 0, 0, "NCHW", {}},
              {"dims", PEAT_ATTR_INT_ARRAY, 0, 0, "", {2, 3, 4}}};
  op.inputs = {tensor("a", {kDLFloat, 32, 1}, {4, 8}, 1), tensor("b", {kDLBfloat, 16, 1}, {8, 3}, 2)};
  op.inputs[1].strides = {1, 8};  // format 1.1: a transposed operand keeps its layout
  op.inputs[1].storage_offset = 2;
  op.outputs = {tensor("c", {kDLFloat, 16, 1}, {4, 3}, 3)};
  out.emplace_back(op);
  OpData small;
  small.op = "aten::relu";
  small.phase = PEAT_PHASE_BACKWARD;
  small.step = 2;
  small.inputs = {tensor("x", {kDLFloat, 64, 1}, {}, 4)};
  small.outputs = {tensor("y", {kDLFloat, 64, 1}, {0}, 5)};
  out.emplace_back(small);
  CheckpointData ckpt;
  ckpt.name = "weights";
  ckpt.step = 2;
  ckpt.tensors = {tensor("w", {kDLFloat, 32, 1}, {2, 2, 2}, 6)};
  out.emplace_back(ckpt);
  out.emplace_back(ScalarData{"loss", 2, 1.25});
  out.emplace_back(StepData{3, 1234567});
  // Format 1.2: references to bytes stored earlier (record 0's input a, the
  // checkpoint's w under another shape) and to an earlier tensor of the same
  // record (record numbers are the writer's: 0, 1, 2, ...).
  OpData refs;
  refs.op = "aten::mm";
  refs.step = 3;
  const auto ref = [](const std::string& name, DLDataType dt, std::vector<int64_t> shape, uint64_t seq,
                      peat_trace_slot_t slot, uint32_t index) {
    TensorData t;
    t.name = name;
    t.dtype = dt;
    t.shape = std::move(shape);
    t.ref = TensorRef{seq, slot, index};
    return t;
  };
  refs.inputs = {ref("a", {kDLFloat, 32, 1}, {4, 8}, 0, PEAT_TRACE_SLOT_INPUT, 0),
                 ref("w", {kDLFloat, 32, 1}, {8}, 2, PEAT_TRACE_SLOT_CHECKPOINT, 0),
                 tensor("z", {kDLFloat, 32, 1}, {16}, 7)};
  refs.outputs = {ref("z_again", {kDLFloat, 32, 1}, {4, 4}, 5, PEAT_TRACE_SLOT_INPUT, 2)};
  refs.outputs[0].strides = {1, 4};
  out.emplace_back(refs);
  // Format 1.3: an XOR delta against record 0's input a (a later version of
  // it: low bits changed), and a reference to that delta.
  OpData deltas;
  deltas.op = "aten::mm";
  deltas.step = 4;
  TensorData a1 = std::get<OpData>(out[0]).inputs[0];
  a1.base_bytes = std::make_shared<const peat::impl::ByteBuffer>(a1.bytes);
  for (std::size_t i = 0; i < a1.bytes.size(); i += 4) a1.bytes[i] ^= std::byte{0x05};
  a1.name = "a_next";
  a1.base = TensorRef{0, PEAT_TRACE_SLOT_INPUT, 0};
  deltas.inputs = {a1, ref("a_next_again", {kDLFloat, 32, 1}, {32}, 6, PEAT_TRACE_SLOT_INPUT, 0)};
  out.emplace_back(deltas);
  return out;
}

std::vector<unsigned char> slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// An op record built by hand: `name` as given (the writer refuses non-UTF-8),
// optionally one float32 input declaring `raw` bytes over `payload` ("zstd").
EncodedRecord crafted_op(const std::string& name, uint64_t raw = 0, const std::vector<std::byte>& payload = {}) {
  flatbuffers::FlatBufferBuilder b;
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<peat::fb::Tensor>>> inputs;
  if (raw > 0) {
    const auto shape = b.CreateVector(std::vector<int64_t>{static_cast<int64_t>(raw / 4)});
    peat::fb::TensorBuilder tb(b);
    tb.add_dtype_code(kDLFloat);
    tb.add_dtype_bits(32);
    tb.add_dtype_lanes(1);
    tb.add_shape(shape);
    tb.add_codec(peat::fb::Codec::ShuffleZstd);
    tb.add_raw_bytes(raw);
    tb.add_encoded_bytes(payload.size());
    const auto t = tb.Finish();
    inputs = b.CreateVector(std::vector<flatbuffers::Offset<peat::fb::Tensor>>{t});
  }
  const auto op = peat::fb::CreateOpInvocation(b, b.CreateString(name), 0, 0, 0, 0, 0, inputs);
  b.Finish(peat::fb::CreateRecord(b, peat::fb::Body::OpInvocation, op.Union(), uint64_t{0}));
  EncodedRecord rec;
  rec.kind = PEAT_TRACE_KIND_OP;
  rec.frame = frame(PEAT_TRACE_KIND_OP, b.GetBufferPointer(), b.GetSize(), payload);
  return rec;
}

// Hostile inputs of issue 23 as whole files: a size bomb (1 GiB and 1 MiB
// declared over a 4 KiB zstd frame), non-UTF-8 and control characters in
// names, and two records of the same size swapped byte for byte.
void hostile_traces(const fs::path& tmp, const fs::path& out, const RunInfoData& info) {
  std::vector<std::byte> zeros(4096), zstd;
  encode(PEAT_TRACE_CODEC_SHUFFLE_ZSTD, 1, zeros.data(), zeros.size(), 4, zstd);
  const auto write = [&](const std::string& name, std::vector<EncodedRecord> records, bool swap12) {
    const fs::path file = tmp / (name + ".peat");
    std::vector<uint64_t> at;
    {
      Writer w(file.string(), info);
      for (EncodedRecord& r : records) at.push_back(w.append(r));
      w.close();
    }
    std::vector<unsigned char> bytes = slurp(file);
    if (swap12 && at.size() >= 4 && at[2] - at[1] == at[3] - at[2]) {
      std::vector<unsigned char> tmp_rec(bytes.begin() + static_cast<std::ptrdiff_t>(at[1]),
                                         bytes.begin() + static_cast<std::ptrdiff_t>(at[2]));
      std::memcpy(bytes.data() + at[1], bytes.data() + at[2], tmp_rec.size());
      std::memcpy(bytes.data() + at[2], tmp_rec.data(), tmp_rec.size());
    }
    put(out, name, bytes.data(), bytes.size());
  };
  write("bomb", [&] {
    std::vector<EncodedRecord> v;
    v.push_back(crafted_op("bomb", uint64_t{1} << 30, zstd));
    v.push_back(crafted_op("frame_smaller", uint64_t{256} << 10, zstd));
    v.push_back(encode_record(ScalarData{"after", 1, 2}, PEAT_TRACE_CODEC_RAW, 1));
    return v;
  }(), false);
  write("non_utf8", [&] {
    std::vector<EncodedRecord> v;
    v.push_back(crafted_op("ok"));
    v.push_back(crafted_op("bad\xff\xfe"));
    v.push_back(crafted_op("\x1b[31mred\x1b[0m\x07"));
    v.push_back(crafted_op("after"));
    return v;
  }(), false);
  {
    // Odd but valid values, an unclosed file and one damaged payload: what
    // `peat verify --recover` must copy whole but for the damaged record.
    RunInfoData odd = info;
    odd.rank = INT32_MAX;
    odd.world_size = 1;
    odd.tags = {{"", "tag without key"}};
    const fs::path file = tmp / "odd_values.peat";
    uint64_t damaged = 0;
    {
      Writer w(file.string(), odd);
      w.append(encode_record(StepData{-1, 4242}, PEAT_TRACE_CODEC_RAW, 1));
      w.append(encode_record(ScalarData{"", 3, 0.5}, PEAT_TRACE_CODEC_RAW, 1));
      OpData op;
      op.op = "odd";
      op.step = INT64_MIN;
      op.attrs = {{"", PEAT_ATTR_INT, 5, 0, "", {}}};
      w.append(encode_record(op, PEAT_TRACE_CODEC_RAW, 1));
      CheckpointData cp;
      cp.name = "damaged";
      cp.tensors = {tensor("w", {kDLFloat, 32, 1}, {64}, 9)};
      damaged = w.append(encode_record(cp, PEAT_TRACE_CODEC_SHUFFLE_ZSTD, 1));
      for (int i = 0; i < 5; ++i) w.append(encode_record(ScalarData{"loss", i, 1.0 / (i + 1)}, PEAT_TRACE_CODEC_RAW, 1));
    }  // not closed: as if the writer were killed
    std::vector<unsigned char> bytes = slurp(file);
    bytes[damaged + kFrameFixed + pad8(get_u32(bytes.data() + damaged + 8)) + 16] ^= 0x10;
    put(out, "odd_values", bytes.data(), bytes.size());
  }
  {
    // Format 1.2: references into records a crash or a recovery left out
    // (numbers 1 and 2 missing), into a later record, and to a reference.
    const fs::path file = tmp / "lost_references.peat";
    {
      Writer w(file.string(), info);
      OpData first;
      first.op = "aten::relu";
      first.outputs = {tensor("y", {kDLFloat, 32, 1}, {32}, 10)};
      w.append(encode_record(first, PEAT_TRACE_CODEC_SHUFFLE_ZSTD, 1), 0);
      OpData next;
      next.op = "aten::add";
      for (const auto& [seq, index] : std::vector<std::pair<uint64_t, uint32_t>>{{1, 0}, {0, 0}, {7, 0}, {3, 0}}) {
        TensorData t;
        t.name = "r";
        t.dtype = {kDLFloat, 32, 1};
        t.shape = {32};
        t.ref = TensorRef{seq, seq == 3 ? PEAT_TRACE_SLOT_INPUT : PEAT_TRACE_SLOT_OUTPUT, index};
        next.inputs.push_back(t);
      }
      w.append(encode_record(next, PEAT_TRACE_CODEC_RAW, 1), 3);
      w.append(encode_record(ScalarData{"after", 1, 2}, PEAT_TRACE_CODEC_RAW, 1), 4);
      // Format 1.3: a sound delta against record 0's y, then deltas whose base
      // record (1) was lost and whose base is itself a delta.
      OpData lost_base;
      lost_base.op = "aten::mm";
      TensorData d = first.outputs[0];
      d.base_bytes = std::make_shared<const peat::impl::ByteBuffer>(d.bytes);
      for (std::size_t i = 0; i < d.bytes.size(); i += 4) d.bytes[i] ^= std::byte{0x03};
      for (const TensorRef base : {TensorRef{0, PEAT_TRACE_SLOT_OUTPUT, 0}, TensorRef{1, PEAT_TRACE_SLOT_OUTPUT, 0},
                                   TensorRef{5, PEAT_TRACE_SLOT_INPUT, 0}}) {
        d.base = base;
        lost_base.inputs.push_back(d);
      }
      w.append(encode_record(lost_base, PEAT_TRACE_CODEC_SHUFFLE_ZSTD, 1), 5);
    }  // not closed: as if the writer were killed
    const std::vector<unsigned char> bytes = slurp(file);
    put(out, "lost_references", bytes.data(), bytes.size());
  }
  write("reordered", [&] {
    std::vector<EncodedRecord> v;
    for (int i = 0; i < 4; ++i) v.push_back(encode_record(ScalarData{"loss", 1, 0.5 * i}, PEAT_TRACE_CODEC_RAW, 1));
    return v;
  }(), true);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
    return 2;
  }
  const fs::path root = argv[1];
  RunInfoData info;
  info.framework = "c++ seed";
  info.device = "host";
  info.vendor = "host";
  info.library_version = "0.1.0";
  info.run_name = "seed";
  info.world_size = 2;
  info.rank = 1;
  info.tags = {{"model", "tiny"}, {"k", "v"}};
  const fs::path tmp = root / "tmp";
  fs::create_directories(tmp);
  int n = 0;
  for (peat_trace_codec_t codec : {PEAT_TRACE_CODEC_RAW, PEAT_TRACE_CODEC_SHUFFLE_ZSTD}) {
    const fs::path file = tmp / ("trace" + std::to_string(codec) + ".peat");
    {
      Writer w(file.string(), info);
      for (const RecordData& r : records()) {
        EncodedRecord e = encode_record(r, codec, 3);
        w.append(e);
        // Meta target: selector = kind, u16 split = meta_len, meta, payload.
        const auto* f = reinterpret_cast<const unsigned char*>(e.frame.data());
        const uint32_t meta_len = get_u32(f + 8);
        const uint64_t payload_len = get_u64(f + 16);
        std::vector<unsigned char> seed{static_cast<unsigned char>(e.kind), static_cast<unsigned char>(meta_len),
                                        static_cast<unsigned char>(meta_len >> 8)};
        seed.insert(seed.end(), f + kFrameFixed, f + kFrameFixed + meta_len);
        // encode_record keeps the payload apart from the frame's head, as one
        // part per stored tensor; the file holds the parts back to back.
        if (e.payload.empty()) {
          const auto* payload = f + kFrameFixed + pad8(meta_len);
          seed.insert(seed.end(), payload, payload + payload_len);
        } else {
          for (const peat::impl::ByteBuffer& part : e.payload) {
            const auto* p = reinterpret_cast<const unsigned char*>(part.data());
            seed.insert(seed.end(), p, p + part.size());
          }
          if (seed.size() != 3 + meta_len + payload_len) throw std::runtime_error("seed: payload parts do not add up");
        }
        put(root / "trace_meta", "record" + std::to_string(n++), seed.data(), seed.size());
      }
      w.close();
    }
    const std::vector<unsigned char> bytes = slurp(file);
    put(root / "trace_file", "complete" + std::to_string(codec), bytes.data(), bytes.size());
    put(root / "trace_file", "truncated" + std::to_string(codec), bytes.data(), bytes.size() * 2 / 3);
    const uint64_t header = kHeaderFixed + pad8(get_u32(bytes.data() + 16));
    put(root / "trace_frame", "body" + std::to_string(codec), bytes.data() + header, bytes.size() - header);
    put(root / "trace_frame", "unclosed" + std::to_string(codec), bytes.data() + header,
        bytes.size() - header - kTrailerSize - 64);
    if (codec == PEAT_TRACE_CODEC_RAW) {
      std::vector<unsigned char> seed{16};
      seed.insert(seed.end(), bytes.begin() + kHeaderFixed, bytes.begin() + kHeaderFixed + get_u32(bytes.data() + 16));
      put(root / "trace_meta", "header", seed.data(), seed.size());
    }
  }
  hostile_traces(tmp, root / "trace_file", info);
  fs::remove_all(tmp);

  // Analyzer and injector: structured random inputs (the harnesses read typed
  // fields off the front, so any bytes are a valid input; these vary the
  // leading mode and dtype choices).
  std::mt19937 rng(11);
  for (int i = 0; i < 16; ++i) {
    std::vector<unsigned char> b(64 + 96 * i);
    for (auto& c : b) c = static_cast<unsigned char>(rng());
    b[0] = static_cast<unsigned char>(i);
    put(root / "analyze", "random" + std::to_string(i), b.data(), b.size());
    b[0] = static_cast<unsigned char>(i);
    put(root / "injector", "random" + std::to_string(i), b.data(), b.size());
  }
  return 0;
}
