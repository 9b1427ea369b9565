// Profiler::BufferPool (lib/profiler/buffer_pool.hpp): buffers handed back are
// reused (same storage, so their pages are not faulted in again), the pool
// never holds more than its capacity, small buffers are not pooled, and a
// buffer much larger than a request is not tied up by it. Also: a record that
// encode_record keeps in two parts (frame head, payload) is the same record
// on disk as the one frame() builds whole.
#include <catch2/catch.hpp>

#include "lib/profiler/buffer_pool.hpp"
#include "lib/trace/format.hpp"
#include "lib/trace/record.hpp"

#include <vector>

using peat::impl::profiler::BufferPool;

TEST_CASE("buffer pool: a buffer handed back serves the next request of its size class") {
  BufferPool pool(uint64_t{64} << 20);
  std::vector<std::byte> a = pool.take(300 << 10);
  CHECK(a.empty());
  CHECK(a.capacity() >= std::size_t{512} << 10);  // the power of two at or above
  a.assign(std::size_t{300} << 10, std::byte{7});
  const std::byte* storage = a.data();
  pool.give(std::move(a));
  CHECK(a.capacity() == 0);  // taken over by the pool
  CHECK(pool.held() >= std::size_t{512} << 10);
  const std::vector<std::byte> b = pool.take(400 << 10);
  CHECK(b.data() == storage);  // the same storage: no fresh pages
  CHECK(b.empty());
  CHECK(pool.held() == 0);
}

TEST_CASE("buffer pool: bounded, small buffers freed, large ones not tied up by small requests") {
  BufferPool pool(uint64_t{3} << 20);
  for (int i = 0; i < 4; ++i) {
    std::vector<std::byte> v;
    v.reserve(std::size_t{1} << 20);
    pool.give(std::move(v));
  }
  CHECK(pool.held() == uint64_t{3} << 20);  // the fourth was freed
  std::vector<std::byte> small;
  small.reserve(BufferPool::kMinBytes - 1);
  pool.give(std::move(small));
  CHECK(pool.held() == uint64_t{3} << 20);
  CHECK(pool.take(BufferPool::kMinBytes - 1).capacity() == 0);  // below the minimum: the allocator's
  const std::vector<std::byte> quarter = pool.take(std::size_t{256} << 10);
  CHECK(pool.held() == uint64_t{3} << 20);  // a 1 MiB buffer is not used for 256 KiB
  CHECK(quarter.capacity() == std::size_t{256} << 10);
  const std::vector<std::byte> half = pool.take((std::size_t{512} << 10) + 1);
  CHECK(pool.held() == uint64_t{2} << 20);
  CHECK(half.capacity() == std::size_t{1} << 20);
}

TEST_CASE("encode_record keeps the payload apart: head and payload make the frame that frame() builds") {
  using namespace peat::impl::trace;
  OpData op;
  op.op = "aten::mm";
  TensorData t;
  t.name = "x";
  t.dtype = DLDataType{kDLFloat, 32, 1};
  t.shape = {1000};
  t.bytes.resize(4000);
  for (std::size_t i = 0; i < t.bytes.size(); ++i) t.bytes[i] = static_cast<std::byte>(i * 7);
  op.inputs.push_back(t);
  std::vector<std::byte> reused;
  reused.reserve(1 << 16);
  reused.push_back(std::byte{1});  // contents dropped, capacity kept
  const std::byte* storage = reused.data();
  const EncodedRecord e = encode_record(op, PEAT_TRACE_CODEC_SHUFFLE_ZSTD, 1, std::move(reused));
  REQUIRE_FALSE(e.payload.empty());
  CHECK(e.payload.data() == storage);
  CHECK(e.payload.size() % 8 == 0);
  const auto* head = reinterpret_cast<const unsigned char*>(e.frame.data());
  const uint32_t meta_len = get_u32(head + 8);
  const uint64_t payload_len = get_u64(head + 16);
  CHECK(payload_len == e.payload.size());
  const std::vector<std::byte> whole =
      frame(e.kind, reinterpret_cast<const uint8_t*>(e.frame.data()) + kFrameFixed, meta_len, e.payload);
  std::vector<std::byte> joined = e.frame;
  joined.insert(joined.end(), e.payload.begin(), e.payload.end());
  CHECK(whole == joined);
}
