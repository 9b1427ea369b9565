// Trace format 1.2: each tensor stored once per trace. The profiler writes a
// repeated tensor as a reference; readers, verify, recovery and copies follow
// or report references; files of the older minors still read.
#include <catch2/catch.hpp>

#include <peat/peat.h>

#include "trace/codec.hpp"
#include "trace/content_index.hpp"
#include "trace/format.hpp"
#include "trace/record.hpp"
#include "trace/writer.hpp"
#include "trace_reader_util.hpp"
#include "trace_test_util.hpp"

#include <cstring>
#include <string>
#include <vector>

using namespace peat::impl::trace;
using namespace peat_test;
using peat_test::TempDir;

namespace {

constexpr DLDataType kF32{kDLFloat, 32, 1};

RunInfoData info() {
  RunInfoData i;
  i.framework = "unit-test";
  i.run_name = "refs";
  return i;
}

TensorData stored(const std::string& name, std::vector<int64_t> shape, uint32_t seed) {
  TensorData t;
  t.name = name;
  t.dtype = kF32;
  t.shape = std::move(shape);
  uint64_t n = 4;
  for (auto d : t.shape) n *= static_cast<uint64_t>(d);
  t.bytes = peat_test::pattern_bytes(n, seed);
  return t;
}

TensorData reference(const std::string& name, std::vector<int64_t> shape, uint64_t seq, peat_trace_slot_t slot,
                     uint32_t index) {
  TensorData t;
  t.name = name;
  t.dtype = kF32;
  t.shape = std::move(shape);
  t.ref = TensorRef{seq, slot, index};
  return t;
}

OpData op_with(std::vector<TensorData> inputs, std::vector<TensorData> outputs) {
  OpData op;
  op.op = "aten::mm";
  op.inputs = std::move(inputs);
  op.outputs = std::move(outputs);
  return op;
}

}  // namespace

