// Trace path, round two (issue 23): what the writer accepts every reader
// reads, bounded memory on any file, UTF-8 strings, recovery that keeps every
// intact record, FIFOs, record order. Each case names the defect it pins.
#include <catch2/catch.hpp>

#include <peat/peat.h>

#include "lib/core/sanitizers.hpp"
#include "trace/codec.hpp"
#include "trace/format.hpp"
#include "trace/reader.hpp"
#include "trace/record.hpp"
#include "trace/trace_generated.h"
#include "trace/writer.hpp"
#include "trace_test_util.hpp"

#include <atomic>
#include <chrono>
#include <climits>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace peat::impl::trace;
using peat_test::TempDir;

namespace {

struct Session {
  peat_session_t* s = nullptr;
  Session() {
    peat_session_options_t o;
    peat_session_options_init(&o);
    o.run_name = "limits-test";
    REQUIRE(peat_session_create(&o, &s) == PEAT_STATUS_OK);
  }
  ~Session() { peat_session_destroy(s); }
  uint32_t op(const std::string& name) {
    uint32_t id = 0;
    REQUIRE(peat_session_intern_op(s, name.c_str(), &id) == PEAT_STATUS_OK);
    return id;
  }
};

peat_profiler_t* make_profiler(peat_session_t* s, const std::string& path, uint64_t budget = 0) {
  peat_profiler_options_t o;
  peat_profiler_options_init(&o);
  o.path = path.c_str();
  o.byte_budget = budget;
  peat_profiler_t* p = nullptr;
  const peat_status_t st = peat_profiler_create(s, &o, &p);
  INFO(peat_last_error_message());
  REQUIRE(st == PEAT_STATUS_OK);
  return p;
}

peat_status_t record_op(peat_profiler_t* p, uint32_t op, const peat_attr_t* attrs = nullptr, uint64_t n_attrs = 0,
                        const DLTensor* input = nullptr, int32_t* recorded = nullptr) {
  peat_op_record_t rec;
  peat_op_record_init(&rec);
  rec.op = op;
  rec.force = 1;
  rec.attrs = attrs;
  rec.n_attrs = n_attrs;
  const DLTensor* inputs[1] = {input};
  if (input) {
    rec.inputs = inputs;
    rec.n_inputs = 1;
  }
  return peat_profiler_record_op(p, &rec, recorded, nullptr);
}

RunInfoData run_info() {
  RunInfoData info;
  info.framework = "limits-test";
  info.run_name = "limits";
  info.created_unix_ns = 77;
  return info;
}

uint64_t count_of(const peat_trace_reader_t* r) {
  uint64_t n = 0;
  REQUIRE(peat_trace_record_count(r, &n) == PEAT_STATUS_OK);
  return n;
}

peat_trace_record_info_t info_of(const peat_trace_reader_t* r, uint64_t i) {
  peat_trace_record_info_t info{};
  info.struct_size = sizeof info;
  REQUIRE(peat_trace_record_info(r, i, &info) == PEAT_STATUS_OK);
  return info;
}

// ThreadSanitizer keeps shadow and meta memory beside every allocation (about
// four times its size) and counts it in the process's resident set: the
// bounds below grow by that factor there, still far below what the unbounded
// paths they guard against would take (a whole tensor and its copy).
constexpr uint64_t kRssFactor = peat::impl::kThreadSanitizer ? 5 : 1;

// Peak resident set since the last reset_peak_rss(), in bytes (Linux VmHWM).
void reset_peak_rss() {
  std::ofstream("/proc/self/clear_refs") << "5";
}
uint64_t peak_rss() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  return 0;
}

// Frames a hand-built Record (tests build what the writer refuses to).
EncodedRecord crafted(flatbuffers::FlatBufferBuilder& b, uint16_t kind, std::size_t payload = 0) {
  EncodedRecord rec;
  rec.kind = kind;
  rec.frame = frame(kind, b.GetBufferPointer(), b.GetSize(), std::vector<std::byte>(payload, std::byte{0}));
  return rec;
}

