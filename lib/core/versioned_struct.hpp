// The one rule for every versioned struct (struct_size first), whether the
// caller hands it in (options, signatures, contexts) or the library fills it
// (infos, results, signatures): a struct_size from the first released
// version's size up to this library's sizeof is accepted, and the library
// reads or writes only that prefix. So a caller built against an older header
// keeps working when a struct grows at its end (docs/abi-policy.md).
//
// A larger size comes from a newer header and is refused (we cannot honour
// fields we do not know). A size that is not a multiple of the struct's
// alignment cannot be a released version's sizeof and is refused too: copying
// it would cut a pointer field in half (found by the injector fuzz target:
// struct_size 12 gave op_pattern a half-copied pointer). If a struct of
// alignment 4 ever gains an 8-byte field, list its older sizes here.
#pragma once

#include <peat/analyzer.h>
#include <peat/injector.h>
#include <peat/trace.h>

#include "lib/core/arguments.hpp"
#include "lib/core/error.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace peat::impl {

// The size of a struct's first released version. A struct that has not grown
// since then keeps the default, sizeof. Option structs, whose every field has
// a default, are read by read_options below, for which the struct_size field
// alone is a version ("all defaults").
template <typename T>
inline constexpr std::size_t first_version_size = sizeof(T);
// Grew in 0.2: strides and storage_offset were appended after checksum.
template <>
inline constexpr std::size_t first_version_size<peat_trace_tensor_info_t> = offsetof(peat_trace_tensor_info_t, strides);
// 0.1 ends with the XOR popcount histogram (PEAT_SIGNATURE_SIZE_0_1); fields
// appended later are left out of (or at their empty values for) an older
// caller's struct.
template <>
inline constexpr std::size_t first_version_size<peat_signature_t> = PEAT_SIGNATURE_SIZE_0_1;
// Filled as a prefix of any length since 0.1 (their headers say so).
template <>
inline constexpr std::size_t first_version_size<peat_inject_truth_t> = sizeof(uint32_t);
template <>
inline constexpr std::size_t first_version_size<peat_firing_t> = sizeof(uint32_t);

// A struct of zero bytes (padding included) with its struct_size set: the
// start of every default.
template <typename T>
T zeroed_struct() noexcept {
  T t;
  std::memset(static_cast<void*>(&t), 0, sizeof t);
  t.struct_size = sizeof t;
  return t;
}

// A struct whose released sizes are listed accepts only those (a size between
// two versions is no version); the others accept any aligned size in range.
template <typename T>
struct released_sizes {
  static constexpr std::size_t count = 0;
  static constexpr std::size_t size[1] = {0};
};
template <>
struct released_sizes<peat_signature_t> {
  static constexpr std::size_t count = 2;
  static constexpr std::size_t size[2] = {PEAT_SIGNATURE_SIZE_0_1, sizeof(peat_signature_t)};
};

// Checks `size` against [first, sizeof(T)], the released sizes and the
// alignment; returns it.
template <typename T>
std::size_t checked_struct_size(uint32_t size, std::size_t first, std::string_view name) {
  if (size < first || size < sizeof(uint32_t))
    fail(PEAT_STATUS_VERSION_MISMATCH, "{}: struct_size {} is smaller than {}, the first version's (set it with the "
         "init function or to sizeof)", name, size, first);
  if (size > sizeof(T))
    fail(PEAT_STATUS_VERSION_MISMATCH,
         "{}: struct_size {} is larger than this library's {} bytes (built against a newer header?)", name, size,
         sizeof(T));
  if (size % alignof(T) != 0)
    fail(PEAT_STATUS_VERSION_MISMATCH,
         "{}: struct_size {} is not a multiple of {} and so no version's size (set it with the init function)", name,
         size, alignof(T));
  if constexpr (released_sizes<T>::count > 0) {
    bool released = false;
    for (std::size_t v : released_sizes<T>::size) released = released || v == size;
    if (!released)
      fail(PEAT_STATUS_VERSION_MISMATCH, "{}: struct_size {} is no released version's size ({} or {})", name, size,
           released_sizes<T>::size[0], released_sizes<T>::size[released_sizes<T>::count - 1]);
  }
  return size;
}

template <typename T>
void require_struct(const T* p, std::string_view name) {
  require_arg(p, name);
  (void)checked_struct_size<T>(p->struct_size, first_version_size<T>, name);
}

// Copies the caller's prefix over `defaults_then_result`.
template <typename T>
void copy_versioned_struct(T& defaults_then_result, const T& user, std::string_view name,
                           std::size_t first = first_version_size<T>) {
  const std::size_t size = checked_struct_size<T>(user.struct_size, first, name);
  std::memcpy(static_cast<void*>(&defaults_then_result), &user, size);
  defaults_then_result.struct_size = sizeof(T);
}

// Reads a struct the caller hands in: the fields it knows over `defaults`
// (the values a field takes when it is not there, e.g. an empty signature).
template <typename T>
T read_versioned(const T* user, const T& defaults, std::string_view name) {
  if (user == nullptr) fail(PEAT_STATUS_INVALID_ARGUMENT, "argument '{}' is NULL", name);
  T result = defaults;
  copy_versioned_struct(result, *user, name);
  return result;
}

// Reads a caller's options struct: `init` (the peat_<x>_options_init
// function or its lib/ counterpart) fills the defaults; a NULL `user` means
// "all defaults", otherwise its fields are copied over them.
template <typename T, typename Init>
T read_options(const T* user, std::string_view name, Init init) {
  T result;
  init(&result);
  if (user == nullptr) return result;
  copy_versioned_struct(result, *user, name, sizeof(uint32_t));
  return result;
}

// Writes an output struct the caller sized: only the prefix its struct_size
// covers, which keeps the caller's struct_size.
template <typename T>
void write_versioned(T* out, const T& value, std::string_view name) {
  if (out == nullptr) fail(PEAT_STATUS_INVALID_ARGUMENT, "argument '{}' is NULL", name);
  const uint32_t size = static_cast<uint32_t>(checked_struct_size<T>(out->struct_size, first_version_size<T>, name));
  std::memcpy(static_cast<void*>(out), &value, size);
  out->struct_size = size;
}

// Updates an in-out struct (read the caller's prefix over `defaults`, change
// it with `update`, write the prefix back), checking the size before anything.
template <typename T, typename Update>
void update_versioned(T* inout, const T& defaults, std::string_view name, Update&& update) {
  T value = read_versioned(inout, defaults, name);
  update(value);
  write_versioned(inout, value, name);
}

}  // namespace peat::impl
