#include "lib/backend/backend.hpp"

#include "lib/core/error.hpp"

#include <fmt/format.h>

namespace peat::impl::backend {

void Backend::check(peat_status_t status, std::string_view what) const {
  if (status == PEAT_STATUS_OK) return;
  const char* detail = api_->last_error ? api_->last_error() : nullptr;
  fail(status, "backend '{}': {}: {}", name(), what, (detail && *detail) ? detail : "no detail given");
}

int32_t Backend::device_count() const {
  int32_t count = 0;
  check(api_->device_count(&count), "device_count");
  return count;
}

peat_backend_device_info_t Backend::device_info(int32_t device) const {
  const int32_t count = device_count();
  if (device < 0 || device >= count)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "backend '{}': device {} is out of range (it has {} devices)", name(),
         device, count);
  peat_backend_device_info_t info{};
  info.struct_size = sizeof(info);
  check(api_->device_info(device, &info), fmt::format("device_info({})", device));
  info.name[sizeof(info.name) - 1] = '\0';
  info.vendor[sizeof(info.vendor) - 1] = '\0';
  return info;
}

std::string validate_table(const peat_backend_api_t* api, uint32_t abi_major) {
  if (api == nullptr) return fmt::format("peat_backend_get_api({}) returned NULL", abi_major);
  if (api->abi_major != abi_major)
    return fmt::format("plugin speaks backend ABI {}.{}, this library speaks {}.{}", api->abi_major,
                       api->abi_minor, PEAT_BACKEND_ABI_MAJOR, PEAT_BACKEND_ABI_MINOR);
  // The ABI 1.0 table ends after intercept_uninstall; a smaller table is malformed.
  constexpr std::size_t kMinimumSize = offsetof(peat_backend_api_t, intercept_uninstall) + sizeof(void*);
  if (api->struct_size < kMinimumSize)
    return fmt::format("table struct_size {} is smaller than the ABI {}.0 table ({} bytes)", api->struct_size,
                       abi_major, kMinimumSize);
  if (api->name == nullptr || api->name[0] == '\0') return "table has no name";
  const std::pair<const void*, const char*> required[] = {
      {reinterpret_cast<const void*>(api->last_error), "last_error"},
      {reinterpret_cast<const void*>(api->device_count), "device_count"},
      {reinterpret_cast<const void*>(api->device_info), "device_info"},
      {reinterpret_cast<const void*>(api->alloc), "alloc"},
      {reinterpret_cast<const void*>(api->free), "free"},
      {reinterpret_cast<const void*>(api->copy), "copy"},
      {reinterpret_cast<const void*>(api->synchronize), "synchronize"},
  };
  for (const auto& [pointer, entry] : required)
    if (pointer == nullptr) return fmt::format("required entry '{}' is NULL", entry);
  return {};
}

}  // namespace peat::impl::backend
