// Trace format: codec, round trip of every record kind and dtype, filters,
// recovery, and bad input (corruption, truncation, crafted records).
#include <catch2/catch.hpp>

#include <peat/peat.h>

#include "core/error.hpp"
#include "trace/codec.hpp"
#include "trace/format.hpp"
#include "trace/reader.hpp"
#include "trace/record.hpp"
#include "trace/trace_generated.h"
#include "trace/writer.hpp"
#include "trace_test_util.hpp"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <future>
#include <system_error>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace peat::impl::trace;
using peat_test::TempDir;

namespace {

template <typename T>
std::vector<std::byte> as_bytes(const std::vector<T>& v) {
  std::vector<std::byte> out(v.size() * sizeof(T));
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

std::vector<std::byte> roundtrip_codec(peat_trace_codec_t codec, const std::vector<std::byte>& raw, std::size_t es,
                                       std::size_t* encoded_size = nullptr) {
  std::vector<std::byte> enc;
  const std::size_t n = encode(codec, 3, raw.data(), raw.size(), es, enc);
  REQUIRE(n == enc.size());
  REQUIRE(n <= encoded_bound(codec, raw.size()));
  if (encoded_size) *encoded_size = n;
  std::vector<std::byte> dec(raw.size());
  std::vector<std::byte> scratch;
  const char* why = decode(codec, enc.data(), enc.size(), dec.data(), dec.size(), es, scratch);
  REQUIRE(std::string(why) == "");
  return dec;
}

TensorData tensor(const std::string& name, DLDataType dt, std::vector<int64_t> shape, uint32_t seed) {
  TensorData t;
  t.name = name;
  t.dtype = dt;
  t.shape = std::move(shape);
  uint64_t numel = 1;
  for (auto d : t.shape) numel *= static_cast<uint64_t>(d);
  t.bytes = peat_test::pattern_bytes(numel * element_size(dt), seed);
  return t;
}

peat_trace_reader_t* open_ok(const std::string& path) {
  peat_trace_reader_t* r = nullptr;
  const peat_status_t s = peat_trace_open(path.c_str(), nullptr, &r);
  INFO(peat_last_error_message());
  REQUIRE(s == PEAT_STATUS_OK);
  return r;
}

RunInfoData run_info() {
  RunInfoData info;
  info.framework = "unit-test";
  info.device = "host";
  info.vendor = "none";
  info.library_version = "0.1.0";
  info.run_name = "roundtrip";
  info.rank = 2;
  info.world_size = 4;
  info.created_unix_ns = 1234567890123ull;
  info.tags = {{"model", "mlp"}, {"seed", "7"}};
  return info;
}

const DLDataType kDtypes[] = {
    {kDLFloat, 16, 1}, {kDLBfloat, 16, 1}, {kDLFloat, 32, 1}, {kDLFloat, 64, 1}, {kDLInt, 8, 1},
    {kDLInt, 16, 1},   {kDLInt, 32, 1},    {kDLInt, 64, 1},   {kDLUInt, 8, 1},  {kDLUInt, 1, 1} /* 1-bit (bool-like), stored one per byte */,
    {kDLFloat, 32, 4} /* vector lanes */};

}  // namespace

TEST_CASE("trace codec: byte shuffle matches the plain definition", "[trace][codec]") {
  for (std::size_t es : {1u, 2u, 3u, 4u, 8u}) {
    for (std::size_t bytes : {0u, 1u, 7u, 64u, 4099u}) {
      const auto in = peat_test::pattern_bytes(bytes, static_cast<uint32_t>(es * 1000 + bytes));
      peat::impl::ByteBuffer out(bytes), back(bytes);
      shuffle_bytes(in.data(), out.data(), bytes, es);
      const std::size_t n = bytes / es;
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t b = 0; b < es; ++b) REQUIRE(out[b * n + i] == in[i * es + b]);
      for (std::size_t k = n * es; k < bytes; ++k) REQUIRE(out[k] == in[k]);
      unshuffle_bytes(out.data(), back.data(), bytes, es);
      REQUIRE(back == in);
    }
  }
}

TEST_CASE("trace codec: bit-exact on random, constant, denormal and ReLU-like data", "[trace][codec]") {
  std::mt19937 rng(42);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  const std::size_t n = 50000;
  std::vector<float> random(n), constant(n, 0.125f), denormal(n), relu(n);
  for (auto& x : random) x = normal(rng);
  for (std::size_t i = 0; i < n; ++i) {
    uint32_t bits = static_cast<uint32_t>(rng()) & 0x007FFFFFu;  // exponent 0: subnormal
    if (i % 2) bits |= 0x80000000u;
    std::memcpy(&denormal[i], &bits, 4);
    const float v = normal(rng);
    relu[i] = v > 0 ? v : 0.0f;
  }
  std::vector<double> random64(n / 2);
  for (auto& x : random64) x = normal(rng);
  std::vector<uint16_t> half(n);
  for (auto& h : half) h = static_cast<uint16_t>(rng());

  for (peat_trace_codec_t codec : {PEAT_TRACE_CODEC_RAW, PEAT_TRACE_CODEC_SHUFFLE_ZSTD}) {
    std::size_t sizes[4] = {};
    const std::vector<std::byte> sets[4] = {as_bytes(random), as_bytes(constant), as_bytes(denormal), as_bytes(relu)};
    for (int s = 0; s < 4; ++s) REQUIRE(roundtrip_codec(codec, sets[s], 4, &sizes[s]) == sets[s]);
    REQUIRE(roundtrip_codec(codec, as_bytes(random64), 8) == as_bytes(random64));
    REQUIRE(roundtrip_codec(codec, as_bytes(half), 2) == as_bytes(half));
    if (codec == PEAT_TRACE_CODEC_SHUFFLE_ZSTD) {
      const double raw = n * 4.0;
      CHECK(sizes[1] < raw * 0.01);     // constant: almost nothing
      CHECK(sizes[0] < raw * 0.95);     // N(0, 0.02) floats: the exponent bytes compress
      CHECK(sizes[3] < sizes[0] * 0.8); // half zeros compress further
    } else {
      CHECK(sizes[0] == n * 4);
    }
  }
}

