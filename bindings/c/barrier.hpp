// The exception barrier of the C layer. Every extern "C" entry point runs its
// body through peat::impl::c_call, which turns peat::impl::Error, std::bad_alloc
// and any other exception into a status and the thread's last-error message,
// prefixed with the function's name (lib/core/guard.hpp, the library's one
// barrier). No C++ exception ever crosses the ABI. The argument checks all
// entry points share sit here too; the versioned-struct rule is the core's
// (lib/core/versioned_struct.hpp), which lib/ uses as well.
#pragma once

#include <peat/core.h>

#include "lib/core/error.hpp"
#include "lib/core/guard.hpp"
#include "lib/core/versioned_struct.hpp"

#include <cstring>
#include <new>
#include <string_view>

namespace peat::impl {

template <typename Body>
peat_status_t c_call(std::string_view function, Body&& body) noexcept {
  return guarded(function, [](std::string message) { set_last_error(std::move(message)); }, body);
}

template <typename T>
void require_arg(const T* pointer, std::string_view name) {
  if (pointer == nullptr) fail(PEAT_STATUS_INVALID_ARGUMENT, "argument '{}' is NULL", name);
}

// A caller's buffer of `capacity` elements: NULL only with capacity 0 (a size query).
inline void require_buffer(const void* buffer, std::size_t capacity, std::string_view name) {
  if (buffer == nullptr && capacity > 0)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "argument '{}' is NULL but capacity is {}", name, capacity);
}

// The object behind a handle or pointer argument; NULL -> INVALID_ARGUMENT.
template <typename T>
T& deref(T* pointer, std::string_view name) {
  require_arg(pointer, name);
  return *pointer;
}

// An entry point on one handle: checks it, then runs body(object) behind the
// barrier.
template <typename H, typename Body>
peat_status_t c_with(std::string_view function, H* handle, std::string_view handle_name, Body&& body) noexcept {
  return c_call(function, [&] { body(deref(handle, handle_name)); });
}

// An entry point that checks `handle`, then `out`, and stores get(*handle)
// in *out: the shape of every getter of the C API.
template <typename H, typename T, typename Get>
peat_status_t c_get(std::string_view function, H* handle, std::string_view handle_name, T* out,
                    std::string_view out_name, Get&& get) noexcept {
  return c_call(function, [&] {
    auto& h = deref(handle, handle_name);
    require_arg(out, out_name);
    *out = get(h);
  });
}

// The same for a versioned output struct (written as the caller's prefix).
template <typename H, typename T, typename Get>
peat_status_t c_get_struct(std::string_view function, H* handle, std::string_view handle_name, T* out,
                           Get&& get) noexcept {
  return c_call(function, [&] {
    auto& h = deref(handle, handle_name);
    require_struct(out, "out");
    write_versioned(out, get(h), "out");
  });
}

// Text returned in the caller's buffer (peat_detection_render,
// peat_report_render_html): *out_length (when given) receives its length
// without the NUL; a buffer of fewer than length + 1 bytes is BUFFER_TOO_SMALL
// (NULL with capacity 0 asks for the length), and nothing is written then.
inline void copy_text_out(std::string_view text, char* buffer, std::size_t capacity, std::size_t* out_length,
                          std::string_view what) {
  if (out_length != nullptr) *out_length = text.size();
  if (capacity < text.size() + 1)
    fail(PEAT_STATUS_BUFFER_TOO_SMALL, "{} needs {} bytes (NUL included); capacity is {}", what, text.size() + 1,
         capacity);
  require_arg(buffer, "buffer");
  std::memcpy(buffer, text.data(), text.size());
  buffer[text.size()] = '\0';
}

// Copies a string into the caller's buffer (NUL-terminated, cut to fit).
inline void copy_c_string(std::string_view s, char* buffer, std::size_t capacity) noexcept {
  if (buffer == nullptr || capacity == 0) return;
  const std::size_t n = s.size() < capacity - 1 ? s.size() : capacity - 1;
  for (std::size_t i = 0; i < n; ++i) buffer[i] = s[i];
  buffer[n] = '\0';
}

}  // namespace peat::impl
