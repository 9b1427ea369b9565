// Reading a caller's versioned struct (struct_size first) over our defaults.
//
// A struct smaller than ours comes from an older header: its fields are copied
// over the defaults and the rest keep their defaults. A struct larger than ours
// comes from a newer header and is refused (we cannot honour fields we do not
// know). A size that is not a multiple of the struct's alignment cannot be a
// released version's sizeof (structs only grow at their end, docs/abi-policy.md)
// and is refused too: copying it would cut a pointer field in half (found by
// the injector fuzz target: struct_size 12 gave op_pattern a half-copied
// pointer). If a struct of alignment 4 ever gains an 8-byte field, list its
// older sizes here.
#pragma once

#include "core/error.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace peat {

template <typename T>
void copy_versioned_struct(T& defaults_then_result, const T& user, std::string_view name) {
  const uint32_t size = user.struct_size;
  if (size < sizeof(uint32_t))
    fail(PEAT_STATUS_VERSION_MISMATCH, "{}: struct_size {} is too small (did you call the options_init function?)",
         name, size);
  if (size > sizeof(T))
    fail(PEAT_STATUS_VERSION_MISMATCH,
         "{}: struct_size {} is larger than this library's {} bytes (built against a newer header?)", name, size,
         sizeof(T));
  if (size % alignof(T) != 0)
    fail(PEAT_STATUS_VERSION_MISMATCH,
         "{}: struct_size {} is not a multiple of {} and so no version's size (set it with the init function)", name,
         size, alignof(T));
  std::memcpy(&defaults_then_result, &user, size);
  defaults_then_result.struct_size = sizeof(T);
}

// Reads a caller's options struct: `init` (the peat_<x>_options_init
// function) fills the defaults; a NULL `user` means "all defaults", otherwise
// its fields are copied over them by the rule above.
template <typename T, typename Init>
T read_options(const T* user, std::string_view name, Init init) {
  T result;
  init(&result);
  if (user == nullptr) return result;
  copy_versioned_struct(result, *user, name);
  return result;
}

// Writing an output struct the caller sized: any struct_size from the first
// released version's size (`first_size`, the offset where later appended
// fields start) up to ours is accepted, and only the fields inside it are
// written, so a caller built against an older header keeps working when the
// struct grows. A larger size (a newer header) gets our fields, and its
// struct_size is set to ours to say how much was written.
template <typename T>
void write_versioned_out(T* out, const T& value, std::size_t first_size, std::string_view name) {
  if (out == nullptr) fail(PEAT_STATUS_INVALID_ARGUMENT, "argument '{}' is NULL", name);
  const uint32_t size = out->struct_size;
  if (size < first_size)
    fail(PEAT_STATUS_VERSION_MISMATCH, "{}->struct_size is {}; this library needs at least {} (set it to sizeof)",
         name, size, first_size);
  const std::size_t n = size < sizeof(T) ? size : sizeof(T);
  std::memcpy(static_cast<void*>(out), &value, n);
  out->struct_size = static_cast<uint32_t>(n);
}

}  // namespace peat