TEST_CASE("trace codec: damaged compressed data is reported, not trusted", "[trace][codec]") {
  std::vector<float> v(4096);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::sin(static_cast<float>(i));
  const auto raw = as_bytes(v);
  std::vector<std::byte> enc;
  encode(PEAT_TRACE_CODEC_SHUFFLE_ZSTD, 1, raw.data(), raw.size(), 4, enc);
  std::vector<std::byte> dst(raw.size()), scratch;
  // truncated stream
  CHECK(std::string(decode(PEAT_TRACE_CODEC_SHUFFLE_ZSTD, enc.data(), enc.size() / 2, dst.data(), dst.size(), 4,
                           scratch)) != "");
  // declared size larger than the stream's content
  std::vector<std::byte> big(raw.size() * 2);
  CHECK(std::string(decode(PEAT_TRACE_CODEC_SHUFFLE_ZSTD, enc.data(), enc.size(), big.data(), big.size(), 4,
                           scratch)) != "");
  // declared size smaller than the stream's content: never writes past dst
  std::vector<std::byte> small(raw.size() / 2);
  CHECK(std::string(decode(PEAT_TRACE_CODEC_SHUFFLE_ZSTD, enc.data(), enc.size(), small.data(), small.size(), 4,
                           scratch)) != "");
  // raw codec with a size mismatch
  CHECK(std::string(decode(PEAT_TRACE_CODEC_RAW, raw.data(), raw.size(), small.data(), small.size(), 4, scratch)) !=
        "");
  // unknown codec
  CHECK_THROWS(encode(7, 1, raw.data(), raw.size(), 4, enc));
}