EncodedRecord op_named(const std::string& name) {
  flatbuffers::FlatBufferBuilder b;
  const auto op = peat::fb::CreateOpInvocation(b, b.CreateString(name));
  b.Finish(peat::fb::CreateRecord(b, peat::fb::Body::OpInvocation, op.Union(), uint64_t{0}));
  return crafted(b, PEAT_TRACE_KIND_OP);
}

// An op whose one input declares `raw` bytes of float32 with `encoded` bytes of "zstd" data.
EncodedRecord op_with_zstd(uint64_t raw, const std::vector<std::byte>& payload) {
  flatbuffers::FlatBufferBuilder b;
  const auto shape = b.CreateVector(std::vector<int64_t>{static_cast<int64_t>(raw / 4)});
  const auto name = b.CreateString("x");
  peat::fb::TensorBuilder tb(b);
  tb.add_name(name);
  tb.add_dtype_code(kDLFloat);
  tb.add_dtype_bits(32);
  tb.add_dtype_lanes(1);
  tb.add_shape(shape);
  tb.add_codec(peat::fb::Codec::ShuffleZstd);
  tb.add_raw_bytes(raw);
  tb.add_encoded_bytes(payload.size());
  const auto t = tb.Finish();
  const auto inputs = b.CreateVector(std::vector<flatbuffers::Offset<peat::fb::Tensor>>{t});
  const auto op = peat::fb::CreateOpInvocation(b, b.CreateString("bomb"), 0, 0, 0, 0, 0, inputs);
  b.Finish(peat::fb::CreateRecord(b, peat::fb::Body::OpInvocation, op.Union(), uint64_t{0}));
  EncodedRecord rec;
  rec.kind = PEAT_TRACE_KIND_OP;
  rec.frame = frame(PEAT_TRACE_KIND_OP, b.GetBufferPointer(), b.GetSize(), payload);
  return rec;
}

std::vector<std::byte> zstd_of(std::size_t raw_bytes) {
  std::vector<std::byte> zeros(raw_bytes), out;
  peat::impl::trace::encode(PEAT_TRACE_CODEC_SHUFFLE_ZSTD, 1, zeros.data(), zeros.size(), 4, out);
  return out;
}

TensorData floats(std::size_t n, uint32_t seed) {
  TensorData t;
  t.name = "t";
  t.dtype = {kDLFloat, 32, 1};
  t.shape = {static_cast<int64_t>(n)};
  t.bytes = peat_test::pattern_bytes(n * 4, seed);
  for (std::size_t i = 3; i < t.bytes.size(); i += 4) t.bytes[i] = std::byte{0x3C};  // compressible
  return t;
}

// Runs `fn` on a thread; false when it has not returned after `seconds`
// (then `unblock` runs so that the thread can finish).
template <typename Fn, typename Unblock>
bool returns_within(double seconds, Fn fn, Unblock unblock) {
  std::atomic<bool> done{false};
  std::thread t([&] {
    fn();
    done = true;
  });
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!done && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const bool ok = done;
  if (!ok) unblock();
  t.join();
  return ok;
}

}  // namespace

