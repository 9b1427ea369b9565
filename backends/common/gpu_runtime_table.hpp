// gpu_runtime_table.hpp — the host side of a GPU backend plugin, written once
// for CUDA and HIP. The two runtimes have the same shape (cudaMalloc/hipMalloc,
// cudaMemcpyAsync/hipMemcpyAsync, events, streams), so each plugin supplies a
// small traits struct `R` naming its runtime's calls and error codes, and this
// header builds the whole peat_backend_api_t from it.
//
// R must provide:
//   using error_t, stream_t, event_t;  static constexpr error_t success;
//   static constexpr const char* name;  static constexpr int32_t device_type;
//   static const char* vendor;
//   static error_t device_count(int*);  static error_t device_props(int, DeviceProps&);
//   static error_t set_device(int), malloc(void**, size_t), free(void*),
//                  memcpy_async(void*, const void*, size_t, stream_t),
//                  stream_sync(stream_t), device_sync(),
//                  event_create(event_t*), event_record(event_t, stream_t),
//                  event_sync(event_t), event_destroy(event_t);
//   static void clear_error();
//   static const char* error_string(error_t), *error_name(error_t);
//   static peat_status_t classify(error_t);  // runtime error -> PEAT status
//   static bool no_device(error_t);          // "driver present, no device"
//   static bool serves(DLDevice);            // device types the copy accepts
// C++17 (this header is compiled in plugin translation units only).
#pragma once

#include <peat/backend.h>

#include <fmt/format.h>

#include <cstdio>

#include <algorithm>
#include <cstring>
#include <string>

namespace peat::gpu {

struct DeviceProps {
  char name[128];
  int major = 0, minor = 0;
  uint64_t total_memory = 0;
  uint32_t compute_units = 0;
};

// Copies a NUL-terminated name into a fixed buffer, truncating if needed.
inline void copy_name(char* dst, std::size_t capacity, const char* src) {
  const std::size_t n = strnlen(src, capacity - 1);
  std::memcpy(dst, src, n);
  dst[n] = '\0';
}

template <typename R>
struct RuntimeTable {
  static inline thread_local std::string error_text;

  static peat_status_t fail(peat_status_t status, std::string message) {
    error_text = fmt::format("{}: {}", R::name, std::move(message));
    return status;
  }

  static peat_status_t check(typename R::error_t error, const char* what) {
    if (error == R::success) return PEAT_STATUS_OK;
    R::clear_error();
    return fail(R::classify(error), fmt::format("{}: {} ({})", what, R::error_string(error), R::error_name(error)));
  }

  static const char* last_error() { return error_text.c_str(); }

  static peat_status_t device_count(int32_t* out_count) {
    if (out_count == nullptr) return fail(PEAT_STATUS_INVALID_ARGUMENT, "out_count is NULL");
    int count = 0;
    const auto error = R::device_count(&count);
    if (R::no_device(error)) {
      R::clear_error();
      *out_count = 0;  // the runtime works but sees no device: zero devices, not an error
      return PEAT_STATUS_OK;
    }
    if (const peat_status_t status = check(error, "device count"); status != PEAT_STATUS_OK) return status;
    *out_count = count;
    return PEAT_STATUS_OK;
  }

  static peat_status_t check_device(int32_t device) {
    int32_t count = 0;
    if (const peat_status_t status = device_count(&count); status != PEAT_STATUS_OK) return status;
    if (device < 0 || device >= count)
      return fail(PEAT_STATUS_INVALID_ARGUMENT, fmt::format("device {} does not exist ({} present)", device, count));
    return PEAT_STATUS_OK;
  }

  static peat_status_t device_info(int32_t device, peat_backend_device_info_t* out) {
    if (out == nullptr) return fail(PEAT_STATUS_INVALID_ARGUMENT, "out is NULL");
    if (const peat_status_t status = check_device(device); status != PEAT_STATUS_OK) return status;
    DeviceProps props{};
    if (const peat_status_t status = check(R::device_props(device, props), "device properties");
        status != PEAT_STATUS_OK)
      return status;
    peat_backend_device_info_t info{};
    info.struct_size = out->struct_size;
    info.device_type = R::device_type;
    info.device_id = device;
    fmt::format_to_n(info.name, sizeof(info.name) - 1, "{} ({}.{})", props.name, props.major, props.minor);
    fmt::format_to_n(info.vendor, sizeof(info.vendor) - 1, "{}", R::vendor);
    info.total_memory_bytes = props.total_memory;
    info.compute_units = props.compute_units;
    std::memcpy(out, &info, std::min<std::size_t>(out->struct_size, sizeof(info)));
    return PEAT_STATUS_OK;
  }