TEST_CASE("trace: round trip of every record kind and dtype is bit-exact", "[trace]") {
  for (peat_trace_codec_t codec : {PEAT_TRACE_CODEC_RAW, PEAT_TRACE_CODEC_SHUFFLE_ZSTD}) {
    TempDir dir;
    const std::string path = dir.file("rt.peat");
    std::vector<RecordData> records;
    uint32_t seed = 1;
    for (const DLDataType& dt : kDtypes) {
      OpData op;
      op.op = "aten::mm";
      op.phase = PEAT_PHASE_BACKWARD;
      op.module_path = "encoder.layer1.fc";
      op.step = 5;
      op.call_index = seed;
      op.attrs.push_back(AttrData{"transpose_a", PEAT_ATTR_INT, -3, 0, "", {}});
      op.attrs.push_back(AttrData{"alpha", PEAT_ATTR_FLOAT, 0, 0.5, "", {}});
      op.attrs.push_back(AttrData{"algo", PEAT_ATTR_STRING, 0, 0, "tensor-core", {}});
      op.attrs.push_back(AttrData{"stride", PEAT_ATTR_INT_ARRAY, 0, 0, "", {2, 2, -1}});
      op.attrs.push_back(AttrData{"empty", PEAT_ATTR_INT_ARRAY, 0, 0, "", {}});
      op.inputs.push_back(tensor("a", dt, {7, 13}, seed++));
      op.inputs.push_back(tensor("scalar", dt, {}, seed++));  // 0-d
      op.inputs.push_back(tensor("", dt, {3, 0, 2}, seed++)); // empty
      op.outputs.push_back(tensor("c", dt, {2, 3, 5, 7}, seed++));
      records.emplace_back(std::move(op));
    }
    CheckpointData cp;
    cp.name = "epoch-1";
    cp.step = 9;
    cp.tensors.push_back(tensor("fc.weight", DLDataType{kDLFloat, 32, 1}, {64, 32}, 99));
    cp.tensors.push_back(tensor("fc.bias", DLDataType{kDLBfloat, 16, 1}, {64}, 100));
    records.emplace_back(cp);
    records.emplace_back(ScalarData{"loss", 9, 2.5e-3});
    records.emplace_back(ScalarData{"lr", 9, -std::numeric_limits<double>::infinity()});
    records.emplace_back(StepData{10, 777});
    {
      Writer w(path, run_info());
      for (const auto& r : records) w.append(encode_record(r, codec, 3));
      w.close();
    }
    peat_trace_reader_t* r = open_ok(path);
    peat_trace_run_info_t info{};
    info.struct_size = sizeof info;
    REQUIRE(peat_trace_run_info(r, &info) == PEAT_STATUS_OK);
    CHECK(info.format_major == PEAT_TRACE_FORMAT_MAJOR);
    CHECK(std::string(info.framework) == "unit-test");
    CHECK(std::string(info.device) == "host");
    CHECK(std::string(info.vendor) == "none");
    CHECK(std::string(info.library_version) == "0.1.0");
    CHECK(std::string(info.run_name) == "roundtrip");
    CHECK(info.rank == 2);
    CHECK(info.world_size == 4);
    CHECK(info.created_unix_ns == 1234567890123ull);
    REQUIRE(info.n_tags == 2);
    const char *k = nullptr, *v = nullptr;
    REQUIRE(peat_trace_tag(r, 1, &k, &v) == PEAT_STATUS_OK);
    CHECK(std::string(k) == "seed");
    CHECK(std::string(v) == "7");
    CHECK(peat_trace_tag(r, 2, &k, &v) == PEAT_STATUS_NOT_FOUND);

    uint64_t count = 0;
    REQUIRE(peat_trace_record_count(r, &count) == PEAT_STATUS_OK);
    REQUIRE(count == records.size());
    auto check_tensor_eq = [&](uint64_t rec, peat_trace_slot_t slot, uint64_t t, const TensorData& want) {
      peat_trace_tensor_info_t ti{};
      ti.struct_size = sizeof ti;
      REQUIRE(peat_trace_tensor_info(r, rec, slot, t, &ti) == PEAT_STATUS_OK);
      CHECK(std::string(ti.name) == want.name);
      CHECK(ti.dtype.code == want.dtype.code);
      CHECK(ti.dtype.bits == want.dtype.bits);
      CHECK(ti.dtype.lanes == want.dtype.lanes);
      REQUIRE(ti.ndim == static_cast<int32_t>(want.shape.size()));
      for (int d = 0; d < ti.ndim; ++d) CHECK(ti.shape[d] == want.shape[d]);
      CHECK(ti.raw_bytes == want.bytes.size());
      CHECK(ti.codec == (want.bytes.empty() && codec == PEAT_TRACE_CODEC_SHUFFLE_ZSTD ? codec : codec));
      peat::impl::ByteBuffer got(want.bytes.size());
      REQUIRE(peat_trace_load_tensor(r, rec, slot, t, got.data(), got.size()) == PEAT_STATUS_OK);
      CHECK(got == want.bytes);
      DLManagedTensor* owned = nullptr;
      REQUIRE(peat_trace_load_tensor_alloc(r, rec, slot, t, &owned) == PEAT_STATUS_OK);
      CHECK(owned->dl_tensor.ndim == ti.ndim);
      CHECK(owned->dl_tensor.device.device_type == kDLCPU);
      if (!want.bytes.empty()) CHECK(std::memcmp(owned->dl_tensor.data, want.bytes.data(), want.bytes.size()) == 0);
      peat_trace_tensor_free(owned);
      if (!want.bytes.empty()) {
        CHECK(peat_trace_load_tensor(r, rec, slot, t, got.data(), got.size() - 1) == PEAT_STATUS_BUFFER_TOO_SMALL);
      }
    };
    for (uint64_t i = 0; i < count; ++i) {
      peat_trace_record_info_t ri{};
      ri.struct_size = sizeof ri;
      REQUIRE(peat_trace_record_info(r, i, &ri) == PEAT_STATUS_OK);
      if (const auto* op = std::get_if<OpData>(&records[i])) {
        REQUIRE(ri.kind == PEAT_TRACE_KIND_OP);
        CHECK(std::string(ri.name) == op->op);
        CHECK(ri.phase == op->phase);
        CHECK(std::string(ri.module_path) == op->module_path);
        CHECK(ri.step == op->step);
        CHECK(ri.call_index == op->call_index);
        REQUIRE(ri.n_attrs == op->attrs.size());
        for (uint64_t a = 0; a < ri.n_attrs; ++a) {
          peat_attr_t at{};
          REQUIRE(peat_trace_attr(r, i, a, &at) == PEAT_STATUS_OK);
          const AttrData& want = op->attrs[a];
          CHECK(std::string(at.key) == want.key);
          REQUIRE(at.type == want.type);
          if (want.type == PEAT_ATTR_INT) CHECK(at.i == want.i);
          if (want.type == PEAT_ATTR_FLOAT) CHECK(at.f == want.f);
          if (want.type == PEAT_ATTR_STRING) CHECK(std::string(at.s) == want.s);
          if (want.type == PEAT_ATTR_INT_ARRAY) {
            REQUIRE(at.n_ints == want.ints.size());
            for (uint64_t j = 0; j < at.n_ints; ++j) CHECK(at.ints[j] == want.ints[j]);
          }
        }
        peat_attr_t at{};
        CHECK(peat_trace_attr(r, i, ri.n_attrs, &at) == PEAT_STATUS_NOT_FOUND);
        REQUIRE(ri.n_inputs == op->inputs.size());
        REQUIRE(ri.n_outputs == op->outputs.size());
        for (uint64_t t = 0; t < ri.n_inputs; ++t) check_tensor_eq(i, PEAT_TRACE_SLOT_INPUT, t, op->inputs[t]);
        for (uint64_t t = 0; t < ri.n_outputs; ++t) check_tensor_eq(i, PEAT_TRACE_SLOT_OUTPUT, t, op->outputs[t]);
        uint64_t n = 0;
        CHECK(peat_trace_tensor_count(r, i, PEAT_TRACE_SLOT_CHECKPOINT, &n) == PEAT_STATUS_INVALID_ARGUMENT);
      } else if (const auto* c = std::get_if<CheckpointData>(&records[i])) {
        REQUIRE(ri.kind == PEAT_TRACE_KIND_CHECKPOINT);
        CHECK(std::string(ri.name) == c->name);
        CHECK(ri.step == c->step);
        REQUIRE(ri.n_tensors == c->tensors.size());
        for (uint64_t t = 0; t < ri.n_tensors; ++t) check_tensor_eq(i, PEAT_TRACE_SLOT_CHECKPOINT, t, c->tensors[t]);
      } else if (const auto* s = std::get_if<ScalarData>(&records[i])) {
        REQUIRE(ri.kind == PEAT_TRACE_KIND_SCALAR);
        CHECK(std::string(ri.name) == s->name);
        CHECK(ri.step == s->step);
        CHECK(std::memcmp(&ri.value, &s->value, sizeof(double)) == 0);
      } else {
        const auto& st = std::get<StepData>(records[i]);
        REQUIRE(ri.kind == PEAT_TRACE_KIND_STEP);
        CHECK(ri.step == st.step);
        CHECK(ri.unix_ns == st.unix_ns);
      }
    }
    peat_trace_record_info_t ri{};
    ri.struct_size = sizeof ri;
    CHECK(peat_trace_record_info(r, count, &ri) == PEAT_STATUS_NOT_FOUND);
    uint64_t checked = 0;
    REQUIRE(peat_trace_verify(r, &checked) == PEAT_STATUS_OK);
    CHECK(checked == std::size(kDtypes) * 4 + 2);
    peat_trace_close(r);
  }
}

