// C entry points of peat/backend.h (registry): check, convert, forward.
#include <peat/backend.h>

#include "lib/backend/backend.hpp"
#include "bindings/c/barrier.hpp"

using namespace peat::impl;  // the C layer forwards to the core (lib/)

namespace {
peat_backend_t* as_handle(backend::Backend& backend) { return static_cast<peat_backend_t*>(&backend); }
}  // namespace

extern "C" {

PEAT_API peat_status_t peat_backend_get(const char* name, peat_backend_t** out_backend) {
  return c_get(__func__, name, "name", out_backend, "out_backend",
                     [&](auto&) { return as_handle(backend::Registry::instance().get(name)); });
}

PEAT_API peat_status_t peat_backend_load_file(const char* path, peat_backend_t** out_backend) {
  return c_get(__func__, path, "path", out_backend, "out_backend",
                     [&](auto&) { return as_handle(backend::Registry::instance().load_file(path)); });
}

PEAT_API peat_status_t peat_backend_for_device(int32_t device_type, peat_backend_t** out_backend) {
  return c_call(__func__, [&] {
    require_arg(out_backend, "out_backend");
    *out_backend = as_handle(backend::Registry::instance().for_device(device_type));
  });
}

PEAT_API const char* peat_backend_name(const peat_backend_t* backend) { return backend ? backend->name() : nullptr; }
PEAT_API const peat_backend_api_t* peat_backend_table(const peat_backend_t* backend) {
  return backend ? &backend->api() : nullptr;
}
PEAT_API const char* peat_backend_path(const peat_backend_t* backend) {
  return backend ? backend->path().c_str() : nullptr;
}

PEAT_API peat_status_t peat_backend_device_count(const peat_backend_t* backend, int32_t* out_count) {
  return c_get(__func__, backend, "backend", out_count, "out_count", [](auto& b) { return b.device_count(); });
}

PEAT_API peat_status_t peat_backend_device_info(const peat_backend_t* backend, int32_t device,
                                                peat_backend_device_info_t* out) {
  return c_get_struct(__func__, backend, "backend", out, [&](auto& b) { return b.device_info(device); });
}

}  // extern "C"