TEST_CASE("trace limits (1): the profiler refuses a 65 MiB op name and a 9 M-int attribute and readers keep what follows",
          "[trace][limits]") {
  TempDir dir;
  const std::string path = dir.file("big.peat");
  Session session;
  {
    peat_profiler_t* p = make_profiler(session.s, path);
    const uint32_t small = session.op("aten::add");
    REQUIRE(record_op(p, small) == PEAT_STATUS_OK);
    const uint32_t huge = session.op(std::string(65u << 20, 'n'));
    CHECK(record_op(p, huge) == PEAT_STATUS_INVALID_ARGUMENT);
    CHECK(std::string(peat_last_error_message()).find("limit of trace readers") != std::string::npos);
    std::vector<int64_t> ints(9u << 20, 7);
    peat_attr_t attr{};
    attr.key = "dims";
    attr.type = PEAT_ATTR_INT_ARRAY;
    attr.ints = ints.data();
    attr.n_ints = ints.size();
    CHECK(record_op(p, small, &attr, 1) == PEAT_STATUS_INVALID_ARGUMENT);
    CHECK(std::string(peat_last_error_message()).find("max_meta_bytes") != std::string::npos);
    for (int i = 0; i < 3; ++i) REQUIRE(record_op(p, small) == PEAT_STATUS_OK);
    REQUIRE(peat_profiler_close(p) == PEAT_STATUS_OK);
    peat_profiler_destroy(p);
  }
  // Every acknowledged record is read by a default reader.
  peat_trace_reader_t* r = nullptr;
  REQUIRE(peat_trace_open(path.c_str(), nullptr, &r) == PEAT_STATUS_OK);
  CHECK(count_of(r) == 4);
  peat_trace_close(r);

  // A reader with a smaller limit skips the record it cannot use and reads on.
  const std::string mixed = dir.file("mixed.peat");
  {
    Writer w(mixed, run_info());
    w.append(encode_record(ScalarData{"a", 0, 1}, PEAT_TRACE_CODEC_RAW, 1));
    OpData op;
    op.op = std::string(8000, 'x');
    w.append(encode_record(op, PEAT_TRACE_CODEC_RAW, 1));
    w.append(encode_record(ScalarData{"b", 1, 2}, PEAT_TRACE_CODEC_RAW, 1));
    w.append(encode_record(StepData{2, 5}, PEAT_TRACE_CODEC_RAW, 1));
    w.close();
  }
  peat_trace_reader_options_t opts;
  peat_trace_reader_options_init(&opts);
  opts.max_meta_bytes = 4096;
  for (int recover = 0; recover < 2; ++recover) {
    peat_trace_recovery_t rec{};
    rec.struct_size = sizeof rec;
    REQUIRE((recover ? peat_trace_recover(mixed.c_str(), &opts, &r, &rec) : peat_trace_open(mixed.c_str(), &opts, &r)) ==
            PEAT_STATUS_OK);
    CHECK(count_of(r) == 3);
    CHECK(std::string(info_of(r, 1).name) == "b");
    uint64_t skipped = 0;
    const char* why = nullptr;
    REQUIRE(peat_trace_skipped(r, &skipped, &why) == PEAT_STATUS_OK);
    CHECK(skipped == 1);
    CHECK(std::string(why).find("above this reader's limit") != std::string::npos);
    peat_trace_close(r);
  }
}