TEST_CASE("trace refs: the profiler stores a repeated tensor once and reads it back through the reference",
          "[trace][profiler]") {
  TempDir dir;
  for (const uint64_t entries : {uint64_t{65536}, uint64_t{0}}) {
    const std::string path = dir.file("refs" + std::to_string(entries) + ".peat");
    Session session;
    uint32_t mm = 0, relu = 0;
    REQUIRE(peat_session_intern_op(session.s, "aten::mm", &mm) == PEAT_STATUS_OK);
    REQUIRE(peat_session_intern_op(session.s, "aten::relu", &relu) == PEAT_STATUS_OK);
    peat_profiler_options_t o;
    peat_profiler_options_init(&o);
    CHECK(o.content_index_entries == kDefaultContentIndexEntries);
    o.path = path.c_str();
    o.content_index_entries = entries;
    peat_profiler_t* p = nullptr;
    REQUIRE(peat_profiler_create(session.s, &o, &p) == PEAT_STATUS_OK);
    std::vector<float> w(64 * 64), x(64 * 64), y(64 * 64);
    for (std::size_t i = 0; i < w.size(); ++i) {
      w[i] = static_cast<float>(i % 97) * 0.25f - 3.f;
      x[i] = static_cast<float>((i * 7) % 89) * 0.5f;
      y[i] = x[i] * 2.f + 1.f;
    }
    int64_t shape[2] = {64, 64};
    int64_t t_strides[2] = {1, 64};  // w.t(): another layout, so other compact bytes
    DLTensor tw = view(w.data(), 2, shape), tx = view(x.data(), 2, shape), ty = view(y.data(), 2, shape);
    DLTensor twt = view(w.data(), 2, shape, t_strides);
    // record 0: mm(x, w) -> y; record 1: relu(y) -> y with w.t() and x twice;
    // record 2: a checkpoint of w.
    const DLTensor* in0[2] = {&tx, &tw};
    const DLTensor* out0[1] = {&ty};
    const DLTensor* in1[4] = {&ty, &twt, &tx, &tx};
    const DLTensor* out1[1] = {&ty};
    peat_op_record_t rec;
    peat_op_record_init(&rec);
    rec.op = mm;
    rec.inputs = in0;
    rec.n_inputs = 2;
    rec.outputs = out0;
    rec.n_outputs = 1;
    REQUIRE(peat_profiler_record_op(p, &rec, nullptr, nullptr) == PEAT_STATUS_OK);
    rec.op = relu;
    rec.inputs = in1;
    rec.n_inputs = 4;
    rec.outputs = out1;
    REQUIRE(peat_profiler_record_op(p, &rec, nullptr, nullptr) == PEAT_STATUS_OK);
    const DLTensor* ck[1] = {&tw};
    const char* names[1] = {"w"};
    REQUIRE(peat_profiler_record_checkpoint(p, "ckpt", 0, names, ck, 1, nullptr, nullptr) == PEAT_STATUS_OK);
    REQUIRE(peat_profiler_close(p) == PEAT_STATUS_OK);
    peat_profiler_stats_t st{};
    st.struct_size = sizeof st;
    REQUIRE(peat_profiler_stats(p, &st) == PEAT_STATUS_OK);
    peat_profiler_destroy(p);
    CHECK(st.raw_bytes == 9 * w.size() * 4);  // references count as the bytes they stand for

    peat_trace_reader_t* r = open_ok(path);
    const auto as_bytes = [](const std::vector<float>& v) {
      std::vector<std::byte> b(v.size() * 4);
      std::memcpy(b.data(), v.data(), b.size());
      return b;
    };
    std::vector<float> wt(w.size());
    for (int i = 0; i < 64; ++i)
      for (int j = 0; j < 64; ++j) wt[static_cast<std::size_t>(i * 64 + j)] = w[static_cast<std::size_t>(j * 64 + i)];
    CHECK(load(r, 0, PEAT_TRACE_SLOT_INPUT, 0) == as_bytes(x));
    CHECK(load(r, 0, PEAT_TRACE_SLOT_INPUT, 1) == as_bytes(w));
    CHECK(load(r, 1, PEAT_TRACE_SLOT_INPUT, 0) == as_bytes(y));
    CHECK(load(r, 1, PEAT_TRACE_SLOT_INPUT, 1) == as_bytes(wt));
    CHECK(load(r, 1, PEAT_TRACE_SLOT_INPUT, 2) == as_bytes(x));
    CHECK(load(r, 1, PEAT_TRACE_SLOT_INPUT, 3) == as_bytes(x));
    CHECK(load(r, 1, PEAT_TRACE_SLOT_OUTPUT, 0) == as_bytes(y));
    CHECK(load(r, 2, PEAT_TRACE_SLOT_CHECKPOINT, 0) == as_bytes(w));
    uint64_t checked = 0;
    CHECK(peat_trace_verify(r, &checked) == PEAT_STATUS_OK);
    CHECK(checked == 9);
    if (entries == 0) {
      for (uint64_t i = 0; i < 2; ++i) CHECK(tinfo(r, 1, PEAT_TRACE_SLOT_INPUT, i).is_reference == 0);
    } else {
      // Stored once: y, x and w name record 0; w.t() is other bytes; the second
      // x of record 1 names... record 0 as well (the index finds it first).
      const auto y_in = tinfo(r, 1, PEAT_TRACE_SLOT_INPUT, 0);
      CHECK(y_in.is_reference == 1);
      CHECK(y_in.ref_seq == 0);
      CHECK(y_in.ref_slot == PEAT_TRACE_SLOT_OUTPUT);
      CHECK(y_in.ref_tensor == 0);
      CHECK(y_in.encoded_bytes == 0);
      CHECK(y_in.checksum == tinfo(r, 0, PEAT_TRACE_SLOT_OUTPUT, 0).checksum);
      CHECK(tinfo(r, 1, PEAT_TRACE_SLOT_INPUT, 1).is_reference == 0);  // w.t()
      CHECK(tinfo(r, 1, PEAT_TRACE_SLOT_INPUT, 1).strides != nullptr);
      CHECK(tinfo(r, 1, PEAT_TRACE_SLOT_INPUT, 2).is_reference == 1);
      CHECK(tinfo(r, 1, PEAT_TRACE_SLOT_INPUT, 3).is_reference == 1);
      CHECK(tinfo(r, 1, PEAT_TRACE_SLOT_OUTPUT, 0).is_reference == 1);
      const auto ck_w = tinfo(r, 2, PEAT_TRACE_SLOT_CHECKPOINT, 0);
      CHECK(ck_w.is_reference == 1);
      CHECK(ck_w.ref_slot == PEAT_TRACE_SLOT_INPUT);
      CHECK(ck_w.ref_tensor == 1);
      CHECK(std::string(ck_w.name) == "w");
    }
    peat_trace_close(r);
  }
}

