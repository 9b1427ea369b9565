#include "lib/profiler/delta_bases.hpp"

#include <xxhash.h>

namespace peat::impl::profiler {

DeltaKey delta_key(uint64_t name, peat_trace_slot_t slot, uint32_t index, DLDataType dtype,
                   const std::vector<int64_t>& shape, uint64_t bytes) noexcept {
  return DeltaKey{name, static_cast<uint32_t>(slot) << 24 | (index & 0xFFFFFFu),
                  static_cast<uint32_t>(dtype.code) | static_cast<uint32_t>(dtype.bits) << 8 |
                      static_cast<uint32_t>(dtype.lanes) << 16,
                  bytes, XXH3_64bits(shape.data(), shape.size() * sizeof(int64_t))};
}

uint64_t checkpoint_key_name(const std::string& name) noexcept {
  return XXH3_64bits(name.data(), name.size()) | (uint64_t{1} << 63);
}

DeltaBases::Use DeltaBases::use(const DeltaKey& key, Base* out) {
  const auto it = map_.find(key);
  if (it == map_.end()) return Use::kNewBase;
  Entry& e = *it->second;
  lru_.splice(lru_.begin(), lru_, it->second);
  if (e.base.bytes == nullptr) return Use::kNever;
  if (e.base.misses->load(std::memory_order_relaxed) >= kMaxMisses) {
    held_ -= e.base.bytes->size();  // given up: the entry stays, without bytes
    e.base.bytes.reset();
    return Use::kNever;
  }
  if (e.uses >= kMaxDeltasPerBase) return Use::kNewBase;
  ++e.uses;
  *out = e.base;
  return Use::kBase;
}

bool DeltaBases::holds(const DeltaKey& key, const trace::TensorRef& target) const {
  const auto it = map_.find(key);
  if (it == map_.end()) return false;
  const trace::TensorRef& t = it->second->base.target;
  return t.seq == target.seq && t.slot == target.slot && t.index == target.index;
}

void DeltaBases::erase(std::list<Entry>::iterator it) {
  if (it->base.bytes) held_ -= it->base.bytes->size();
  map_.erase(it->key);
  lru_.erase(it);
}

void DeltaBases::insert(const DeltaKey& key, const trace::TensorRef& target,
                        std::shared_ptr<const ByteBuffer> bytes) {
  if (bytes == nullptr || bytes->size() > capacity_) return;
  uint32_t misses = 0;  // a position's misses carry over to its next base
  if (const auto it = map_.find(key); it != map_.end()) {
    misses = it->second->base.misses->load(std::memory_order_relaxed);
    erase(it->second);
  }
  while ((held_ + bytes->size() > capacity_ || map_.size() >= kMaxPositions) && !lru_.empty())
    erase(std::prev(lru_.end()));
  held_ += bytes->size();
  lru_.push_front(Entry{key, Base{target, std::move(bytes), std::make_shared<std::atomic<uint32_t>>(misses)}, 0});
  map_.emplace(key, lru_.begin());
}

void DeltaBases::forget(uint64_t seq) {
  for (auto it = lru_.begin(); it != lru_.end();) {
    const auto next = std::next(it);
    if (it->base.target.seq == seq) erase(it);
    it = next;
  }
}

}  // namespace peat::impl::profiler
