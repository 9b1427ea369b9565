// Loading a peat_kernel_fn from a shared object named "path/to/libx.so:symbol"
// (the injector's candidates, and playback's). One loader for the library.
#pragma once

#include <peat/injector.h>

#include <string_view>

namespace peat::impl::injector {

struct KernelSymbol {
  peat_kernel_fn fn = nullptr;
  void* library = nullptr;  // dlopen handle; release with close_kernel_library
};

// Splits `spec` at its last ':', opens the library with dlopen(RTLD_NOW |
// RTLD_LOCAL) and looks the symbol up. Throws INVALID_ARGUMENT for a malformed
// spec, NOT_FOUND (with dlerror()'s text) for a library that cannot be opened
// or a missing symbol. Thread-safe.
KernelSymbol load_kernel_symbol(std::string_view spec);

// dlclose of a handle from load_kernel_symbol; NULL is a no-op.
void close_kernel_library(void* library) noexcept;

}  // namespace peat::impl::injector