TEST_CASE("trace: filters by kind, op glob, step range and phase", "[trace]") {
  TempDir dir;
  const std::string path = dir.file("filter.peat");
  {
    Writer w(path, run_info());
    for (int step = 0; step < 4; ++step) {
      w.append(encode_record(StepData{step, 0}, PEAT_TRACE_CODEC_SHUFFLE_ZSTD, 1));
      for (const char* name : {"aten::mm", "aten::conv2d", "custom::gemm"}) {
        OpData op;
        op.op = name;
        op.step = step;
        op.phase = step % 2 ? PEAT_PHASE_BACKWARD : PEAT_PHASE_FORWARD;
        w.append(encode_record(op, PEAT_TRACE_CODEC_SHUFFLE_ZSTD, 1));
      }
      w.append(encode_record(ScalarData{"loss", step, 1.0 / (step + 1)}, PEAT_TRACE_CODEC_SHUFFLE_ZSTD, 1));
    }
    w.close();
  }
  peat_trace_reader_t* r = open_ok(path);
  auto collect = [&](const peat_trace_filter_t& f) {
    std::vector<uint64_t> out;
    for (uint64_t i = 0; peat_trace_next(r, &f, i, &i) == PEAT_STATUS_OK; ++i) out.push_back(i);
    return out;
  };
  peat_trace_filter_t f;
  peat_trace_filter_init(&f);
  CHECK(collect(f).size() == 20);
  f.op_glob = "aten::*";
  CHECK(collect(f).size() == 8);
  f.step_min = 1;
  f.step_max = 2;
  CHECK(collect(f) == std::vector<uint64_t>{6, 7, 11, 12});
  f.phase = PEAT_PHASE_BACKWARD;
  CHECK(collect(f) == std::vector<uint64_t>{6, 7});
  peat_trace_filter_init(&f);
  f.kinds = 1u << PEAT_TRACE_KIND_SCALAR;
  CHECK(collect(f) == std::vector<uint64_t>{4, 9, 14, 19});
  f.kinds = (1u << PEAT_TRACE_KIND_STEP) | (1u << PEAT_TRACE_KIND_SCALAR);
  f.step_min = 3;
  CHECK(collect(f) == std::vector<uint64_t>{15, 19});
  f.op_glob = "loss";  // step markers have no name and never match a glob
  CHECK(collect(f) == std::vector<uint64_t>{19});
  peat_trace_filter_init(&f);
  f.op_glob = "*conv?d";
  CHECK(collect(f) == std::vector<uint64_t>{2, 7, 12, 17});
  // random access and misuse
  uint64_t at = 0;
  CHECK(peat_trace_next(r, nullptr, 18, &at) == PEAT_STATUS_OK);
  CHECK(at == 18);
  CHECK(peat_trace_next(r, nullptr, 20, &at) == PEAT_STATUS_NOT_FOUND);
  f.kinds = 1u << 9;
  CHECK(peat_trace_next(r, &f, 0, &at) == PEAT_STATUS_INVALID_ARGUMENT);
  peat_trace_filter_init(&f);
  f.phase = 7;
  CHECK(peat_trace_next(r, &f, 0, &at) == PEAT_STATUS_INVALID_ARGUMENT);
  peat_trace_close(r);
}

namespace {

// A small real trace; returns the byte offset where each record ends.
std::vector<uint64_t> write_small_trace(const std::string& path) {
  std::vector<uint64_t> ends;
  Writer w(path, run_info());
  OpData op;
  op.op = "aten::addmm";
  op.attrs.push_back(AttrData{"beta", PEAT_ATTR_FLOAT, 0, 1.0, "", {}});
  op.inputs.push_back(tensor("x", DLDataType{kDLFloat, 32, 1}, {8, 8}, 5));
  op.outputs.push_back(tensor("y", DLDataType{kDLFloat, 16, 1}, {8, 4}, 6));
  w.append(encode_record(op, PEAT_TRACE_CODEC_SHUFFLE_ZSTD, 1));
  ends.push_back(w.bytes());
  op.inputs[0] = tensor("x", DLDataType{kDLFloat, 32, 1}, {4, 4}, 7);
  w.append(encode_record(op, PEAT_TRACE_CODEC_RAW, 1));
  ends.push_back(w.bytes());
  CheckpointData cp{"ckpt", 1, {tensor("w", DLDataType{kDLBfloat, 16, 1}, {16}, 8)}};
  w.append(encode_record(cp, PEAT_TRACE_CODEC_SHUFFLE_ZSTD, 1));
  ends.push_back(w.bytes());
  w.append(encode_record(ScalarData{"loss", 1, 0.25}, PEAT_TRACE_CODEC_SHUFFLE_ZSTD, 1));
  ends.push_back(w.bytes());
  w.append(encode_record(StepData{2, 5}, PEAT_TRACE_CODEC_SHUFFLE_ZSTD, 1));
  ends.push_back(w.bytes());
  w.close();
  return ends;
}

// Loads every tensor of a reader into one byte string (with record/slot framing).
std::vector<std::byte> all_content(peat_trace_reader_t* r, peat_status_t* status) {
  std::vector<std::byte> all;
  uint64_t count = 0;
  peat_trace_record_count(r, &count);
  *status = PEAT_STATUS_OK;
  for (uint64_t i = 0; i < count; ++i) {
    peat_trace_record_info_t ri{};
    ri.struct_size = sizeof ri;
    peat_trace_record_info(r, i, &ri);
    const std::string name = ri.name;
    for (char c : name) all.push_back(static_cast<std::byte>(c));
    all.push_back(static_cast<std::byte>(ri.kind));
    int64_t meta[3] = {ri.step, static_cast<int64_t>(ri.call_index), static_cast<int64_t>(ri.n_attrs)};
    const auto* mb = reinterpret_cast<const std::byte*>(meta);
    all.insert(all.end(), mb, mb + sizeof meta);
    std::memcpy(meta, &ri.value, 8);
    all.insert(all.end(), mb, mb + 8);
    for (peat_trace_slot_t slot : {PEAT_TRACE_SLOT_INPUT, PEAT_TRACE_SLOT_OUTPUT, PEAT_TRACE_SLOT_CHECKPOINT}) {
      uint64_t n = 0;
      if (peat_trace_tensor_count(r, i, slot, &n) != PEAT_STATUS_OK) continue;
      for (uint64_t t = 0; t < n; ++t) {
        DLManagedTensor* m = nullptr;
        const peat_status_t s = peat_trace_load_tensor_alloc(r, i, slot, t, &m);
        if (s != PEAT_STATUS_OK) {
          *status = s;
          return all;
        }
        peat_trace_tensor_info_t ti{};
        ti.struct_size = sizeof ti;
        peat_trace_tensor_info(r, i, slot, t, &ti);
        const auto* p = static_cast<const std::byte*>(m->dl_tensor.data);
        all.insert(all.end(), p, p + ti.raw_bytes);
        peat_trace_tensor_free(m);
      }
    }
  }
  return all;
}

}  // namespace

