// peat::impl::DeltaBases — the profiler's store of delta bases (format 1.3,
// docs/trace-format.md "Delta tensors"): for each tensor position (record
// name, slot, index, dtype, shape) the version of it last stored whole in the
// file, with a copy of its bytes, so that the next versions (a weight after
// each optimizer step) are written as XOR deltas against it.
//
// Memory: at most `capacity_bytes` of base bytes (least recently used
// forgotten first; a tensor without a base is stored whole). A queued delta
// keeps its base's bytes alive until it is encoded, so the total is bounded by
// this plus the queue. A base serves kMaxDeltasPerBase versions; the next one
// is stored whole and becomes the base (deltas against an ever older base
// grow). A position whose versions keep failing the XOR test is given up
// (its bytes freed). Not thread-safe: the profiler guards it with its content mutex.
#pragma once

#include "lib/trace/record.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

namespace peat::impl::profiler {

struct DeltaKey {
  uint64_t name = 0;  // op id, or a hash of the checkpoint name with the top bit set
  uint32_t slot_index = 0;  // slot << 24 | index
  uint32_t dtype = 0;
  uint64_t bytes = 0;
  uint64_t shape = 0;  // hash of the extents
  bool operator==(const DeltaKey&) const = default;
};

// Key of tensor `index` of list `slot` of a record named `name`.
DeltaKey delta_key(uint64_t name, peat_trace_slot_t slot, uint32_t index, DLDataType dtype,
                   const std::vector<int64_t>& shape, uint64_t bytes) noexcept;
// The `name` of a checkpoint record's key.
uint64_t checkpoint_key_name(const std::string& name) noexcept;

inline constexpr uint32_t kMaxDeltasPerBase = 16;
inline constexpr uint32_t kMaxMisses = 2;
// Positions remembered (bases and positions given up), least recently used
// forgotten first: bounds the memory of entries without bytes.
inline constexpr std::size_t kMaxPositions = 65536;
// Tensors above this size are always stored whole: a reader decodes a delta
// whole with its base (three buffers of its size), so this keeps that within
// what it decodes whole anyway (Reader::check_payload).
inline constexpr uint64_t kMaxDeltaTensorBytes = uint64_t{64} << 20;

class DeltaBases {
 public:
  explicit DeltaBases(uint64_t capacity_bytes) : capacity_(capacity_bytes) {}

  struct Base {
    trace::TensorRef target;
    std::shared_ptr<const ByteBuffer> bytes;
    std::shared_ptr<std::atomic<uint32_t>> misses;  // versions not worth a delta (counted by the encoder)
  };
  enum class Use { kBase, kNewBase, kNever };
  // kBase: `*out` is the base for the next version at `key`, counted as one
  // use. kNewBase: none is kept, or it has served kMaxDeltasPerBase versions:
  // the caller stores the tensor whole and inserts it. kNever: versions at
  // this position were not worth a delta kMaxMisses times (unrelated tensors,
  // such as activations of other batches): no base is kept for it again.
  Use use(const DeltaKey& key, Base* out);
  // Whether `key` still has the base stored at `target` (not forgotten).
  bool holds(const DeltaKey& key, const trace::TensorRef& target) const;
  // Makes `bytes` (stored whole at `target`) the base of `key`.
  void insert(const DeltaKey& key, const trace::TensorRef& target, std::shared_ptr<const ByteBuffer> bytes);
  // Forgets the bases stored in the record numbered `seq` (not in the file).
  void forget(uint64_t seq);
  uint64_t capacity() const noexcept { return capacity_; }
  uint64_t bytes() const noexcept { return held_; }

 private:
  struct Hash {
    std::size_t operator()(const DeltaKey& k) const noexcept {
      return static_cast<std::size_t>(k.name * 0x9E3779B97F4A7C15ull ^ k.slot_index ^ k.shape);
    }
  };
  struct Entry {
    DeltaKey key;
    Base base;
    uint32_t uses = 0;
  };
  void erase(std::list<Entry>::iterator it);
  uint64_t capacity_;
  uint64_t held_ = 0;
  std::list<Entry> lru_;  // most recently used first
  std::unordered_map<DeltaKey, std::list<Entry>::iterator, Hash> map_;
};

}  // namespace peat::impl::profiler
