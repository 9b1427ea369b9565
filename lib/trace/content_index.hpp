// peat::impl::trace::ContentIndex — the writing side's map from tensor contents to
// the stored tensor that holds them (format 1.2, docs/trace-format.md "Tensor
// references"): a tensor whose decoded bytes are already in the file is
// written as a reference instead of a second copy.
//
// A key is the XXH3-128 of the decoded (compact row-major) bytes plus their
// count and the dtype. Equal keys are taken as equal bytes without comparing
// them (the earlier bytes are not kept: memory stays bounded); the collision
// bound is in the docs. The index holds at most `capacity` keys and forgets
// the least recently used one beyond that (a tensor then is stored again).
// Not thread-safe: the profiler guards it with its own mutex.
#pragma once

#include "lib/trace/record.hpp"

#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <unordered_map>

namespace peat::impl::trace {

struct ContentKey {
  uint64_t lo = 0, hi = 0;  // XXH3-128 of the decoded bytes
  uint64_t bytes = 0;
  uint32_t dtype = 0;  // code | bits << 8 | lanes << 16
  bool operator==(const ContentKey&) const = default;
};

// The key of `bytes` bytes of compact row-major elements of `dtype`.
ContentKey content_key(const void* data, std::size_t bytes, DLDataType dtype) noexcept;

// Index entries a profiler keeps by default (peat_profiler_options_t.content_index_entries).
inline constexpr uint64_t kDefaultContentIndexEntries = 65536;
// Approximate memory of one entry (key, target, list and hash nodes), for docs and tests.
inline constexpr uint64_t kContentIndexEntryBytes = 160;

class ContentIndex {
 public:
  explicit ContentIndex(std::size_t capacity) : capacity_(capacity) {}

  // The stored tensor holding these contents, marked as recently used.
  std::optional<TensorRef> find(const ContentKey& key);
  // Whether `key` still maps to `target` (no use mark).
  bool holds(const ContentKey& key, const TensorRef& target) const;
  // Adds (or replaces) the stored tensor of `key`, forgetting the least
  // recently used entry when full.
  void insert(const ContentKey& key, const TensorRef& target);
  // Forgets every entry stored in the record numbered `seq` (a record that
  // will not be in the file). Linear in the index size; for failures only.
  void forget(uint64_t seq);
  std::size_t size() const noexcept { return map_.size(); }
  std::size_t capacity() const noexcept { return capacity_; }

 private:
  struct Hash {
    std::size_t operator()(const ContentKey& k) const noexcept { return static_cast<std::size_t>(k.lo ^ k.bytes); }
  };
  struct Entry {
    ContentKey key;
    TensorRef target;
  };
  std::size_t capacity_;
  std::list<Entry> lru_;  // most recently used first
  std::unordered_map<ContentKey, std::list<Entry>::iterator, Hash> map_;
};

}  // namespace peat::impl::trace
