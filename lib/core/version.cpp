#include "lib/core/version.hpp"

#define PEAT_STR2(x) #x
#define PEAT_STR(x) PEAT_STR2(x)

namespace peat::impl {
const char* version_string() noexcept {
  return PEAT_STR(PEAT_VERSION_MAJOR) "." PEAT_STR(PEAT_VERSION_MINOR) "." PEAT_STR(PEAT_VERSION_PATCH);
}
}  // namespace peat::impl
