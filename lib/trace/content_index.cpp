#include "lib/trace/content_index.hpp"

#include <xxhash.h>

namespace peat::impl::trace {

ContentKey content_key(const void* data, std::size_t bytes, DLDataType dtype) noexcept {
  const XXH128_hash_t h = XXH3_128bits(data, bytes);
  return ContentKey{h.low64, h.high64, bytes,
                    static_cast<uint32_t>(dtype.code) | static_cast<uint32_t>(dtype.bits) << 8 |
                        static_cast<uint32_t>(dtype.lanes) << 16};
}

std::optional<TensorRef> ContentIndex::find(const ContentKey& key) {
  const auto it = map_.find(key);
  if (it == map_.end()) return std::nullopt;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->target;
}

bool ContentIndex::holds(const ContentKey& key, const TensorRef& target) const {
  const auto it = map_.find(key);
  if (it == map_.end()) return false;
  const TensorRef& t = it->second->target;
  return t.seq == target.seq && t.slot == target.slot && t.index == target.index;
}

void ContentIndex::insert(const ContentKey& key, const TensorRef& target) {
  if (capacity_ == 0) return;
  if (const auto it = map_.find(key); it != map_.end()) {
    it->second->target = target;
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  if (map_.size() >= capacity_) {
    map_.erase(lru_.back().key);
    lru_.pop_back();
  }
  lru_.push_front(Entry{key, target});
  map_.emplace(key, lru_.begin());
}

void ContentIndex::forget(uint64_t seq) {
  for (auto it = lru_.begin(); it != lru_.end();) {
    if (it->target.seq == seq) {
      map_.erase(it->key);
      it = lru_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace peat::impl::trace