  static peat_status_t alloc(int32_t device, size_t bytes, void** out_ptr) {
    if (out_ptr == nullptr) return fail(PEAT_STATUS_INVALID_ARGUMENT, "out_ptr is NULL");
    if (const peat_status_t status = check_device(device); status != PEAT_STATUS_OK) return status;
    if (const peat_status_t status = check(R::set_device(device), "set device"); status != PEAT_STATUS_OK)
      return status;
    return check(R::malloc(out_ptr, bytes == 0 ? 1 : bytes), "malloc");
  }

  static peat_status_t free(int32_t device, void* ptr) {
    if (ptr == nullptr) return PEAT_STATUS_OK;
    if (const peat_status_t status = check(R::set_device(device), "set device"); status != PEAT_STATUS_OK)
      return status;
    return check(R::free(ptr), "free");
  }

  static peat_status_t copy(void* dst, DLDevice dst_device, const void* src, DLDevice src_device, size_t bytes,
                            void* stream) {
    if (!R::serves(dst_device) || !R::serves(src_device))
      return fail(PEAT_STATUS_UNSUPPORTED, fmt::format("cannot copy between device types {} and {}",
                                                       static_cast<int>(src_device.device_type),
                                                       static_cast<int>(dst_device.device_type)));
    if (bytes == 0) return PEAT_STATUS_OK;
    if (dst == nullptr || src == nullptr) return fail(PEAT_STATUS_INVALID_ARGUMENT, "NULL pointer with bytes > 0");
    // Unified addressing: the runtime infers the direction from the pointers.
    return check(R::memcpy_async(dst, src, bytes, static_cast<typename R::stream_t>(stream)), "memcpy async");
  }

  static peat_status_t synchronize(int32_t device, void* stream) {
    if (stream != nullptr) return check(R::stream_sync(static_cast<typename R::stream_t>(stream)), "stream sync");
    if (const peat_status_t status = check(R::set_device(device), "set device"); status != PEAT_STATUS_OK)
      return status;
    return check(R::device_sync(), "device sync");
  }

  // Staging: an async copy followed by an event; the ticket is the event,
  // which stage_wait synchronises on and destroys.
  static peat_status_t stage_to_host_async(void* host_dst, const void* src, DLDevice src_device, size_t bytes,
                                           void* stream, void** out_ticket) {
    if (out_ticket == nullptr) return fail(PEAT_STATUS_INVALID_ARGUMENT, "out_ticket is NULL");
    if (const peat_status_t status = copy(host_dst, DLDevice{kDLCPU, 0}, src, src_device, bytes, stream);
        status != PEAT_STATUS_OK)
      return status;
    typename R::event_t event{};
    if (const peat_status_t status = check(R::event_create(&event), "event create"); status != PEAT_STATUS_OK)
      return status;
    if (const peat_status_t status = check(R::event_record(event, static_cast<typename R::stream_t>(stream)), "event record");
        status != PEAT_STATUS_OK) {
      (void)R::event_destroy(event);
      return status;
    }
    *out_ticket = static_cast<void*>(event);
    return PEAT_STATUS_OK;
  }

  static peat_status_t stage_wait(void* ticket) {
    if (ticket == nullptr) return fail(PEAT_STATUS_INVALID_ARGUMENT, "ticket is NULL");
    auto event = static_cast<typename R::event_t>(ticket);
    const peat_status_t status = check(R::event_sync(event), "event sync");
    (void)R::event_destroy(event);
    return status;
  }

  static peat_backend_api_t make() {
    peat_backend_api_t table{};
    table.struct_size = sizeof(peat_backend_api_t);
    table.abi_major = PEAT_BACKEND_ABI_MAJOR;
    table.abi_minor = PEAT_BACKEND_ABI_MINOR;
    table.name = R::name;
    table.device_type = R::device_type;
    table.last_error = last_error;
    table.device_count = device_count;
    table.device_info = device_info;
    table.alloc = alloc;
    table.free = free;
    table.copy = copy;
    table.synchronize = synchronize;
    table.stage_to_host_async = stage_to_host_async;
    table.stage_wait = stage_wait;
    return table;
  }
};

}  // namespace peat::gpu
