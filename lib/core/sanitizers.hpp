// Whether this build runs under ThreadSanitizer (or AddressSanitizer, below):
// the one place that asks the compiler (GCC defines __SANITIZE_THREAD__, Clang answers __has_feature).
//
// oneTBB is a Debian library that is not instrumented, so TSan cannot see the
// happens-before edges of its task queues and pipeline hand-offs and reports
// false races on every parallel loop. Code that runs over oneTBB checks
// kThreadSanitizer and runs the same chunks or stages serially there; the
// results are identical by construction (fixed chunks, merges and collection
// in index order).
#pragma once

namespace peat::impl {

#if defined(__SANITIZE_THREAD__)
inline constexpr bool kThreadSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
inline constexpr bool kThreadSanitizer = true;
#else
inline constexpr bool kThreadSanitizer = false;
#endif
#else
inline constexpr bool kThreadSanitizer = false;
#endif

// Whether this build runs under AddressSanitizer: memory it must see stays
// with operator new (core/byte_buffer.hpp maps large buffers itself otherwise).
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

}  // namespace peat::impl
