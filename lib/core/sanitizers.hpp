// Whether this build runs under ThreadSanitizer or AddressSanitizer: the one
// place that asks the compiler (GCC defines __SANITIZE_THREAD__ and
// __SANITIZE_ADDRESS__, Clang answers __has_feature).
//
// oneTBB is a Debian library that is not instrumented, so TSan cannot see the
// happens-before edges of its task queues and pipeline hand-offs and reports
// false races on every parallel loop. Code that runs over oneTBB checks
// kThreadSanitizer and runs the same chunks or stages serially there; the
// results are identical by construction (fixed chunks, merges and collection
// in index order).
//
// Memory ASan must see stays with operator new: core/byte_buffer.hpp maps
// large buffers itself only where kAddressSanitizer is false.
#pragma once

#if defined(__has_feature)
#define PEAT_SANITIZERS_HAS_FEATURE(x) __has_feature(x)
#else
#define PEAT_SANITIZERS_HAS_FEATURE(x) 0
#endif

namespace peat::impl {

#if defined(__SANITIZE_THREAD__) || PEAT_SANITIZERS_HAS_FEATURE(thread_sanitizer)
inline constexpr bool kThreadSanitizer = true;
#else
inline constexpr bool kThreadSanitizer = false;
#endif

#if defined(__SANITIZE_ADDRESS__) || PEAT_SANITIZERS_HAS_FEATURE(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif

}  // namespace peat::impl

#undef PEAT_SANITIZERS_HAS_FEATURE
