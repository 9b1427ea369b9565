// peat/peat.hpp — a thin, header-only C++17 layer over the C API (as oneDNN's
// dnnl.hpp is over dnnl.h): RAII handles that destroy themselves, and
// exceptions instead of status codes. It adds no behaviour and no exported
// symbols; every call forwards to one C function.
//
//   peat::session s;                       // peat_session_create(NULL, ...)
//   uint32_t op = s.intern_op("gemm");     // throws peat::error on failure
//
// peat::error carries the status and the library's message. Handles are
// movable, not copyable.
#ifndef PEAT_PEAT_HPP
#define PEAT_PEAT_HPP

#include <peat/peat.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace peat {

// Thrown by every wrapper when the C call returns a status other than OK.
class error : public std::runtime_error {
 public:
  error(peat_status_t status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  peat_status_t status() const noexcept { return status_; }

 private:
  peat_status_t status_;
};

// Throws peat::error with the thread's last-error message unless status is OK.
inline void check(peat_status_t status) {
  if (status != PEAT_STATUS_OK) {
    const char* message = peat_last_error_message();
    throw error(status, std::string(peat_status_string(status)) + ": " + (message ? message : ""));
  }
}

// Version of the loaded library; throws if it is not the one this header describes
// (major and minor must match; the patch level may differ).
inline void require_compatible_library() {
  const uint32_t loaded = peat_version_number();
  if (loaded / 100 != PEAT_VERSION_NUMBER / 100)
    throw error(PEAT_STATUS_VERSION_MISMATCH, "libpeat " + std::string(peat_version_string()) +
                                                  " does not match the header's version");
}

// A non-owning reference to a backend (backends live as long as the process).
class backend {
 public:
  explicit backend(peat_backend_t* handle) : handle_(handle) {}
  static backend get(const char* name) {
    peat_backend_t* handle = nullptr;
    check(peat_backend_get(name, &handle));
    return backend(handle);
  }
  const char* name() const { return peat_backend_name(handle_); }
  int32_t device_count() const {
    int32_t count = 0;
    check(peat_backend_device_count(handle_, &count));
    return count;
  }
  peat_backend_device_info_t device_info(int32_t device) const {
    peat_backend_device_info_t info{};
    info.struct_size = sizeof(info);
    check(peat_backend_device_info(handle_, device, &info));
    return info;
  }
  peat_backend_t* get() const noexcept { return handle_; }

 private:
  peat_backend_t* handle_;
};

// Owns a peat_session_t.
class session {
 public:
  session() : session(nullptr) {}
  explicit session(const peat_session_options_t* options) { check(peat_session_create(options, &handle_)); }
  ~session() { peat_session_destroy(handle_); }
  session(session&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  session& operator=(session&& other) noexcept {
    if (this != &other) {
      peat_session_destroy(handle_);
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  session(const session&) = delete;
  session& operator=(const session&) = delete;

  uint32_t intern_op(const char* name) {
    uint32_t op = 0;
    check(peat_session_intern_op(handle_, name, &op));
    return op;
  }
  std::string op_name(uint32_t op) const {
    const char* name = nullptr;
    check(peat_session_op_name(handle_, op, &name));
    return name;
  }
  uint64_t next_call(uint32_t op) {
    uint64_t call = 0;
    check(peat_session_next_call(handle_, op, &call));
    return call;
  }
  uint64_t call_count(uint32_t op) const {
    uint64_t count = 0;
    check(peat_session_call_count(handle_, op, &count));
    return count;
  }
  void set_step(int64_t step) { check(peat_session_set_step(handle_, step)); }
  int64_t step() const {
    int64_t step = 0;
    check(peat_session_step(handle_, &step));
    return step;
  }
  void set_phase(peat_phase_t phase) { check(peat_session_set_phase(handle_, phase)); }
  void log(peat_log_level_t level, const char* message) { check(peat_session_log(handle_, level, message)); }
  backend get_backend() const {
    peat_backend_t* handle = nullptr;
    check(peat_session_backend(handle_, &handle));
    return backend(handle);
  }

  peat_session_t* get() const noexcept { return handle_; }

 private:
  peat_session_t* handle_ = nullptr;
};

}  // namespace peat

#endif  // PEAT_PEAT_HPP
