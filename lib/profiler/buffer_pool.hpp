// Profiler::BufferPool: byte buffers handed back after use (a record's tensor
// copies once written: each holds its tensor's encoding by then, see
// encode_record) and taken again for the next records' copies.
//
// Why: a recording moves every tensor through freshly allocated buffers of
// megabytes, which the C library maps and unmaps each time; every page of
// each is then faulted in on first touch. On a virtual machine those faults
// cost more system time than the copies themselves (recording_vs_limit: 0.2
// to 0.8 s of system time per 274 MB recorded). Reused buffers are touched
// already.
//
// Bounded: at most `capacity` bytes (buffer capacities) are held; a buffer
// that does not fit is freed. Buffers under kMinBytes are not pooled (the
// allocator serves those from its heap). Thread-safe.
#pragma once

#include "lib/core/byte_buffer.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

namespace peat::impl::profiler {

class BufferPool {
 public:
  static constexpr std::size_t kMinBytes = std::size_t{64} << 10;

  explicit BufferPool(uint64_t capacity) : capacity_(capacity) {}

  // An empty vector whose capacity is at least `bytes` when a pooled buffer
  // of up to twice that fits (the smallest such), else an empty vector.
  ByteBuffer take(std::size_t bytes);

  // Hands a buffer back (its contents are dropped); frees it when the pool is
  // full or cannot take it. Never throws.
  void give(ByteBuffer&& buffer) noexcept;

  uint64_t held() const;

 private:
  mutable std::mutex mutex_;
  std::multimap<std::size_t, ByteBuffer> free_;  // by capacity
  uint64_t held_ = 0;
  uint64_t capacity_;
};

}  // namespace peat::impl::profiler
