// The exception barrier of the C layer. Every extern "C" entry point runs its
// body through peat::impl::c_call, which turns peat::impl::Error, std::bad_alloc
// and any other exception into a status and the thread's last-error message,
// prefixed with the function's name (lib/core/guard.hpp, the library's one
// barrier). No C++ exception ever crosses the ABI. The argument checks are the
// core's (lib/core/arguments.hpp), as is the versioned-struct rule
// (lib/core/versioned_struct.hpp): lib/ runs them too.
#pragma once

#include <peat/core.h>

#include "lib/core/arguments.hpp"
#include "lib/core/error.hpp"
#include "lib/core/guard.hpp"
#include "lib/core/versioned_struct.hpp"

#include <new>
#include <string_view>

namespace peat::impl {

template <typename Body>
peat_status_t c_call(std::string_view function, Body&& body) noexcept {
  return guarded(function, [](std::string message) { set_last_error(std::move(message)); }, body);
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

}  // namespace peat::impl
