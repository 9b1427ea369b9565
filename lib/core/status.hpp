// Names of the status codes (peat_status_string).
#pragma once
#include <peat/core.h>

namespace peat::impl {
const char* status_name(peat_status_t status) noexcept;
}
