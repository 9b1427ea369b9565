#include "lib/core/status.hpp"

namespace peat::impl {

const char* status_name(peat_status_t status) noexcept {
  switch (status) {
    case PEAT_STATUS_OK: return "ok";
    case PEAT_STATUS_INVALID_ARGUMENT: return "invalid argument";
    case PEAT_STATUS_OUT_OF_MEMORY: return "out of memory";
    case PEAT_STATUS_UNAVAILABLE: return "unavailable";
    case PEAT_STATUS_UNSUPPORTED: return "unsupported";
    case PEAT_STATUS_VERSION_MISMATCH: return "version mismatch";
    case PEAT_STATUS_SHAPE_MISMATCH: return "shape mismatch";
    case PEAT_STATUS_NOT_FOUND: return "not found";
    case PEAT_STATUS_IO_ERROR: return "I/O error";
    case PEAT_STATUS_CORRUPT_DATA: return "corrupt data";
    case PEAT_STATUS_BUFFER_TOO_SMALL: return "buffer too small";
    case PEAT_STATUS_BAD_STATE: return "bad state";
    case PEAT_STATUS_CANCELLED: return "cancelled";
    case PEAT_STATUS_TIMEOUT: return "timeout";
    case PEAT_STATUS_CALLBACK_FAILED: return "callback failed";
    case PEAT_STATUS_INTERNAL: return "internal error";
    default: return "unknown status";
  }
}

}  // namespace peat::impl