TEST_CASE("trace refs: a record repeating its own tensor names the earlier one", "[trace][profiler]") {
  TempDir dir;
  const std::string path = dir.file("self.peat");
  Session session;
  uint32_t add = 0;
  REQUIRE(peat_session_intern_op(session.s, "aten::add", &add) == PEAT_STATUS_OK);
  peat_profiler_options_t o;
  peat_profiler_options_init(&o);
  o.path = path.c_str();
  peat_profiler_t* p = nullptr;
  REQUIRE(peat_profiler_create(session.s, &o, &p) == PEAT_STATUS_OK);
  std::vector<float> a(2048, 1.5f);
  int64_t shape[1] = {2048};
  DLTensor ta = view(a.data(), 1, shape);
  const DLTensor* ins[2] = {&ta, &ta};
  const DLTensor* outs[1] = {&ta};
  peat_op_record_t rec;
  peat_op_record_init(&rec);
  rec.op = add;
  rec.inputs = ins;
  rec.n_inputs = 2;
  rec.outputs = outs;
  rec.n_outputs = 1;
  REQUIRE(peat_profiler_record_op(p, &rec, nullptr, nullptr) == PEAT_STATUS_OK);
  REQUIRE(peat_profiler_close(p) == PEAT_STATUS_OK);
  peat_profiler_destroy(p);
  peat_trace_reader_t* r = open_ok(path);
  CHECK(tinfo(r, 0, PEAT_TRACE_SLOT_INPUT, 0).is_reference == 0);
  const auto second = tinfo(r, 0, PEAT_TRACE_SLOT_INPUT, 1);
  CHECK(second.is_reference == 1);
  CHECK(second.ref_seq == 0);
  CHECK(second.ref_slot == PEAT_TRACE_SLOT_INPUT);
  CHECK(second.ref_tensor == 0);
  CHECK(tinfo(r, 0, PEAT_TRACE_SLOT_OUTPUT, 0).is_reference == 1);
  const auto out = load(r, 0, PEAT_TRACE_SLOT_OUTPUT, 0);
  CHECK(std::memcmp(out.data(), a.data(), out.size()) == 0);
  peat_trace_close(r);
}

TEST_CASE("trace refs: the content index forgets the least recently used contents beyond its cap", "[trace]") {
  ContentIndex index(2);
  const std::vector<float> a(16, 1.f), b(16, 2.f), c(16, 3.f);
  const ContentKey ka = content_key(a.data(), 64, kF32), kb = content_key(b.data(), 64, kF32),
                   kc = content_key(c.data(), 64, kF32);
  CHECK(ka == content_key(a.data(), 64, kF32));
  CHECK_FALSE(ka == content_key(a.data(), 64, DLDataType{kDLInt, 32, 1}));  // same bytes, other dtype
  CHECK_FALSE(ka == kb);
  index.insert(ka, {1, PEAT_TRACE_SLOT_INPUT, 0});
  index.insert(kb, {2, PEAT_TRACE_SLOT_OUTPUT, 0});
  REQUIRE(index.find(ka));  // a is now the most recent
  index.insert(kc, {3, PEAT_TRACE_SLOT_INPUT, 1});
  CHECK(index.size() == 2);
  CHECK(index.find(ka)->seq == 1);
  CHECK_FALSE(index.find(kb));
  CHECK(index.holds(kc, {3, PEAT_TRACE_SLOT_INPUT, 1}));
  index.forget(3);
  CHECK_FALSE(index.find(kc));
  CHECK(index.size() == 1);
}