TEST_CASE("trace limits (2): declared sizes are checked before allocating and verify decodes in bounded chunks",
          "[trace][limits][memory]") {
  TempDir dir;
  const std::string path = dir.file("bomb.peat");
  // A tiny trace declaring a 1 GiB tensor over a 4 KiB zstd frame.
  {
    Writer w(path, run_info());
    w.append(op_with_zstd(uint64_t{1} << 30, zstd_of(4096)));
    w.append(encode_record(ScalarData{"after", 1, 3}, PEAT_TRACE_CODEC_RAW, 1));
    w.close();
  }
  reset_peak_rss();
  const uint64_t before = peak_rss();
  peat_trace_reader_t* r = nullptr;
  const peat_status_t st = peat_trace_open(path.c_str(), nullptr, &r);
  if (st == PEAT_STATUS_OK) {  // today's main opens it, then verify zero-fills 2 GiB
    peat_trace_verify(r, nullptr);
    peat_trace_close(r);
  }
  CHECK(st == PEAT_STATUS_CORRUPT_DATA);
  CHECK(std::string(peat_last_error_message()).find("more than zstd can decode") != std::string::npos);
  CHECK(peak_rss() < before + kRssFactor * (uint64_t{64} << 20));
  // Recovery skips that record and keeps the one after it.
  REQUIRE(peat_trace_recover(path.c_str(), nullptr, &r, nullptr) == PEAT_STATUS_OK);
  CHECK(count_of(r) == 1);
  CHECK(std::string(info_of(r, 0).name) == "after");
  peat_trace_close(r);

  // Within the bound, the zstd frame's own size is checked before decoding.
  {
    Writer w(path, run_info());
    w.append(op_with_zstd(uint64_t{256} << 10, zstd_of(4096)));
    w.close();
  }
  REQUIRE(peat_trace_open(path.c_str(), nullptr, &r) == PEAT_STATUS_OK);
  CHECK(peat_trace_verify(r, nullptr) == PEAT_STATUS_CORRUPT_DATA);
  CHECK(std::string(peat_last_error_message()).find("the zstd frame holds 4096 bytes") != std::string::npos);
  peat_trace_close(r);

  // A genuine 96 MiB tensor is verified in chunks: far less memory than its size.
  const std::string large = dir.file("large.peat");
  {
    Writer w(large, run_info());
    CheckpointData cp;
    cp.name = "w";
    cp.tensors = {floats(24u << 20, 1)};
    w.append(encode_record(cp, PEAT_TRACE_CODEC_SHUFFLE_ZSTD, 1));
    w.close();
  }
  REQUIRE(peat_trace_open(large.c_str(), nullptr, &r) == PEAT_STATUS_OK);
  reset_peak_rss();
  const uint64_t base = peak_rss();
  uint64_t checked = 0;
  CHECK(peat_trace_verify(r, &checked) == PEAT_STATUS_OK);
  CHECK(checked == 1);
  CHECK(peak_rss() < base + kRssFactor * (uint64_t{48} << 20));
  peat_trace_close(r);
  // ... and a damaged byte in it is still found.
  auto bytes = peat_test::read_file(large);
  bytes[bytes.size() / 2] ^= 0x40;
  peat_test::write_file(large, bytes);
  REQUIRE(peat_trace_open(large.c_str(), nullptr, &r) == PEAT_STATUS_OK);
  CHECK(peat_trace_verify(r, nullptr) == PEAT_STATUS_CORRUPT_DATA);
  peat_trace_close(r);
}

TEST_CASE("trace limits (2): the per-record memory cap fails one record and the next loads", "[trace][limits][memory]") {
  TempDir dir;
  const std::string path = dir.file("cap.peat");
  {
    Writer w(path, run_info());
    OpData op;
    op.op = "four_outputs";
    for (uint32_t k = 0; k < 4; ++k) op.outputs.push_back(floats(256u << 10, k));
    w.append(encode_record(op, PEAT_TRACE_CODEC_SHUFFLE_ZSTD, 1));
    OpData next;
    next.op = "small";
    next.outputs = {floats(16, 9)};
    w.append(encode_record(next, PEAT_TRACE_CODEC_SHUFFLE_ZSTD, 1));
    w.close();
  }
  peat_trace_reader_options_t opts;
  peat_trace_reader_options_init(&opts);
  CHECK(opts.max_record_bytes >= (uint64_t{256} << 20));  // default: a fraction of physical memory
  opts.max_record_bytes = 2u << 20;                        // the record holds 4 MiB
  peat_trace_reader_t* r = nullptr;
  REQUIRE(peat_trace_open(path.c_str(), &opts, &r) == PEAT_STATUS_OK);
  DLManagedTensor* m = nullptr;
  CHECK(peat_trace_load_tensor_alloc(r, 0, PEAT_TRACE_SLOT_OUTPUT, 0, &m) == PEAT_STATUS_OUT_OF_MEMORY);
  CHECK(std::string(peat_last_error_message()).find("max_record_bytes") != std::string::npos);
  REQUIRE(peat_trace_load_tensor_alloc(r, 1, PEAT_TRACE_SLOT_OUTPUT, 0, &m) == PEAT_STATUS_OK);
  peat_trace_tensor_free(m);
  CHECK(peat_trace_verify(r, nullptr) == PEAT_STATUS_OK);  // verify is chunked, not capped
  peat_trace_close(r);
}

