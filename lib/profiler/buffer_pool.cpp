#include "lib/profiler/buffer_pool.hpp"

#include <bit>
#include <utility>

namespace peat::impl::profiler {

ByteBuffer BufferPool::take(std::size_t bytes) {
  if (bytes < kMinBytes) return {};
  std::lock_guard lock(mutex_);
  const auto it = free_.lower_bound(bytes);
  if (it == free_.end() || it->first / 2 >= bytes) {  // none, or one too large to tie up
    // A fresh buffer of the size class (the power of two at or above): a
    // later take of any size in the class can reuse it.
    ByteBuffer fresh;
    fresh.reserve(std::bit_ceil(bytes));
    return fresh;
  }
  ByteBuffer out = std::move(it->second);
  held_ -= it->first;
  free_.erase(it);
  out.clear();
  return out;
}

void BufferPool::give(ByteBuffer&& buffer) noexcept {
  ByteBuffer kept = std::move(buffer);  // freed here unless the pool keeps it
  const std::size_t cap = kept.capacity();
  if (cap < kMinBytes) return;
  try {
    std::lock_guard lock(mutex_);
    if (held_ + cap > capacity_) return;
    free_.emplace(cap, std::move(kept));
    held_ += cap;
  } catch (...) {  // (allocation of the map node) the buffer is freed instead
  }
}

uint64_t BufferPool::held() const {
  std::lock_guard lock(mutex_);
  return held_;
}

}  // namespace peat::impl::profiler
