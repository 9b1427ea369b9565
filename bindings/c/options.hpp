// Checks of the structs a caller hands the C layer. Reading versioned option
// structs (read_options) is the core's rule, in core/versioned_struct.hpp,
// which lib/ uses too.
#pragma once

#include "barrier.hpp"
#include "core/error.hpp"
#include "core/versioned_struct.hpp"

#include <cstdint>
#include <cstring>
#include <string_view>

namespace peat {

// Output structs the library fills (record info, results): the caller sets
// struct_size, which must cover this library's whole struct.
template <typename T>
void require_out_struct(const T* out, const char* name) {
  require_arg(out, name);
  if (out->struct_size < sizeof(T))
    fail(PEAT_STATUS_VERSION_MISMATCH, "{}->struct_size is {}; this library needs {} (set it to sizeof)", name,
         out->struct_size, sizeof(T));
}

// In-out structs the library updates in place (a peat_detect_context_t the
// caller initialised and the library completes): struct_size must be ours.
template <typename T>
void require_own_struct(const T* p, const char* name, const char* init) {
  require_arg(p, name);
  if (p->struct_size != sizeof(T))
    fail(PEAT_STATUS_VERSION_MISMATCH, "{}->struct_size is {}; this library's is {} (call {})", name, p->struct_size,
         sizeof(T), init);
}

}  // namespace peat
