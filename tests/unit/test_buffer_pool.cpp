// Profiler::BufferPool (lib/profiler/buffer_pool.hpp): buffers handed back are
// reused (same storage, so their pages are not faulted in again), the pool
// never holds more than its capacity, small buffers are not pooled, and a
// buffer much larger than a request is not tied up by it. Also: a tensor is
// encoded within its own buffer (encode_replacing) to the bytes encode()
// gives, and a record that encode_record keeps apart (frame head, one part per
// stored tensor) is the same record on disk as the one frame() builds whole.
#include <catch2/catch.hpp>

#include "lib/profiler/buffer_pool.hpp"
#include "lib/trace/codec.hpp"
#include "lib/trace/format.hpp"
#include "lib/trace/record.hpp"

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using peat::impl::ByteBuffer;
using peat::impl::profiler::BufferPool;

TEST_CASE("buffer pool: a buffer handed back serves the next request of its size class") {
  BufferPool pool(uint64_t{64} << 20);
  ByteBuffer a = pool.take(300 << 10);
  CHECK(a.empty());
  CHECK(a.capacity() >= std::size_t{512} << 10);  // the power of two at or above
  a.assign(std::size_t{300} << 10, std::byte{7});
  const std::byte* storage = a.data();
  pool.give(std::move(a));
  CHECK(a.capacity() == 0);  // taken over by the pool
  CHECK(pool.held() >= std::size_t{512} << 10);
  const ByteBuffer b = pool.take(400 << 10);
  CHECK(b.data() == storage);  // the same storage: no fresh pages
  CHECK(b.empty());
  CHECK(pool.held() == 0);
}

TEST_CASE("buffer pool: bounded, small buffers freed, large ones not tied up by small requests") {
  BufferPool pool(uint64_t{3} << 20);
  for (int i = 0; i < 4; ++i) {
    ByteBuffer v;
    v.reserve(std::size_t{1} << 20);
    pool.give(std::move(v));
  }
  CHECK(pool.held() == uint64_t{3} << 20);  // the fourth was freed
  ByteBuffer small;
  small.reserve(BufferPool::kMinBytes - 1);
  pool.give(std::move(small));
  CHECK(pool.held() == uint64_t{3} << 20);
  CHECK(pool.take(BufferPool::kMinBytes - 1).capacity() == 0);  // below the minimum: the allocator's
  const ByteBuffer quarter = pool.take(std::size_t{256} << 10);
  CHECK(pool.held() == uint64_t{3} << 20);  // a 1 MiB buffer is not used for 256 KiB
  CHECK(quarter.capacity() == std::size_t{256} << 10);
  const ByteBuffer half = pool.take((std::size_t{512} << 10) + 1);
  CHECK(pool.held() == uint64_t{2} << 20);
  CHECK(half.capacity() == std::size_t{1} << 20);
}

namespace {

// The VmFlags line of the mapping in /proc/self/smaps that holds `p` ("" when
// none is found).
std::string vm_flags_of(const void* p) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::ifstream smaps("/proc/self/smaps");
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    uintptr_t from = 0, to = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> from >> dash >> to && dash == '-') {
      inside = from <= at && at < to;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line + " ";
    }
  }
  return "";
}

}  // namespace

