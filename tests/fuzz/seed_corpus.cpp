// Writes the seed corpora of the fuzz targets into DIR/<target>/: real traces
// written by the library's own writer (op records with attributes and tensors
// of several dtypes in both codecs, a checkpoint, a scalar, step markers), cut
// into the shapes each target reads, plus structured inputs for the analyzer
// and injector targets. Deterministic: the same files every build.
#include "trace/format.hpp"
#include "trace/record.hpp"
#include "trace/writer.hpp"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace peat::trace;

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
  return out;
}

std::vector<unsigned char> slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
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
        seed.insert(seed.end(), f + kFrameFixed + pad8(meta_len), f + kFrameFixed + pad8(meta_len) + payload_len);
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
