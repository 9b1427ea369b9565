// The version of this build, as the C API reports it.
#pragma once
#include <peat/core.h>

namespace peat::impl {
constexpr uint32_t kVersionNumber = PEAT_VERSION_NUMBER;
constexpr uint32_t kAbiVersion = PEAT_ABI_VERSION;
const char* version_string() noexcept;
}  // namespace peat::impl
