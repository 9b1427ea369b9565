#include "lib/core/byte_buffer.hpp"

#include <cstdint>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace peat::impl {

namespace {

constexpr bool own_mapping(std::size_t bytes) noexcept { return kOwnBufferMappings && bytes >= kHugeBufferBytes; }

// A large buffer's mapping: its length rounded up to whole huge pages, so
// that the last one can be a huge page too.
constexpr std::size_t mapped_length(std::size_t bytes) noexcept {
  return (bytes + kHugeBufferBytes - 1) & ~(kHugeBufferBytes - 1);
}

}  // namespace

void* allocate_buffer_bytes(std::size_t bytes) {
  if (!own_mapping(bytes)) return ::operator new(bytes);
#if defined(__linux__)
  const std::size_t length = mapped_length(bytes);
  if (length < bytes) throw std::bad_alloc();
  // Over-map by one huge page less a page, then cut both ends off so that
  // what stays starts on a 2 MiB boundary.
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t span = length + kHugeBufferBytes - page;
  void* raw = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const auto start = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = (start + kHugeBufferBytes - 1) & ~std::uintptr_t{kHugeBufferBytes - 1};
  if (aligned > start) ::munmap(raw, aligned - start);
  if (const std::uintptr_t end = start + span; end > aligned + length)
    ::munmap(reinterpret_cast<void*>(aligned + length), end - aligned - length);
  // Advice only: where transparent huge pages are off, 4 KiB pages serve.
  (void)::madvise(reinterpret_cast<void*>(aligned), length, MADV_HUGEPAGE);
  return reinterpret_cast<void*>(aligned);
#else
  return ::operator new(bytes);
#endif
}

void free_buffer_bytes(void* p, std::size_t bytes) noexcept {
  if (p == nullptr) return;
  if (!own_mapping(bytes)) {
    ::operator delete(p);
    return;
  }
#if defined(__linux__)
  ::munmap(p, mapped_length(bytes));
#endif
}

}  // namespace peat::impl