TEST_CASE("trace: a file without footer needs recover, which reads every complete record", "[trace]") {
  TempDir dir;
  const std::string path = dir.file("t.peat");
  const std::vector<uint64_t> ends = write_small_trace(path);
  const auto bytes = peat_test::read_file(path);
  const uint64_t header_end = kHeaderFixed + pad8(peat::impl::trace::get_u32(bytes.data() + 16));
  const std::string cut = dir.file("cut.peat");
  // every truncation length from the header's end to the full file
  for (uint64_t len = header_end; len <= bytes.size(); ++len) {
    peat_test::write_file(cut, std::vector<unsigned char>(bytes.begin(), bytes.begin() + static_cast<long>(len)));
    peat_trace_reader_t* r = nullptr;
    const peat_status_t open_status = peat_trace_open(cut.c_str(), nullptr, &r);
    if (len == bytes.size()) {
      REQUIRE(open_status == PEAT_STATUS_OK);
      peat_trace_close(r);
    } else {
      REQUIRE(open_status == PEAT_STATUS_CORRUPT_DATA);
      REQUIRE(std::string(peat_last_error_message()).find(cut) != std::string::npos);
    }
    peat_trace_recovery_t rec{};
    rec.struct_size = sizeof rec;
    REQUIRE(peat_trace_recover(cut.c_str(), nullptr, &r, &rec) == PEAT_STATUS_OK);
    uint64_t expect = 0;
    while (expect < ends.size() && ends[expect] <= len) ++expect;
    REQUIRE(rec.records == expect);
    REQUIRE(rec.valid_bytes == (len == bytes.size() ? len : expect ? ends[expect - 1] : header_end));
    REQUIRE(rec.file_bytes == len);
    REQUIRE(rec.complete == (len == bytes.size() ? 1 : 0));
    if (len == bytes.size()) REQUIRE(std::string(rec.stop_reason) == "");
    else if (len == rec.valid_bytes) REQUIRE(std::string(rec.stop_reason).find("footer") != std::string::npos);
    else REQUIRE(std::string(rec.stop_reason).find("at byte " + std::to_string(rec.valid_bytes)) != std::string::npos);
    uint64_t tensors = 0;
    REQUIRE(peat_trace_verify(r, &tensors) == PEAT_STATUS_OK);
    peat_trace_close(r);
  }
  // truncated inside the header: a clean error from both
  for (uint64_t len : {uint64_t{0}, uint64_t{5}, uint64_t{31}, header_end - 1}) {
    peat_test::write_file(cut, std::vector<unsigned char>(bytes.begin(), bytes.begin() + static_cast<long>(len)));
    peat_trace_reader_t* r = nullptr;
    CHECK(peat_trace_open(cut.c_str(), nullptr, &r) == PEAT_STATUS_CORRUPT_DATA);
    CHECK(peat_trace_recover(cut.c_str(), nullptr, &r, nullptr) == PEAT_STATUS_CORRUPT_DATA);
  }
}

TEST_CASE("trace: a flipped byte anywhere gives a clean error or identical content", "[trace][corruption]") {
  TempDir dir;
  const std::string path = dir.file("t.peat");
  write_small_trace(path);
  const auto bytes = peat_test::read_file(path);
  peat_trace_reader_t* r = open_ok(path);
  peat_status_t st;
  const std::vector<std::byte> want = all_content(r, &st);
  REQUIRE(st == PEAT_STATUS_OK);
  peat_trace_close(r);

  const std::string bad = dir.file("bad.peat");
  int open_errors = 0, load_errors = 0, harmless = 0;
  for (std::size_t pos = 0; pos < bytes.size(); ++pos) {
    for (unsigned char mask : {0x01, 0x80}) {
      auto copy = bytes;
      copy[pos] ^= mask;
      peat_test::write_file(bad, copy);
      INFO("byte " << pos << " mask " << int(mask));
      peat_trace_reader_t* rd = nullptr;
      const peat_status_t s = peat_trace_open(bad.c_str(), nullptr, &rd);
      if (s != PEAT_STATUS_OK) {
        REQUIRE((s == PEAT_STATUS_CORRUPT_DATA || s == PEAT_STATUS_VERSION_MISMATCH));
        REQUIRE(std::string(peat_last_error_message()).find("bad.peat") != std::string::npos);
        ++open_errors;
        // recover copes too: never crashes, returns a prefix of sound records
        peat_trace_reader_t* rr = nullptr;
        const peat_status_t rs = peat_trace_recover(bad.c_str(), nullptr, &rr, nullptr);
        REQUIRE((rs == PEAT_STATUS_OK || rs == PEAT_STATUS_CORRUPT_DATA || rs == PEAT_STATUS_VERSION_MISMATCH));
        if (rs == PEAT_STATUS_OK) {
          peat_status_t cs;
          all_content(rr, &cs);
          REQUIRE((cs == PEAT_STATUS_OK || cs == PEAT_STATUS_CORRUPT_DATA));
          peat_trace_close(rr);
        }
        continue;
      }
      peat_status_t cs;
      const auto got = all_content(rd, &cs);
      if (cs != PEAT_STATUS_OK) {
        REQUIRE(cs == PEAT_STATUS_CORRUPT_DATA);
        REQUIRE(std::string(peat_last_error_message()).find("record") != std::string::npos);
        REQUIRE(peat_trace_verify(rd, nullptr) == PEAT_STATUS_CORRUPT_DATA);
        ++load_errors;
      } else {
        REQUIRE(got == want);  // an undetected flip (padding) must not change anything
        ++harmless;
      }
      peat_trace_close(rd);
    }
  }
  CHECK(open_errors > 0);
  CHECK(load_errors > 0);
  CHECK(harmless < open_errors);
}

