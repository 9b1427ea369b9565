// The thread-local last-error message. One std::string per thread; the pointer
// handed out stays valid until the same thread's next failing call overwrites it.
#include "lib/core/error.hpp"

namespace peat::impl {
namespace {
thread_local std::string t_last_error;
}

void set_last_error(std::string message) { t_last_error = std::move(message); }
const char* last_error() noexcept { return t_last_error.c_str(); }
void clear_last_error() noexcept { t_last_error.clear(); }

}  // namespace peat::impl
