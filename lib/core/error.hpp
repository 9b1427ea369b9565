// peat::impl::Error — the one exception type the C++ core throws. The C layer
// (its exception barrier, c_call) turns it into a peat_status_t plus the thread's
// last-error message; nothing else in the library reports errors.
#pragma once

#include <peat/core.h>

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace peat::impl {

class Error : public std::runtime_error {
 public:
  Error(peat_status_t status, std::string message)
      : std::runtime_error(std::move(message)), status_(status) {}
  peat_status_t status() const noexcept { return status_; }

 private:
  peat_status_t status_;
};

// Throws peat::impl::Error with a fmt-formatted message.
template <typename... Args>
[[noreturn]] void fail(peat_status_t status, fmt::format_string<Args...> format, Args&&... args) {
  throw Error(status, fmt::format(format, std::forward<Args>(args)...));
}

// Thread-local last-error storage behind peat_last_error_message().
void set_last_error(std::string message);
const char* last_error() noexcept;
void clear_last_error() noexcept;

}  // namespace peat::impl