namespace {

std::vector<std::byte> fb_bytes(flatbuffers::FlatBufferBuilder& b) {
  const auto* p = reinterpret_cast<const std::byte*>(b.GetBufferPointer());
  return std::vector<std::byte>(p, p + b.GetSize());
}

// Writes a trace holding one crafted op record whose only input is `t`.
void write_crafted(const std::string& path, std::vector<int64_t> shape, uint64_t raw_bytes, uint64_t encoded,
                   uint64_t payload_offset, uint8_t codec, std::size_t payload_len) {
  flatbuffers::FlatBufferBuilder b;
  const auto sh = b.CreateVector(shape);
  const auto name = b.CreateString("big");
  peat::fb::TensorBuilder tb(b);
  tb.add_name(name);
  tb.add_dtype_code(kDLFloat);
  tb.add_dtype_bits(32);
  tb.add_dtype_lanes(1);
  tb.add_shape(sh);
  tb.add_codec(static_cast<peat::fb::Codec>(codec));
  tb.add_raw_bytes(raw_bytes);
  tb.add_payload_offset(payload_offset);
  tb.add_encoded_bytes(encoded);
  const auto t = tb.Finish();
  const auto inputs = b.CreateVector(std::vector<flatbuffers::Offset<peat::fb::Tensor>>{t});
  const auto op = peat::fb::CreateOpInvocation(b, b.CreateString("op"), 0, 0, 0, 0, 0, inputs);
  b.Finish(peat::fb::CreateRecord(b, peat::fb::Body::OpInvocation, op.Union(), uint64_t{0}));  // seq stamped by the Writer
  const auto meta = fb_bytes(b);
  EncodedRecord rec;
  rec.kind = PEAT_TRACE_KIND_OP;
  rec.frame = frame(PEAT_TRACE_KIND_OP, reinterpret_cast<const uint8_t*>(meta.data()), meta.size(),
                    std::vector<std::byte>(payload_len, std::byte{0x5A}));
  Writer w(path, run_info());
  w.append(rec);
  w.close();
}

peat_status_t open_status(const std::string& path, std::string* message = nullptr) {
  peat_trace_reader_t* r = nullptr;
  const peat_status_t s = peat_trace_open(path.c_str(), nullptr, &r);
  if (message) *message = peat_last_error_message();
  peat_trace_close(r);
  return s;
}

}  // namespace

