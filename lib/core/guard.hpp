// The one exception barrier of the library: runs a body and turns
// peat::impl::Error, std::bad_alloc and any other exception into a status plus a
// message prefixed with the entry's name, handed to `sink` (the thread's last
// error for the C API, the CPU backend's last_error() for its table entries).
// Nothing it is given to guard lets an exception out.
#pragma once

#include <peat/core.h>

#include "lib/core/error.hpp"

#include <fmt/format.h>

#include <new>
#include <string>
#include <string_view>

namespace peat::impl {

template <typename Sink, typename Body>
peat_status_t guarded(std::string_view function, Sink&& sink, Body&& body) noexcept {
  try {
    body();
    return PEAT_STATUS_OK;
  } catch (const Error& e) {
    try { sink(fmt::format("{}: {}", function, e.what())); } catch (...) {}
    return e.status();
  } catch (const std::bad_alloc&) {
    try { sink(fmt::format("{}: out of memory", function)); } catch (...) {}
    return PEAT_STATUS_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    try { sink(fmt::format("{}: internal error: {}", function, e.what())); } catch (...) {}
    return PEAT_STATUS_INTERNAL;
  } catch (...) {
    try { sink(fmt::format("{}: internal error: unknown exception", function)); } catch (...) {}
    return PEAT_STATUS_INTERNAL;
  }
}

}  // namespace peat::impl