TEST_CASE("trace refs: a reference the reader cannot follow is reported, naming both tensors", "[trace]") {
  TempDir dir;
  const std::string path = dir.file("bad.peat");
  std::string msg;
  peat_status_t st = PEAT_STATUS_OK;
  const auto write = [&](std::vector<TensorData> second_inputs) {
    Writer w(path, info());
    w.append(encode_record(op_with({stored("x", {32, 32}, 1)}, {stored("y", {32, 32}, 2)}), PEAT_TRACE_CODEC_SHUFFLE_ZSTD, 1), 0);
    w.append(encode_record(op_with(std::move(second_inputs), {}), PEAT_TRACE_CODEC_SHUFFLE_ZSTD, 1), 5);
    w.close();
  };
  SECTION("a record the file does not hold (numbers 1-4 were lost)") {
    write({reference("y", {32, 32}, 3, PEAT_TRACE_SLOT_OUTPUT, 0)});
    peat_trace_reader_t* r = open_ok(path);
    load(r, 1, PEAT_TRACE_SLOT_INPUT, 0, &st, &msg);
    CHECK(st == PEAT_STATUS_CORRUPT_DATA);
    CHECK(msg.find("record 1 at byte") != std::string::npos);
    CHECK(msg.find("inputs[0] refers to outputs[0] of the record numbered 3") != std::string::npos);
    CHECK(msg.find("not followed") != std::string::npos);
    CHECK(tinfo(r, 1, PEAT_TRACE_SLOT_INPUT, 0).checksum == 0);
    CHECK(peat_trace_verify(r, nullptr) == PEAT_STATUS_CORRUPT_DATA);
    peat_trace_close(r);
  }
  SECTION("a later record") {
    write({reference("y", {32, 32}, 9, PEAT_TRACE_SLOT_OUTPUT, 0)});
    peat_trace_reader_t* r = open_ok(path);
    load(r, 1, PEAT_TRACE_SLOT_INPUT, 0, &st, &msg);
    CHECK(st == PEAT_STATUS_CORRUPT_DATA);
    CHECK(msg.find("later record") != std::string::npos);
    peat_trace_close(r);
  }
  SECTION("another size, a missing tensor, a reference, itself") {
    for (const auto& [t, why] : std::vector<std::pair<TensorData, std::string>>{
             {reference("y", {16, 32}, 0, PEAT_TRACE_SLOT_OUTPUT, 0), "differs from this tensor's"},
             {reference("y", {32, 32}, 0, PEAT_TRACE_SLOT_OUTPUT, 4), "has 1 tensors there"},
             {reference("y", {32, 32}, 0, PEAT_TRACE_SLOT_CHECKPOINT, 0), "has no such slot"},
             {reference("y", {32, 32}, 5, PEAT_TRACE_SLOT_INPUT, 0), "not an earlier tensor"}}) {
      write({t});
      peat_trace_reader_t* r = open_ok(path);
      load(r, 1, PEAT_TRACE_SLOT_INPUT, 0, &st, &msg);
      CHECK(st == PEAT_STATUS_CORRUPT_DATA);
      INFO(msg);
      CHECK(msg.find(why) != std::string::npos);
      peat_trace_close(r);
    }
    write({reference("y", {32, 32}, 0, PEAT_TRACE_SLOT_OUTPUT, 0), reference("z", {32, 32}, 5, PEAT_TRACE_SLOT_INPUT, 0)});
    peat_trace_reader_t* r = open_ok(path);
    load(r, 1, PEAT_TRACE_SLOT_INPUT, 1, &st, &msg);
    CHECK(st == PEAT_STATUS_CORRUPT_DATA);
    CHECK(msg.find("itself a reference") != std::string::npos);
    peat_trace_close(r);
  }
  SECTION("the writer refuses a reference with bytes of its own") {
    TensorData t = reference("y", {2}, 0, PEAT_TRACE_SLOT_OUTPUT, 0);
    t.bytes.resize(8);
    CHECK_THROWS(encode_record(op_with({t}, {}), PEAT_TRACE_CODEC_RAW, 1));
  }
}