TEST_CASE("trace limits (2): the profiler decides on the byte budget before it copies", "[trace][limits][memory]") {
  TempDir dir;
  Session session;
  std::vector<float> big(24u << 20, 1.0f);  // 96 MiB
  int64_t shape[1] = {static_cast<int64_t>(big.size())};
  DLTensor t{};
  t.data = big.data();
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = 1;
  t.dtype = DLDataType{kDLFloat, 32, 1};
  t.shape = shape;
  peat_profiler_t* p = make_profiler(session.s, dir.file("budget.peat"), uint64_t{1} << 20);
  const uint32_t op = session.op("aten::mm");
  reset_peak_rss();
  const uint64_t before = peak_rss();
  int32_t recorded = 1;
  REQUIRE(record_op(p, op, nullptr, 0, &t, &recorded) == PEAT_STATUS_OK);
  CHECK(recorded == 0);
  CHECK(peak_rss() < before + kRssFactor * (uint64_t{32} << 20));  // not copied first
  peat_profiler_stats_t s{};
  s.struct_size = sizeof s;
  REQUIRE(peat_profiler_stats(p, &s) == PEAT_STATUS_OK);
  CHECK(s.dropped_budget == 1);
  REQUIRE(peat_profiler_close(p) == PEAT_STATUS_OK);
  peat_profiler_destroy(p);
}

TEST_CASE("trace strings (3): non-UTF-8 is refused by the writer and by every reader", "[trace][limits][utf8]") {
  TempDir dir;
  const std::string path = dir.file("utf8.peat");
  Session session;
  {
    peat_profiler_t* p = make_profiler(session.s, path);
    CHECK(record_op(p, session.op("bad\xff\xfename")) == PEAT_STATUS_INVALID_ARGUMENT);
    CHECK(std::string(peat_last_error_message()).find("op name: byte 3 is not valid UTF-8") != std::string::npos);
    CHECK(peat_profiler_record_scalar(p, "loss\xc3", 0, 1.0) == PEAT_STATUS_INVALID_ARGUMENT);
    CHECK(record_op(p, session.op("caf\xc3\xa9 \xe2\x82\xac")) == PEAT_STATUS_OK);  // valid UTF-8 is kept
    REQUIRE(peat_profiler_close(p) == PEAT_STATUS_OK);
    peat_profiler_destroy(p);
  }
  {
    peat_profiler_options_t o;
    peat_profiler_options_init(&o);
    const std::string other = dir.file("fw.peat");
    o.path = other.c_str();
    o.framework = "torch\x80";
    peat_profiler_t* p = nullptr;
    CHECK(peat_profiler_create(session.s, &o, &p) == PEAT_STATUS_INVALID_ARGUMENT);
    CHECK(std::string(peat_last_error_message()).find("framework") != std::string::npos);
  }
  peat_trace_reader_t* r = nullptr;
  REQUIRE(peat_trace_open(path.c_str(), nullptr, &r) == PEAT_STATUS_OK);
  CHECK(count_of(r) == 1);
  peat_trace_close(r);
  // A crafted file: the strict reader refuses it naming the record, recovery skips it.
  {
    Writer w(path, run_info());
    w.append(op_named("ok"));
    w.append(op_named("\x1b[31mred\xff"));
    w.append(op_named("after"));
    w.close();
  }
  CHECK(peat_trace_open(path.c_str(), nullptr, &r) == PEAT_STATUS_CORRUPT_DATA);
  CHECK(std::string(peat_last_error_message()).find("record 1 at byte") != std::string::npos);
  CHECK(std::string(peat_last_error_message()).find("not valid UTF-8") != std::string::npos);
  REQUIRE(peat_trace_recover(path.c_str(), nullptr, &r, nullptr) == PEAT_STATUS_OK);
  CHECK(count_of(r) == 2);
  CHECK(std::string(info_of(r, 1).name) == "after");
  peat_trace_close(r);
}