TEST_CASE("byte buffers: from 2 MiB on, a 2 MiB-aligned mapping of its own advised for huge pages, and growing across "
          "that size keeps the bytes") {
  using peat::impl::kHugeBufferBytes;
  const ByteBuffer small(kHugeBufferBytes / 2, std::byte{1});
  const ByteBuffer big(kHugeBufferBytes + 4096, std::byte{2});
  CHECK(small[small.size() - 1] == std::byte{1});
  CHECK(big[big.size() - 1] == std::byte{2});
  if (peat::impl::kOwnBufferMappings) {
    CHECK(reinterpret_cast<uintptr_t>(big.data()) % kHugeBufferBytes == 0);
    // "hg": MADV_HUGEPAGE. Kernels built without transparent huge pages
    // refuse the advice, which is then only lost.
    if (std::filesystem::exists("/sys/kernel/mm/transparent_hugepage/enabled")) {
      const std::string flags = vm_flags_of(big.data());
      INFO(flags);
      CHECK(flags.find(" hg ") != std::string::npos);
      CHECK(vm_flags_of(small.data()).find(" hg ") == std::string::npos);
    }
  }
  ByteBuffer grown;  // reallocated from operator new's memory to a mapping and between mappings
  for (uint32_t i = 0; grown.size() < 3 * kHugeBufferBytes; ++i) grown.push_back(static_cast<std::byte>(i * 7));
  bool same = true;
  for (std::size_t i = 0; i < grown.size(); ++i) same = same && grown[i] == static_cast<std::byte>(i * 7);
  CHECK(same);
  grown.resize(1);
  grown.shrink_to_fit();  // back to operator new: the mapping is unmapped with its own length
  CHECK(grown.size() == 1);
}

namespace {

using namespace peat::impl::trace;

TensorData f32_tensor(const char* name, std::size_t n, uint32_t seed) {
  TensorData t;
  t.name = name;
  t.dtype = DLDataType{kDLFloat, 32, 1};
  t.shape = {static_cast<int64_t>(n)};
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>((i * 7 + seed) % 101) * 0.01f;
  t.bytes.resize(n * 4);
  std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
  return t;
}

// Bytes no codec compresses (xorshift), as a tensor of `es`-byte elements.
ByteBuffer noise(std::size_t bytes, uint64_t seed) {
  ByteBuffer out(bytes);
  for (std::byte& b : out) {
    seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
    b = static_cast<std::byte>(seed >> 24);
  }
  return out;
}

ByteBuffer decoded(peat_trace_codec_t codec, const ByteBuffer& enc, std::size_t raw,
                   std::size_t es) {
  ByteBuffer out(raw);
  std::vector<std::byte> scratch;
  const std::string err = decode(codec, enc.data(), enc.size(), out.data(), raw, es, scratch);
  INFO(err);
  CHECK(err.empty());
  return out;
}

}  // namespace

TEST_CASE("encode_replacing: encoded within the buffer, or through scratch when it does not fit, to the bytes encode gives") {
  for (const std::size_t es : {std::size_t{4}, std::size_t{2}, std::size_t{1}}) {
    for (const bool compressible : {true, false}) {
      CAPTURE(es, compressible);
      ByteBuffer raw = compressible ? f32_tensor("x", 4096, 3).bytes : noise(16384, 99);
      std::vector<std::byte> appended{std::byte{5}};  // encode appends after what is there
      const std::size_t n = encode(PEAT_TRACE_CODEC_SHUFFLE_ZSTD, 1, raw.data(), raw.size(), es, appended);
      ByteBuffer buffer = raw;
      const std::byte* storage = buffer.data();
      CHECK(encode_replacing(PEAT_TRACE_CODEC_SHUFFLE_ZSTD, 1, buffer.data(), buffer.size(), es, buffer) == n);
      CHECK(buffer == ByteBuffer(appended.begin() + 1, appended.end()));
      // Shuffled data that compresses is encoded in the buffer itself; bytes
      // that do not fit (noise) or 1-byte elements come through scratch.
      if (es > 1 && compressible) CHECK(buffer.data() == storage);
      CHECK(decoded(PEAT_TRACE_CODEC_SHUFFLE_ZSTD, buffer, raw.size(), es) == raw);
      ByteBuffer fresh;  // no capacity: the scratch path
      CHECK(encode_replacing(PEAT_TRACE_CODEC_SHUFFLE_ZSTD, 1, raw.data(), raw.size(), es, fresh) == n);
      CHECK(fresh == buffer);
    }
  }
  ByteBuffer raw = noise(1000, 7), buffer = raw;
  const std::byte* storage = buffer.data();
  CHECK(encode_replacing(PEAT_TRACE_CODEC_RAW, 1, buffer.data(), buffer.size(), 4, buffer) == 1000);
  CHECK(buffer.data() == storage);  // raw: the buffer is its own encoding
  CHECK(buffer == raw);
  ByteBuffer other = noise(24, 8);
  CHECK(encode_replacing(PEAT_TRACE_CODEC_RAW, 1, raw.data() + 8, 16, 4, other) == 16);
  CHECK(other == ByteBuffer(raw.begin() + 8, raw.begin() + 24));
}

