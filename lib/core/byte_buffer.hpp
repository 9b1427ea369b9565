// ByteBuffer: the byte vector that holds a recording's tensor copies (a
// record's captured tensors, their encodings, the delta bases).
//
// Why not std::vector<std::byte>: a recording copies every tensor into fresh
// memory, and the first touch of each 4 KiB page of it is a page fault. On a
// virtual machine a fault costs far more than the copy (measured on the
// project's 2-core VM: 11 ms to first touch 4 MiB of fresh anonymous memory,
// 0.15 ms to touch it again; profiling recording_vs_limit put a third of the
// recording thread's time in faults). Buffers of kHugeBufferBytes and more are
// therefore mapped on their own, aligned to 2 MiB and advised
// MADV_HUGEPAGE: with transparent huge pages enabled ("always" or "madvise")
// one fault maps 2 MiB (0.33 ms for the same 4 MiB there). Smaller buffers,
// non-Linux builds and AddressSanitizer builds (which must see every buffer)
// use operator new, as std::allocator does.
//
// The allocator is stateless: every instance frees what any other allocated.
#pragma once

#include "lib/core/sanitizers.hpp"

#include <cstddef>
#include <cstring>
#include <new>
#include <vector>

namespace peat::impl {

// Allocations of at least this many bytes get their own 2 MiB-aligned mapping
// where kOwnBufferMappings holds (Linux, no AddressSanitizer).
inline constexpr std::size_t kHugeBufferBytes = std::size_t{2} << 20;
#if defined(__linux__)
inline constexpr bool kOwnBufferMappings = !kAddressSanitizer;
#else
inline constexpr bool kOwnBufferMappings = false;
#endif

// Memory for `bytes` bytes (any alignment up to 2 MiB for large ones, that of
// operator new otherwise); throws std::bad_alloc.
void* allocate_buffer_bytes(std::size_t bytes);
// Frees what allocate_buffer_bytes(bytes) returned, with the same `bytes`.
void free_buffer_bytes(void* p, std::size_t bytes) noexcept;

template <class T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() noexcept = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    if (n > static_cast<std::size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(allocate_buffer_bytes(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept { free_buffer_bytes(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const HugePageAllocator<U>&) const noexcept {
    return true;
  }
};

using ByteBuffer = std::vector<std::byte, HugePageAllocator<std::byte>>;

// Makes `buffer` hold the `bytes` bytes at `src`, which must not lie inside
// it, with room for at least `capacity` bytes (a caller that grows it later
// asks for that room now). Use this, not assign(first, last) or a copy
// construction: libstdc++ copies into a vector with any allocator but
// std::allocator one element at a time (3 GB/s for bytes here, against 24
// GB/s for this zero-fill + memcpy), and so does a growing resize.
inline void assign_bytes(ByteBuffer& buffer, const void* src, std::size_t bytes, std::size_t capacity = 0) {
  buffer.clear();
  if (const std::size_t room = bytes > capacity ? bytes : capacity; buffer.capacity() < room) {
    ByteBuffer fresh;
    fresh.reserve(room);
    buffer.swap(fresh);
  }
  buffer.resize(bytes);
  if (bytes != 0) std::memcpy(buffer.data(), src, bytes);
}

}  // namespace peat::impl