TEST_CASE("trace recovery (4): copy_intact keeps odd values, unix_ns, rank INT32_MAX and the records after a damaged payload",
          "[trace][limits][recovery]") {
  TempDir dir;
  const std::string path = dir.file("odd.peat");
  const std::string out = dir.file("copy.peat");
  RunInfoData info = run_info();
  info.rank = INT32_MAX;
  info.world_size = 1;
  info.tags = {{"", "no key"}};
  uint64_t damaged_at = 0;
  {
    Writer w(path, info);
    w.append(encode_record(StepData{-1, 4242}, PEAT_TRACE_CODEC_RAW, 1));
    w.append(encode_record(ScalarData{"", 3, 0.5}, PEAT_TRACE_CODEC_RAW, 1));
    OpData op;
    op.op = "odd";
    op.step = INT64_MIN;
    op.attrs = {{"", PEAT_ATTR_INT, 5, 0, "", {}}};
    w.append(encode_record(op, PEAT_TRACE_CODEC_RAW, 1));
    CheckpointData cp;
    cp.name = "damaged";
    cp.tensors = {floats(1024, 3)};
    damaged_at = w.append(encode_record(cp, PEAT_TRACE_CODEC_SHUFFLE_ZSTD, 1));
    for (int i = 0; i < 47; ++i) w.append(encode_record(ScalarData{"loss", i, 1.0 / (i + 1)}, PEAT_TRACE_CODEC_RAW, 1));
    // not closed: as if the writer were killed
  }
  auto bytes = peat_test::read_file(path);
  // Inside the checkpoint's payload (the frame checksum does not cover it).
  bytes[damaged_at + kFrameFixed + pad8(get_u32(bytes.data() + damaged_at + 8)) + 16] ^= 0x10;
  peat_test::write_file(path, bytes);

  peat_trace_reader_t* r = nullptr;
  peat_trace_recovery_t rec{};
  rec.struct_size = sizeof rec;
  REQUIRE(peat_trace_recover(path.c_str(), nullptr, &r, &rec) == PEAT_STATUS_OK);
  CHECK(rec.records == 51);
  uint64_t written = 0, dropped = 0;
  REQUIRE(peat_trace_copy_intact(r, out.c_str(), &written, &dropped) == PEAT_STATUS_OK);
  CHECK(written == 50);
  CHECK(dropped == 1);
  peat_trace_close(r);

  REQUIRE(peat_trace_open(out.c_str(), nullptr, &r) == PEAT_STATUS_OK);
  REQUIRE(count_of(r) == 50);
  CHECK(peat_trace_verify(r, nullptr) == PEAT_STATUS_OK);
  peat_trace_run_info_t ri{};
  ri.struct_size = sizeof ri;
  REQUIRE(peat_trace_run_info(r, &ri) == PEAT_STATUS_OK);
  CHECK(ri.rank == INT32_MAX);
  CHECK(ri.created_unix_ns == 77);
  const char *k = nullptr, *v = nullptr;
  REQUIRE(peat_trace_tag(r, 0, &k, &v) == PEAT_STATUS_OK);
  CHECK(std::string(k).empty());
  CHECK(info_of(r, 0).step == -1);
  CHECK(info_of(r, 0).unix_ns == 4242);
  CHECK(std::string(info_of(r, 1).name).empty());
  CHECK(info_of(r, 2).step == INT64_MIN);
  peat_attr_t a{};
  REQUIRE(peat_trace_attr(r, 2, 0, &a) == PEAT_STATUS_OK);
  CHECK(std::string(a.key).empty());
  CHECK(std::string(info_of(r, 3).name) == "loss");  // the 47 after the damaged one are kept
  CHECK(info_of(r, 49).step == 46);
  peat_trace_close(r);
}

