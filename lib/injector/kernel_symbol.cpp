// The one dlopen loader of candidate kernels (see kernel_symbol.hpp).
#include "lib/injector/kernel_symbol.hpp"

#include "lib/core/error.hpp"

#include <dlfcn.h>

#include <cstring>
#include <mutex>
#include <string>

namespace peat::impl::injector {

KernelSymbol load_kernel_symbol(std::string_view spec) {
  const std::size_t colon = spec.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == spec.size())
    fail(PEAT_STATUS_INVALID_ARGUMENT, "candidate '{}' is not of the form 'path/to/libx.so:symbol'", spec);
  const std::string path(spec.substr(0, colon)), symbol(spec.substr(colon + 1));
  static std::mutex mutex;  // dlerror() is per thread, but keep open/lookup/report together
  std::lock_guard lock(mutex);
  ::dlerror();
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    fail(PEAT_STATUS_NOT_FOUND, "cannot open candidate library '{}': {}", path, why ? why : "unknown reason");
  }
  ::dlerror();
  void* address = ::dlsym(handle, symbol.c_str());
  if (address == nullptr) {
    const char* why = ::dlerror();
    const std::string reason = why ? why : "the symbol is NULL";
    ::dlclose(handle);
    fail(PEAT_STATUS_NOT_FOUND, "candidate library '{}' has no symbol '{}': {}", path, symbol, reason);
  }
  KernelSymbol out;
  static_assert(sizeof(out.fn) == sizeof(address));
  std::memcpy(&out.fn, &address, sizeof(out.fn));
  out.library = handle;
  return out;
}

void close_kernel_library(void* library) noexcept {
  if (library != nullptr) ::dlclose(library);
}

}  // namespace peat::impl::injector