TEST_CASE("trace: bad input gives a status and a message naming file, record and byte", "[trace][corruption]") {
  TempDir dir;
  const std::string path = dir.file("x.peat");
  std::string msg;

  SECTION("missing file") {
    CHECK(open_status(dir.file("nope.peat"), &msg) == PEAT_STATUS_NOT_FOUND);
    CHECK(msg.find("nope.peat") != std::string::npos);
  }
  SECTION("not a trace, newer major version") {
    write_small_trace(path);
    auto bytes = peat_test::read_file(path);
    auto wrong = bytes;
    wrong[1] = 'X';
    peat_test::write_file(path, wrong);
    CHECK(open_status(path, &msg) == PEAT_STATUS_CORRUPT_DATA);
    CHECK(msg.find("magic") != std::string::npos);
    wrong = bytes;
    wrong[8] = 2;  // major 2, minor 0
    wrong[9] = 0;
    wrong[10] = 0;
    wrong[11] = 0;
    peat_test::write_file(path, wrong);
    CHECK(open_status(path, &msg) == PEAT_STATUS_VERSION_MISMATCH);
    CHECK(msg.find("2.0") != std::string::npos);
  }
  SECTION("footer index pointing outside the file, with a valid checksum") {
    write_small_trace(path);
    auto bytes = peat_test::read_file(path);
    unsigned char* t = bytes.data() + bytes.size() - kTrailerSize;
    put_u64(t + 8, uint64_t{1} << 60);
    put_u64(t + 24, checksum(t, 24));
    peat_test::write_file(path, bytes);
    CHECK(open_status(path, &msg) == PEAT_STATUS_CORRUPT_DATA);
    CHECK(msg.find("out of bounds") != std::string::npos);
    // a record count the file cannot hold
    put_u64(t + 8, bytes.size() - 200);
    put_u64(t + 16, uint64_t{1} << 40);
    put_u64(t + 24, checksum(t, 24));
    peat_test::write_file(path, bytes);
    CHECK(open_status(path, &msg) == PEAT_STATUS_CORRUPT_DATA);
  }
  SECTION("metadata that fails FlatBuffers verification, with a valid frame checksum") {
    std::vector<uint8_t> garbage(64, 0xEE);
    EncodedRecord rec;
    rec.kind = PEAT_TRACE_KIND_OP;
    rec.frame = frame(PEAT_TRACE_KIND_OP, garbage.data(), garbage.size(), {});
    {
      Writer w(path, run_info());
      w.append(encode_record(ScalarData{"loss", 0, 1}, PEAT_TRACE_CODEC_RAW, 1));
      w.append(rec);
      w.close();
    }
    CHECK(open_status(path, &msg) == PEAT_STATUS_CORRUPT_DATA);
    CHECK(msg.find("record 1 at byte") != std::string::npos);
    CHECK(msg.find("FlatBuffers verification") != std::string::npos);
    peat_trace_recovery_t rcv{};
    rcv.struct_size = sizeof rcv;
    peat_trace_reader_t* r = nullptr;
    REQUIRE(peat_trace_recover(path.c_str(), nullptr, &r, &rcv) == PEAT_STATUS_OK);
    CHECK(rcv.records == 1);
    CHECK(rcv.complete == 1);  // the intact frame is skipped and the footer after it read
    CHECK(std::string(rcv.stop_reason).find("1 intact record(s) skipped, the first: record 1") != std::string::npos);
    peat_trace_close(r);
  }
  SECTION("absurd tensor sizes") {
    // shape and raw size disagree
    write_crafted(path, {4, 4}, 1000, 0, 0, 1, 0);
    CHECK(open_status(path, &msg) == PEAT_STATUS_CORRUPT_DATA);
    CHECK(msg.find("declares") != std::string::npos);
    // element count overflow
    write_crafted(path, {int64_t{1} << 40, int64_t{1} << 40}, 0, 0, 0, 1, 0);
    CHECK(open_status(path, &msg) == PEAT_STATUS_CORRUPT_DATA);
    CHECK(msg.find("overflow") != std::string::npos);
    // payload outside the record
    write_crafted(path, {4}, 16, 16, 8, 0, 16);
    CHECK(open_status(path, &msg) == PEAT_STATUS_CORRUPT_DATA);
    CHECK(msg.find("outside") != std::string::npos);
    // compressed payload larger than zstd's bound for the declared size
    write_crafted(path, {1}, 4, 200, 0, 1, 200);
    CHECK(open_status(path, &msg) == PEAT_STATUS_CORRUPT_DATA);
    // a huge tensor (16 TiB declared, 8 bytes of "zstd" data): no zstd frame of
    // 8 bytes decodes to that much, so it is refused before anything is allocated
    write_crafted(path, {int64_t{1} << 42}, uint64_t{1} << 44, 8, 0, 1, 8);
    CHECK(open_status(path, &msg) == PEAT_STATUS_CORRUPT_DATA);
    CHECK(msg.find("more than zstd can decode") != std::string::npos);
    // a large tensor within that bound (256 KiB from 8 bytes): the file opens;
    // loading it is refused by the caller's limit or buffer, never allocated
    write_crafted(path, {int64_t{1} << 16}, uint64_t{1} << 18, 8, 0, 1, 8);
    peat_trace_reader_options_t opts;
    peat_trace_reader_options_init(&opts);
    opts.max_tensor_bytes = 1024;
    peat_trace_reader_t* r = nullptr;
    REQUIRE(peat_trace_open(path.c_str(), &opts, &r) == PEAT_STATUS_OK);
    DLManagedTensor* m = nullptr;
    CHECK(peat_trace_load_tensor_alloc(r, 0, PEAT_TRACE_SLOT_INPUT, 0, &m) == PEAT_STATUS_OUT_OF_MEMORY);
    CHECK(std::string(peat_last_error_message()).find("max_tensor_bytes") != std::string::npos);
    float small[4];
    CHECK(peat_trace_load_tensor(r, 0, PEAT_TRACE_SLOT_INPUT, 0, small, sizeof small) == PEAT_STATUS_BUFFER_TOO_SMALL);
    CHECK(peat_trace_verify(r, nullptr) == PEAT_STATUS_CORRUPT_DATA);  // the 8 bytes are no zstd frame
    peat_trace_close(r);
    // garbage in place of a zstd frame
    write_crafted(path, {64}, 256, 32, 0, 1, 32);
    REQUIRE(peat_trace_open(path.c_str(), nullptr, &r) == PEAT_STATUS_OK);
    std::vector<float> buf(64);
    CHECK(peat_trace_load_tensor(r, 0, PEAT_TRACE_SLOT_INPUT, 0, buf.data(), 256) == PEAT_STATUS_CORRUPT_DATA);
    CHECK(std::string(peat_last_error_message()).find("record 0 at byte") != std::string::npos);
    peat_trace_close(r);
  }
  SECTION("metadata larger than the caller's limit") {
    {
      Writer w(path, run_info());
      OpData op;
      op.op = std::string(5000, 'x');
      w.append(encode_record(op, PEAT_TRACE_CODEC_RAW, 1));
      w.close();
    }
    peat_trace_reader_options_t opts;
    peat_trace_reader_options_init(&opts);
    opts.max_meta_bytes = 4096;
    peat_trace_reader_t* r = nullptr;
    // A sound record above the caller's limit is skipped, not the file refused.
    REQUIRE(peat_trace_open(path.c_str(), &opts, &r) == PEAT_STATUS_OK);
    uint64_t count = 9, skipped = 0;
    const char* why = nullptr;
    CHECK(peat_trace_record_count(r, &count) == PEAT_STATUS_OK);
    CHECK(count == 0);
    CHECK(peat_trace_skipped(r, &skipped, &why) == PEAT_STATUS_OK);
    CHECK(skipped == 1);
    CHECK(std::string(why).find("max_meta_bytes 4096") != std::string::npos);
    peat_trace_close(r);
    opts.max_meta_bytes = 10;
    CHECK(peat_trace_open(path.c_str(), &opts, &r) == PEAT_STATUS_INVALID_ARGUMENT);
    opts.max_meta_bytes = 1 << 20;
    REQUIRE(peat_trace_open(path.c_str(), &opts, &r) == PEAT_STATUS_OK);
    peat_trace_close(r);
  }
}