TEST_CASE("encode_record keeps the payload apart (head and parts make the frame that frame() builds), and an rvalue "
          "record is encoded within its own buffers to the same bytes") {
  OpData op;
  op.op = "aten::mm";
  op.inputs.push_back(f32_tensor("x", 1000, 1));
  op.inputs.push_back(f32_tensor("w", 1000, 2));
  op.inputs.back().ref = TensorRef{0, PEAT_TRACE_SLOT_INPUT, 0};  // a reference: no part
  op.inputs.back().bytes.clear();
  op.outputs.push_back(f32_tensor("y", 257, 4));
  op.outputs.back().dtype = DLDataType{kDLInt, 8, 1};  // 1-byte elements: through scratch
  op.outputs.back().shape = {257 * 4};
  const EncodedRecord e = encode_record(op, PEAT_TRACE_CODEC_SHUFFLE_ZSTD, 1);
  REQUIRE(e.payload.size() == 2);  // one part per stored tensor
  for (const auto& part : e.payload) CHECK(part.size() % 8 == 0);
  const auto* head = reinterpret_cast<const unsigned char*>(e.frame.data());
  const uint32_t meta_len = get_u32(head + 8);
  CHECK(get_u64(head + 16) == e.payload_bytes());
  std::vector<std::byte> payload;
  for (const auto& part : e.payload) payload.insert(payload.end(), part.begin(), part.end());
  const std::vector<std::byte> whole =
      frame(e.kind, reinterpret_cast<const uint8_t*>(e.frame.data()) + kFrameFixed, meta_len, payload);
  std::vector<std::byte> joined = e.frame;
  joined.insert(joined.end(), payload.begin(), payload.end());
  CHECK(whole == joined);

  RecordData owned = op;
  const std::byte* x_storage = std::get<OpData>(owned).inputs[0].bytes.data();
  const EncodedRecord m = encode_record(std::move(owned), PEAT_TRACE_CODEC_SHUFFLE_ZSTD, 1);
  CHECK(m.frame == e.frame);
  CHECK(m.payload == e.payload);
  CHECK(m.payload[0].data() == x_storage);  // the tensor copy holds its encoding
  CHECK(std::get<OpData>(owned).inputs[0].bytes.empty());
  CHECK(std::get<OpData>(owned).outputs[0].bytes.empty());
  CHECK(std::get<OpData>(owned).outputs[0].name == "y");  // the rest is left as it was
}

TEST_CASE("an encoding copied in from scratch has room for the record's padding: the part is not reallocated to "
          "twice its size") {
  OpData op;
  op.op = "aten::mm";
  TensorData t;
  t.name = "x";
  t.dtype = DLDataType{kDLInt, 8, 1};  // 1-byte elements: zstd's output comes through scratch
  t.shape = {int64_t{4} << 20};
  t.bytes = noise(std::size_t{4} << 20, 5);  // incompressible: the encoding is larger than the tensor
  op.inputs.push_back(std::move(t));
  const EncodedRecord e = encode_record(RecordData{std::move(op)}, PEAT_TRACE_CODEC_SHUFFLE_ZSTD, 1);
  REQUIRE(e.payload.size() == 1);
  CHECK(e.payload[0].size() % 8 == 0);
  CHECK(e.payload[0].size() > (std::size_t{4} << 20));
  CHECK(e.payload[0].capacity() == e.payload[0].size());
}
