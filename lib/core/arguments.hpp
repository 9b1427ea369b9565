// The argument checks and caller-buffer contracts that every entry point
// shares, whether the C layer runs them before forwarding or the
// core runs them on what it is handed (detect_from_c, compare_checkpoints,
// require_struct). One wording for each failure: "argument 'x' is NULL".
#pragma once

#include <peat/core.h>

#include "lib/core/error.hpp"

#include <cstddef>
#include <cstring>
#include <string_view>

namespace peat::impl {

// A pointer argument that must be given; NULL -> INVALID_ARGUMENT.
template <typename T>
void require_arg(const T* pointer, std::string_view name) {
  if (pointer == nullptr) fail(PEAT_STATUS_INVALID_ARGUMENT, "argument '{}' is NULL", name);
}

// A caller's buffer of `capacity` elements: NULL only with capacity 0 (a size query).
inline void require_buffer(const void* buffer, std::size_t capacity, std::string_view name) {
  if (buffer == nullptr && capacity > 0)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "argument '{}' is NULL but capacity is {}", name, capacity);
}

// An optional output: written only when the caller gave it (not NULL).
template <typename T, typename V>
void set_optional(T* out, const V& value) {
  if (out != nullptr) *out = value;
}

// The object behind a handle or pointer argument; NULL -> INVALID_ARGUMENT.
template <typename T>
T& deref(T* pointer, std::string_view name) {
  require_arg(pointer, name);
  return *pointer;
}

// Bytes returned in the caller's buffer (peat_detection_render,
// peat_report_render_html with the NUL added; peat_playback_export without):
// *out_size (when given) receives the size without the NUL; a buffer smaller
// than that (+ 1 for text) is BUFFER_TOO_SMALL (NULL with capacity 0 asks for
// the size), and nothing is written then.
inline void copy_bytes_out(const void* data, std::size_t size, bool nul, void* buffer, std::size_t capacity,
                           std::size_t* out_size, std::string_view what) {
  if (out_size != nullptr) *out_size = size;
  const std::size_t needed = size + (nul ? 1 : 0);
  require_buffer(buffer, capacity, "buffer");
  if (buffer == nullptr && !nul) return;  // a size query
  if (capacity < needed)
    fail(PEAT_STATUS_BUFFER_TOO_SMALL, "{} needs {} bytes{}; capacity is {}", what, needed, nul ? " (NUL included)" : "",
         capacity);
  if (size > 0) std::memcpy(buffer, data, size);
  if (nul) static_cast<char*>(buffer)[size] = '\0';
}

inline void copy_text_out(std::string_view text, char* buffer, std::size_t capacity, std::size_t* out_length,
                          std::string_view what) {
  copy_bytes_out(text.data(), text.size(), true, buffer, capacity, out_length, what);
}

// Copies a string into the caller's buffer (NUL-terminated, cut to fit).
inline void copy_c_string(std::string_view s, char* buffer, std::size_t capacity) noexcept {
  if (buffer == nullptr || capacity == 0) return;
  const std::size_t n = s.size() < capacity - 1 ? s.size() : capacity - 1;
  std::memcpy(buffer, s.data(), n);
  buffer[n] = '\0';
}

}  // namespace peat::impl
