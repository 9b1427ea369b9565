// Trace format 1.3: XOR-delta tensors. The profiler writes a later version of
// a tensor (same op, slot, dtype and shape) as the XOR against the version it
// stored whole; readers, verify, recovery and copies decode it through its
// base or report a base they cannot follow; older minors may not hold deltas.
#include <catch2/catch.hpp>

#include <peat/peat.h>

#include "profiler/delta_bases.hpp"
#include "trace/codec.hpp"
#include "trace/delta.hpp"
#include "trace/record.hpp"
#include "trace/writer.hpp"
#include "trace_reader_util.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using namespace peat::impl::trace;
using namespace peat_test;

namespace {

// A weight-like tensor (pseudo-random values, `seed`) and its version after
// `steps` small updates (relative 1e-4 each, as an optimizer step makes).
std::vector<float> weight(std::size_t n, int steps, uint32_t seed = 1) {
  std::vector<float> w(n);
  uint32_t h = seed * 2654435761u;
  for (std::size_t i = 0; i < n; ++i) {
    h = h * 1664525u + 1013904223u;
    w[i] = (static_cast<float>(h >> 8) / 8388608.f - 1.f) * 0.05f;
    for (int s = 0; s < steps; ++s) w[i] *= 1.f - 1e-4f * std::cos(static_cast<float>(i * (s + 3)));
  }
  return w;
}

peat::impl::ByteBuffer bytes_of(const std::vector<float>& v) {
  peat::impl::ByteBuffer b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

TensorData tensor(const std::string& name, const std::vector<float>& v) {
  TensorData t;
  t.name = name;
  t.dtype = DLDataType{kDLFloat, 32, 1};
  t.shape = {static_cast<int64_t>(v.size())};
  t.bytes = bytes_of(v);
  return t;
}

TensorData delta(const std::string& name, const std::vector<float>& v, const std::vector<float>& base_values,
                 TensorRef base) {
  TensorData t = tensor(name, v);
  t.base = base;
  t.base_bytes = std::make_shared<const peat::impl::ByteBuffer>(bytes_of(base_values));
  return t;
}

EncodedRecord op_record(std::vector<TensorData> inputs) {
  OpData op;
  op.op = "aten::mm";
  op.inputs = std::move(inputs);
  return encode_record(op, PEAT_TRACE_CODEC_SHUFFLE_ZSTD, 1);
}

RunInfoData run_info() {
  RunInfoData i;
  i.run_name = "deltas";
  return i;
}

}  // namespace

TEST_CASE("trace deltas: the profiler writes later versions of a weight as XOR deltas and reads them back",
          "[trace][profiler]") {
  TempDir dir;
  for (const uint64_t entries : {uint64_t{65536}, uint64_t{0}}) {
    const std::string path = dir.file("d" + std::to_string(entries) + ".peat");
    Session session;
    uint32_t mm = 0;
    REQUIRE(peat_session_intern_op(session.s, "aten::mm", &mm) == PEAT_STATUS_OK);
    peat_profiler_options_t o;
    peat_profiler_options_init(&o);
    o.path = path.c_str();
    o.content_index_entries = entries;
    peat_profiler_t* p = nullptr;
    REQUIRE(peat_profiler_create(session.s, &o, &p) == PEAT_STATUS_OK);
    constexpr std::size_t n = 8192;
    std::vector<std::vector<float>> ws, xs;
    for (int step = 0; step < 3; ++step) {
      ws.push_back(weight(n, step));
      std::vector<float> x(n);  // unrelated from call to call, signs mixed: never worth a delta
      for (std::size_t i = 0; i < n; ++i) x[i] = std::sin(static_cast<float>(i * (7 + step * 13)) + step);
      xs.push_back(std::move(x));
    }
    for (int step = 0; step < 3; ++step) {
      int64_t shape[1] = {static_cast<int64_t>(n)};
      DLTensor tw = view(ws[step].data(), 1, shape), tx = view(xs[step].data(), 1, shape);
      const DLTensor* ins[2] = {&tx, &tw};
      peat_op_record_t rec;
      peat_op_record_init(&rec);
      rec.op = mm;
      rec.inputs = ins;
      rec.n_inputs = 2;
      REQUIRE(peat_profiler_record_op(p, &rec, nullptr, nullptr) == PEAT_STATUS_OK);
    }
    REQUIRE(peat_profiler_close(p) == PEAT_STATUS_OK);
    peat_profiler_destroy(p);

    peat_trace_reader_t* r = open_ok(path);
    for (uint64_t step = 0; step < 3; ++step) {
      CHECK(peat_test::same_bytes(load(r, step, PEAT_TRACE_SLOT_INPUT, 1), bytes_of(ws[step])));
      CHECK(peat_test::same_bytes(load(r, step, PEAT_TRACE_SLOT_INPUT, 0), bytes_of(xs[step])));
      CHECK(tinfo(r, step, PEAT_TRACE_SLOT_INPUT, 0).codec == PEAT_TRACE_CODEC_SHUFFLE_ZSTD);
      const peat_trace_tensor_info_t w = tinfo(r, step, PEAT_TRACE_SLOT_INPUT, 1);
      // Versions 1 and 2 are deltas against version 0 (a base is stored whole),
      // unless content addressing (and with it deltas) is off.
      CHECK(w.codec == (step > 0 && entries > 0 ? PEAT_TRACE_CODEC_XOR_DELTA_SHUFFLE_ZSTD : PEAT_TRACE_CODEC_SHUFFLE_ZSTD));
      CHECK(w.is_reference == 0);
      if (step > 0 && entries > 0) CHECK(w.encoded_bytes * 5 < tinfo(r, 0, PEAT_TRACE_SLOT_INPUT, 1).encoded_bytes * 3);
    }
    uint64_t checked = 0;
    CHECK(peat_trace_verify(r, &checked) == PEAT_STATUS_OK);
    CHECK(checked == 6);
    peat_trace_close(r);
  }
}

TEST_CASE("trace deltas: the XOR test keeps deltas to versions of one tensor", "[trace]") {
  const std::vector<float> a = weight(4096, 0), b = weight(4096, 1);
  std::vector<float> relu(4096), other(4096);
  for (std::size_t i = 0; i < relu.size(); ++i) {
    relu[i] = i % 2 ? 0.f : std::fabs(a[i]);
    other[i] = i % 3 ? 0.f : std::fabs(b[i]) + 1.f;
  }
  const auto pays = [](const std::vector<float>& x, const std::vector<float>& base) {
    peat::impl::ByteBuffer out;
    std::size_t n = 0;
    return encode_delta(1, bytes_of(x).data(), bytes_of(base).data(), x.size() * 4, 4, out, &n);
  };
  CHECK(pays(b, a));
  CHECK_FALSE(pays(relu, other));  // the XOR spoils the zeros
  CHECK_FALSE(pays(weight(4096, 0, 2), a));  // another tensor of the same distribution
}

TEST_CASE("trace deltas: the first part is judged before the whole, and a delta is encoded within the buffer",
          "[trace]") {
  const std::size_t n = 3 * kDeltaProbeBytes / 4;  // three probes' worth of floats
  const std::vector<float> a = weight(n, 0), b = weight(n, 1), unrelated = weight(n, 0, 2);
  const std::size_t probe = kDeltaProbeBytes / 4;
  std::vector<float> head_unrelated = b, tail_unrelated = b;
  std::copy(unrelated.begin(), unrelated.begin() + probe, head_unrelated.begin());
  std::copy(unrelated.begin() + probe, unrelated.end(), tail_unrelated.begin() + probe);
  const auto attempt = [&](const std::vector<float>& x, peat::impl::ByteBuffer& buffer) {
    std::size_t enc = 0;
    buffer = bytes_of(x);
    const bool pays = encode_delta(1, buffer.data(), bytes_of(a).data(), buffer.size(), 4, buffer, &enc);
    CHECK(enc == (pays ? buffer.size() : 0));
    return pays;
  };
  const auto whole_rule = [&](const std::vector<float>& x) {
    peat::impl::ByteBuffer xored = bytes_of(x);
    xor_into(xored.data(), bytes_of(a).data(), xored.size());
    return delta_pays(xored.data(), bytes_of(x).data(), xored.size(), 4);
  };
  peat::impl::ByteBuffer buffer;
  // The rule over the whole would take the first (two thirds of it are a
  // version); the probe ends the attempt on its first part.
  CHECK(whole_rule(head_unrelated));
  CHECK_FALSE(attempt(head_unrelated, buffer));
  CHECK(buffer == bytes_of(head_unrelated));  // untouched
  // A first part that passes: the whole decides.
  CHECK(attempt(tail_unrelated, buffer) == whole_rule(tail_unrelated));
  CHECK_FALSE(attempt(unrelated, buffer));
  CHECK(buffer == bytes_of(unrelated));
  REQUIRE(attempt(b, buffer));
  // What it holds now is the shuffled zstd of b XOR a.
  peat::impl::ByteBuffer x = bytes_of(b);
  xor_into(x.data(), bytes_of(a).data(), x.size());
  std::vector<std::byte> plain;
  encode(PEAT_TRACE_CODEC_SHUFFLE_ZSTD, 1, x.data(), x.size(), 4, plain);
  CHECK(peat_test::same_bytes(buffer, plain));
}

TEST_CASE("trace deltas: a base the reader cannot follow is reported, not followed", "[trace]") {
  TempDir dir;
  const std::string path = dir.file("bad.peat");
  const std::vector<float> w0 = weight(2048, 0), w1 = weight(2048, 1), w2 = weight(2048, 2);
  std::string msg;
  peat_status_t st = PEAT_STATUS_OK;
  const auto check_fails = [&](const std::string& why) {
    peat_trace_reader_t* r = open_ok(path);
    load(r, 1, PEAT_TRACE_SLOT_INPUT, 0, &st, &msg);
    CHECK(st == PEAT_STATUS_CORRUPT_DATA);
    INFO(msg);
    CHECK(msg.find("inputs[0] is a delta against") != std::string::npos);
    CHECK(msg.find(why) != std::string::npos);
    CHECK(peat_trace_verify(r, nullptr) == PEAT_STATUS_CORRUPT_DATA);
    peat_trace_close(r);
  };
  SECTION("its record is not in the file (numbers 1-4 were lost)") {
    Writer w(path, run_info());
    w.append(op_record({tensor("w", w0)}), 0);
    w.append(op_record({delta("w", w1, w0, TensorRef{3, PEAT_TRACE_SLOT_INPUT, 0})}), 5);
    w.close();
    check_fails("not followed");
  }
  SECTION("its base is itself a delta") {
    Writer w(path, run_info());
    w.append(op_record({tensor("w", w0), delta("v", w1, w0, TensorRef{0, PEAT_TRACE_SLOT_INPUT, 0})}), 0);
    w.append(op_record({delta("w", w2, w1, TensorRef{0, PEAT_TRACE_SLOT_INPUT, 1})}), 1);
    w.close();
    check_fails("itself a delta");
    peat_trace_reader_t* r = open_ok(path);
    CHECK(peat_test::same_bytes(load(r, 0, PEAT_TRACE_SLOT_INPUT, 1), bytes_of(w1)));  // a delta within its record reads
    peat_trace_close(r);
  }
  SECTION("in a file of format 1.2, which has no deltas") {
    {
      Writer w(path, run_info());
      w.append(op_record({tensor("w", w0), delta("v", w1, w0, TensorRef{0, PEAT_TRACE_SLOT_INPUT, 0})}), 0);
      w.close();
    }
    set_minor(path, 2);
    peat_trace_reader_t* r = nullptr;
    CHECK(peat_trace_open(path.c_str(), nullptr, &r) == PEAT_STATUS_CORRUPT_DATA);
    CHECK(std::string(peat_last_error_message()).find("XOR-delta tensor (codec 2, format 1.3) in a file of an older "
                                                      "format") != std::string::npos);
  }
}

TEST_CASE("trace deltas: recovery and copies keep a delta only with its base", "[trace]") {
  TempDir dir;
  const std::string path = dir.file("cut.peat"), copy = dir.file("copy.peat");
  const std::vector<float> w0 = weight(2048, 0), w1 = weight(2048, 1), z = weight(1024, 0);
  Writer w(path, run_info());
  w.append(op_record({tensor("z", z)}));
  const uint64_t second = w.bytes();
  OpData raw_op;  // record 1: the base, raw, so that damage to its payload is found by its checksum
  raw_op.op = "aten::mm";
  raw_op.inputs = {tensor("w", w0)};
  w.append(encode_record(raw_op, PEAT_TRACE_CODEC_RAW, 1));
  const uint64_t third = w.bytes();
  w.append(op_record({delta("w", w1, w0, TensorRef{1, PEAT_TRACE_SLOT_INPUT, 0})}));
  w.abandon();  // as a killed writer leaves it: no index
  auto bytes = read_file(path);
  REQUIRE(third > second);
  bytes[third - 8] ^= 0x5A;
  write_file(path, bytes);
  peat_trace_reader_t* r = nullptr;
  peat_trace_recovery_t rec{};
  rec.struct_size = sizeof rec;
  REQUIRE(peat_trace_recover(path.c_str(), nullptr, &r, &rec) == PEAT_STATUS_OK);
  REQUIRE(rec.records == 3);
  uint64_t written = 0, dropped = 0;
  REQUIRE(peat_trace_copy_intact(r, copy.c_str(), &written, &dropped) == PEAT_STATUS_OK);
  CHECK(written == 1);
  CHECK(dropped == 2);  // the damaged base and the delta against it
  peat_trace_close(r);
  r = open_ok(copy);
  CHECK(peat_trace_verify(r, nullptr) == PEAT_STATUS_OK);
  peat_trace_close(r);
}

TEST_CASE("trace deltas: the profiler's bases stay within their byte cap and give up positions that miss",
          "[trace][profiler]") {
  using peat::impl::profiler::DeltaBases;
  DeltaBases bases(3000);
  const auto key = [](uint64_t name) {
    return peat::impl::profiler::delta_key(name, PEAT_TRACE_SLOT_INPUT, 0, DLDataType{kDLFloat, 32, 1}, {256}, 1024);
  };
  const auto bytes = [] { return std::make_shared<const peat::impl::ByteBuffer>(1024); };
  DeltaBases::Base b;
  CHECK(bases.use(key(1), &b) == DeltaBases::Use::kNewBase);
  for (uint64_t i = 1; i <= 3; ++i) bases.insert(key(i), TensorRef{i, PEAT_TRACE_SLOT_INPUT, 0}, bytes());
  CHECK(bases.bytes() == 2048);  // the cap holds two: the oldest went
  CHECK(bases.use(key(1), &b) == DeltaBases::Use::kNewBase);
  for (uint32_t n = 0; n < peat::impl::profiler::kMaxDeltasPerBase; ++n) {
    REQUIRE(bases.use(key(3), &b) == DeltaBases::Use::kBase);
    CHECK(b.target.seq == 3);
  }
  CHECK(bases.use(key(3), &b) == DeltaBases::Use::kNewBase);  // served its versions
  REQUIRE(bases.use(key(2), &b) == DeltaBases::Use::kBase);
  b.misses->store(peat::impl::profiler::kMaxMisses);
  CHECK(bases.use(key(2), &b) == DeltaBases::Use::kNever);
  CHECK(bases.bytes() == 1024);  // its bytes are freed
  bases.forget(3);
  CHECK(bases.bytes() == 0);
  CHECK(bases.use(key(3), &b) == DeltaBases::Use::kNewBase);
}
