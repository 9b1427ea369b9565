// The exception barrier of the C layer. Every extern "C" entry point runs its
// body through peat::c_call, which turns peat::Error, std::bad_alloc and any
// other exception into a status and the thread's last-error message, prefixed
// with the function's name. No C++ exception ever crosses the ABI.
#pragma once

#include <peat/core.h>

#include "core/error.hpp"

#include <new>
#include <string_view>

namespace peat {

template <typename Body>
peat_status_t c_call(std::string_view function, Body&& body) noexcept {
  try {
    body();
    return PEAT_STATUS_OK;
  } catch (const Error& e) {
    try { set_last_error(fmt::format("{}: {}", function, e.what())); } catch (...) {}
    return e.status();
  } catch (const std::bad_alloc&) {
    try { set_last_error(fmt::format("{}: out of memory", function)); } catch (...) {}
    return PEAT_STATUS_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    try { set_last_error(fmt::format("{}: internal error: {}", function, e.what())); } catch (...) {}
    return PEAT_STATUS_INTERNAL;
  } catch (...) {
    try { set_last_error(fmt::format("{}: internal error: unknown exception", function)); } catch (...) {}
    return PEAT_STATUS_INTERNAL;
  }
}

// Argument checks shared by all C entry points.
template <typename T>
void require_arg(const T* pointer, std::string_view name) {
  if (pointer == nullptr) fail(PEAT_STATUS_INVALID_ARGUMENT, "argument '{}' is NULL", name);
}

}  // namespace peat