TEST_CASE("trace FIFOs (5): the reader and the profiler refuse a FIFO without blocking", "[trace][limits][fifo]") {
  TempDir dir;
  const std::string fifo = dir.file("pipe.peat");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  peat_status_t st = PEAT_STATUS_OK;
  std::string message;
  // Unblocking a stuck open(): open the other end once.
  const auto unblock = [&](int flags) {
    return [&fifo, flags] {
      const int fd = ::open(fifo.c_str(), flags | O_NONBLOCK);
      if (fd >= 0) ::close(fd);
    };
  };
  CHECK(returns_within(
      5.0,
      [&] {
        peat_trace_reader_t* r = nullptr;
        st = peat_trace_open(fifo.c_str(), nullptr, &r);
        message = peat_last_error_message();
        peat_trace_close(r);
      },
      unblock(O_WRONLY)));
  CHECK(st == PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(message.find("not a regular file") != std::string::npos);

  Session session;
  CHECK(returns_within(
      5.0,
      [&] {
        peat_profiler_options_t o;
        peat_profiler_options_init(&o);
        o.path = fifo.c_str();
        peat_profiler_t* p = nullptr;
        st = peat_profiler_create(session.s, &o, &p);
        message = peat_last_error_message();
        if (p) peat_profiler_destroy(p);
      },
      [&] {
        const int fd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);  // a reader lets open(O_WRONLY) return
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        if (fd >= 0) ::close(fd);
      }));
  CHECK(st == PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(message.find("not a regular file") != std::string::npos);
}

TEST_CASE("trace order (6): records swapped byte for byte are detected by their sequence numbers", "[trace][limits][order]") {
  TempDir dir;
  const std::string path = dir.file("order.peat");
  std::vector<uint64_t> at;
  {
    Writer w(path, run_info());
    for (int i = 0; i < 4; ++i) at.push_back(w.append(encode_record(ScalarData{"loss", 1, 0.5 * i}, PEAT_TRACE_CODEC_RAW, 1)));
    w.close();
  }
  peat_trace_reader_t* r = nullptr;
  REQUIRE(peat_trace_open(path.c_str(), nullptr, &r) == PEAT_STATUS_OK);
  peat_trace_close(r);
  auto bytes = peat_test::read_file(path);
  const std::size_t n = at[2] - at[1];
  REQUIRE(at[3] - at[2] == n);  // same size and kind
  std::vector<unsigned char> tmp(bytes.begin() + static_cast<std::ptrdiff_t>(at[1]),
                                 bytes.begin() + static_cast<std::ptrdiff_t>(at[2]));
  std::memcpy(bytes.data() + at[1], bytes.data() + at[2], n);
  std::memcpy(bytes.data() + at[2], tmp.data(), n);
  peat_test::write_file(path, bytes);
  CHECK(peat_trace_open(path.c_str(), nullptr, &r) == PEAT_STATUS_CORRUPT_DATA);
  const std::string msg = peat_last_error_message();
  CHECK(msg.find("record 1 at byte") != std::string::npos);
  CHECK(msg.find("sequence number 2 differs from the index's 1") != std::string::npos);
  // Without the index, recovery finds the order broken and skips the record out of place.
  peat_trace_recovery_t rec{};
  rec.struct_size = sizeof rec;
  REQUIRE(peat_trace_recover(path.c_str(), nullptr, &r, &rec) == PEAT_STATUS_OK);
  CHECK(count_of(r) == 3);
  CHECK(std::string(rec.stop_reason).find("out of order") != std::string::npos);
  peat_trace_close(r);
}
