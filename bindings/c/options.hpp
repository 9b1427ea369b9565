// Reading versioned option structs (struct_size first) at the C boundary.
//
// A NULL pointer means "all defaults". A struct smaller than ours comes from an
// older header: its fields are copied over the defaults and the rest keep their
// defaults. A struct larger than ours comes from a newer header and is refused,
// because we cannot honour fields we do not know.
#pragma once

#include "barrier.hpp"
#include "core/error.hpp"

#include <cstdint>
#include <cstring>
#include <string_view>

namespace peat {

// `init` fills defaults into a T (the peat_<x>_options_init function).
template <typename T, typename Init>
T read_options(const T* user, std::string_view name, Init init) {
  T result;
  init(&result);
  if (user == nullptr) return result;
  const uint32_t size = user->struct_size;
  if (size < sizeof(uint32_t))
    fail(PEAT_STATUS_VERSION_MISMATCH, "{}: struct_size {} is too small (did you call the options_init function?)", name, size);
  if (size > sizeof(T))
    fail(PEAT_STATUS_VERSION_MISMATCH,
         "{}: struct_size {} is larger than this library's {} bytes (built against a newer header?)", name, size,
         sizeof(T));
  std::memcpy(&result, user, size);
  result.struct_size = sizeof(T);
  return result;
}

// Output structs the library fills (record info, results): the caller sets
// struct_size, which must cover this library's whole struct.
template <typename T>
void require_out_struct(const T* out, const char* name) {
  require_arg(out, name);
  if (out->struct_size < sizeof(T))
    fail(PEAT_STATUS_VERSION_MISMATCH, "{}->struct_size is {}; this library needs {} (set it to sizeof)", name,
         out->struct_size, sizeof(T));
}

}  // namespace peat