TEST_CASE("trace refs: recovery and copies do not follow references into lost records", "[trace]") {
  TempDir dir;
  const std::string path = dir.file("cut.peat"), copy = dir.file("copy.peat");
  Writer w(path, info());
  w.append(encode_record(op_with({stored("x", {64}, 1)}, {stored("y", {64}, 2)}), PEAT_TRACE_CODEC_SHUFFLE_ZSTD, 1));
  const uint64_t second = w.bytes();
  w.append(encode_record(op_with({stored("z", {64}, 3)}, {}), PEAT_TRACE_CODEC_RAW, 1));
  const uint64_t third = w.bytes();
  w.append(encode_record(op_with({reference("y", {64}, 0, PEAT_TRACE_SLOT_OUTPUT, 0)}, {}), PEAT_TRACE_CODEC_RAW, 1));
  w.append(encode_record(op_with({reference("z", {64}, 1, PEAT_TRACE_SLOT_INPUT, 0)}, {}), PEAT_TRACE_CODEC_RAW, 1));
  w.abandon();  // as a killed writer leaves it: no index
  // Damage record 1's payload: it is left out of a copy, and so is record 3, which names it.
  auto bytes = peat_test::read_file(path);
  REQUIRE(third > second);
  bytes[third - 8] ^= 0x5A;  // the last bytes of record 1 are its raw payload
  peat_test::write_file(path, bytes);
  peat_trace_reader_t* r = nullptr;
  peat_trace_recovery_t rec{};
  rec.struct_size = sizeof rec;
  REQUIRE(peat_trace_recover(path.c_str(), nullptr, &r, &rec) == PEAT_STATUS_OK);
  REQUIRE(rec.records == 4);
  CHECK(load(r, 2, PEAT_TRACE_SLOT_INPUT, 0) == load(r, 0, PEAT_TRACE_SLOT_OUTPUT, 0));
  uint64_t written = 0, dropped = 0;
  REQUIRE(peat_trace_copy_intact(r, copy.c_str(), &written, &dropped) == PEAT_STATUS_OK);
  CHECK(written == 2);
  CHECK(dropped == 2);
  peat_trace_close(r);
  r = open_ok(copy);
  uint64_t n = 0;
  REQUIRE(peat_trace_record_count(r, &n) == PEAT_STATUS_OK);
  REQUIRE(n == 2);
  CHECK(peat_trace_verify(r, nullptr) == PEAT_STATUS_OK);
  CHECK(tinfo(r, 1, PEAT_TRACE_SLOT_INPUT, 0).ref_seq == 0);
  peat_trace_close(r);
}

TEST_CASE("trace refs: files of format 1.0 and 1.1 still read, and a reference in one is a defect", "[trace]") {
  TempDir dir;
  const std::string path = dir.file("old.peat");
  const TensorData x = stored("x", {8, 8}, 4);
  for (const uint16_t minor : {uint16_t{0}, uint16_t{1}}) {
    {
      Writer w(path, info());
      w.append(encode_record(op_with({x}, {x}), PEAT_TRACE_CODEC_SHUFFLE_ZSTD, 1));
      w.close();
    }
    set_minor(path, minor);
    peat_trace_reader_t* r = open_ok(path);
    CHECK(peat_test::same_bytes(load(r, 0, PEAT_TRACE_SLOT_OUTPUT, 0), x.bytes));
    CHECK(peat_trace_verify(r, nullptr) == PEAT_STATUS_OK);
    peat_trace_close(r);
  }
  {
    Writer w(path, info());
    w.append(encode_record(op_with({x}, {reference("x", {8, 8}, 0, PEAT_TRACE_SLOT_INPUT, 0)}), PEAT_TRACE_CODEC_RAW, 1));
    w.close();
  }
  set_minor(path, 1);
  peat_trace_reader_t* r = nullptr;
  CHECK(peat_trace_open(path.c_str(), nullptr, &r) == PEAT_STATUS_CORRUPT_DATA);
  CHECK(std::string(peat_last_error_message()).find("older format") != std::string::npos);
}