TEST_CASE("trace: random garbage after a valid header never crashes open or recover", "[trace][corruption]") {
  TempDir dir;
  const std::string path = dir.file("t.peat");
  write_small_trace(path);
  const auto good = peat_test::read_file(path);
  const std::size_t header_end = kHeaderFixed + pad8(get_u32(good.data() + 16));
  std::mt19937 rng(99);
  const std::string bad = dir.file("garbage.peat");
  for (int iter = 0; iter < 300; ++iter) {
    std::vector<unsigned char> bytes(good.begin(), good.begin() + static_cast<long>(header_end));
    const std::size_t tail = rng() % 600;
    for (std::size_t i = 0; i < tail; ++i) bytes.push_back(static_cast<unsigned char>(rng()));
    if (iter % 2 == 0 && bytes.size() >= header_end + kFrameFixed) {
      // a plausible frame header with random lengths (often huge)
      unsigned char* f = bytes.data() + header_end;
      put_u32(f, kRecordMagic);
      put_u16(f + 4, static_cast<uint16_t>(1 + rng() % 4));
      put_u32(f + 8, iter % 4 == 0 ? static_cast<uint32_t>(rng()) : static_cast<uint32_t>(rng() % 600));
      put_u64(f + 16, iter % 3 == 0 ? (static_cast<uint64_t>(rng()) << 32 | rng()) : rng() % 600);
    }
    if (iter % 5 == 0) bytes.insert(bytes.end(), good.end() - kTrailerSize, good.end());  // a stray trailer
    peat_test::write_file(bad, bytes);
    peat_trace_reader_t* r = nullptr;
    const peat_status_t s = peat_trace_open(bad.c_str(), nullptr, &r);
    REQUIRE(s == PEAT_STATUS_CORRUPT_DATA);
    peat_trace_recovery_t rec{};
    rec.struct_size = sizeof rec;
    REQUIRE(peat_trace_recover(bad.c_str(), nullptr, &r, &rec) == PEAT_STATUS_OK);
    REQUIRE(rec.records == 0);
    REQUIRE(rec.valid_bytes == header_end);
    peat_trace_close(r);
  }
}

namespace {

// A record of one raw f32 tensor of 24 MiB (`k` varies its bytes).
EncodedRecord big_record(uint32_t k) {
  OpData op;
  op.op = "aten::mm";
  op.inputs.push_back(tensor("x", DLDataType{kDLFloat, 32, 1}, {6 << 20}, k));
  return encode_record(std::move(op), PEAT_TRACE_CODEC_RAW, 1);
}

// The closed trace at `path` opens, holds `records` records and verifies.
void check_reads_back(const std::string& path, uint64_t records) {
  peat_trace_reader_t* r = open_ok(path);
  uint64_t n = 0;
  REQUIRE(peat_trace_record_count(r, &n) == PEAT_STATUS_OK);
  CHECK(n == records);
  CHECK(peat_trace_verify(r, nullptr) == PEAT_STATUS_OK);
  peat_trace_close(r);
}

}  // namespace

TEST_CASE("trace writer: a trace past 64 MiB (flushed to disk on the way) reads back, and an append after close is "
          "BAD_STATE", "[trace][writer]") {
  TempDir dir;
  const std::string path = dir.file("big.peat");
  Writer w(path, run_info());
  // Four records of 24 MiB each: the periodic fdatasync is asked for before
  // the fourth (72 MiB appended), and close waits for it.
  for (uint32_t k = 0; k < 4; ++k) w.append(big_record(k));
  w.close();
  check_reads_back(path, 4);
  // Past 64 MiB a closed writer must still say it is closed, not try to flush.
  OpData late;
  late.op = "aten::mm";
  EncodedRecord e = encode_record(RecordData{late}, PEAT_TRACE_CODEC_RAW, 1);
  try {
    w.append(e);
    FAIL("append after close did not fail");
  } catch (const peat::impl::Error& err) {
    CHECK(err.status() == PEAT_STATUS_BAD_STATE);
  }
}

TEST_CASE("trace writer: the periodic flush runs beside the appends, and a failed one answers close", "[trace][writer]") {
  TempDir dir;
  const std::string path = dir.file("flush.peat");
  SECTION("appends go on while the flush runs") {
    // The flush blocks until the test releases it (or 30 s pass): appends
    // that waited for it would return only after it ended.
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    std::atomic<int> calls{0};
    std::atomic<bool> finished{false}, timed_out{false};
    {
      Writer w(path, run_info());
      w.set_flush_function([&](int) {
        ++calls;
        timed_out = released.wait_for(std::chrono::seconds(30)) != std::future_status::ready;
        finished = true;
        return 0;
      });
      for (uint32_t k = 0; k < 5; ++k) w.append(big_record(k));  // the flush is asked for before the fourth
      CHECK_FALSE(finished.load());  // the last two appends did not wait for it
      release.set_value();
      w.close();
    }
    CHECK(calls.load() == 1);
    CHECK(finished.load());
    CHECK_FALSE(timed_out.load());
    check_reads_back(path, 5);
  }
  SECTION("a failed flush fails close, naming the record and the reason, and writes no footer") {
    Writer w(path, run_info());
    w.set_flush_function([](int) { return EIO; });
    for (uint32_t k = 0; k < 4; ++k) w.append(big_record(k));
    try {
      w.close();
      FAIL("close after a failed flush did not fail");
    } catch (const peat::impl::Error& err) {
      CHECK(err.status() == PEAT_STATUS_IO_ERROR);
      const std::string what = err.what();
      CHECK(what.find("record 3") != std::string::npos);
      CHECK(what.find("fdatasync") != std::string::npos);
      CHECK(what.find(std::generic_category().message(EIO)) != std::string::npos);
    }
    CHECK_FALSE(w.is_open());
    peat_trace_reader_t* r = nullptr;
    CHECK(peat_trace_open(path.c_str(), nullptr, &r) != PEAT_STATUS_OK);  // no footer (recover reads it)
    if (r != nullptr) peat_trace_close(r);
  }
  SECTION("a file system that cannot flush (EINVAL): no error, and no second flush") {
    std::atomic<int> calls{0};
    Writer w(path, run_info());
    w.set_flush_function([&](int) {
      ++calls;
      return EINVAL;
    });
    for (uint32_t k = 0; k < 7; ++k) w.append(big_record(k));  // 168 MiB: a second flush would be due
    w.close();
    CHECK(calls.load() == 1);
  }
}
