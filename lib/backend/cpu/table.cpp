// The built-in CPU backend's table: host memory, and the numeric entries of
// signature.cpp and inject.cpp. It fills the same table a plugin does, so the
// conformance tests treat it like any other backend.
#include "lib/backend/cpu/cpu.hpp"

#include "lib/backend/backend.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

namespace peat::impl::backend::cpu {
namespace {

thread_local std::string t_cpu_error;

peat_status_t cpu_fail(peat_status_t status, std::string message) {
  t_cpu_error = std::move(message);
  return status;
}

std::string cpu_model_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  }
  return "host CPU";
}

const char* cpu_last_error() { return t_cpu_error.c_str(); }

peat_status_t cpu_device_count(int32_t* out_count) {
  if (out_count == nullptr) return cpu_fail(PEAT_STATUS_INVALID_ARGUMENT, "out_count is NULL");
  *out_count = 1;
  return PEAT_STATUS_OK;
}

peat_status_t cpu_device_info(int32_t device, peat_backend_device_info_t* out) {
  if (out == nullptr) return cpu_fail(PEAT_STATUS_INVALID_ARGUMENT, "out is NULL");
  if (device != 0) return cpu_fail(PEAT_STATUS_INVALID_ARGUMENT, fmt::format("device {} does not exist", device));
  if (out->struct_size < offsetof(peat_backend_device_info_t, device_id) + sizeof(int32_t))
    return cpu_fail(PEAT_STATUS_VERSION_MISMATCH, fmt::format("info struct_size {} is too small", out->struct_size));
  // Fill a full local copy, then hand back as much as the caller's struct holds.
  peat_backend_device_info_t info{};
  info.struct_size = out->struct_size;
  info.device_type = kDLCPU;
  info.device_id = 0;
  fmt::format_to_n(info.name, sizeof(info.name) - 1, "{}", cpu_model_name());
  fmt::format_to_n(info.vendor, sizeof(info.vendor) - 1, "host");
  const long pages = ::sysconf(_SC_PHYS_PAGES), page_size = ::sysconf(_SC_PAGESIZE);
  info.total_memory_bytes = (pages > 0 && page_size > 0) ? static_cast<uint64_t>(pages) * page_size : 0;
  info.compute_units = std::thread::hardware_concurrency();
  std::memcpy(out, &info, std::min<std::size_t>(out->struct_size, sizeof(info)));
  return PEAT_STATUS_OK;
}

peat_status_t cpu_alloc(int32_t device, size_t bytes, void** out_ptr) {
  if (out_ptr == nullptr) return cpu_fail(PEAT_STATUS_INVALID_ARGUMENT, "out_ptr is NULL");
  if (device != 0) return cpu_fail(PEAT_STATUS_INVALID_ARGUMENT, fmt::format("device {} does not exist", device));
  // 64-byte alignment (a cache line, and any SIMD width PEAT uses).
  const size_t rounded = ((bytes + 63) / 64) * 64;
  if (rounded < bytes) return cpu_fail(PEAT_STATUS_OUT_OF_MEMORY, fmt::format("{} bytes is too large", bytes));
  void* ptr = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  if (ptr == nullptr) return cpu_fail(PEAT_STATUS_OUT_OF_MEMORY, fmt::format("cannot allocate {} bytes", bytes));
  *out_ptr = ptr;
  return PEAT_STATUS_OK;
}

peat_status_t cpu_free(int32_t /*device*/, void* ptr) {
  std::free(ptr);
  return PEAT_STATUS_OK;
}

peat_status_t cpu_copy(void* dst, DLDevice dst_device, const void* src, DLDevice src_device, size_t bytes,
                       void* /*stream*/) {
  if (!is_host(dst_device) || !is_host(src_device))
    return cpu_fail(PEAT_STATUS_UNSUPPORTED,
                    fmt::format("the CPU backend copies host memory only (device types {} -> {})",
                                static_cast<int>(src_device.device_type), static_cast<int>(dst_device.device_type)));
  if (bytes == 0) return PEAT_STATUS_OK;
  if (dst == nullptr || src == nullptr) return cpu_fail(PEAT_STATUS_INVALID_ARGUMENT, "NULL pointer with bytes > 0");
  std::memmove(dst, src, bytes);
  return PEAT_STATUS_OK;
}

peat_status_t cpu_synchronize(int32_t /*device*/, void* /*stream*/) { return PEAT_STATUS_OK; }

// Host memory is already host memory: staging is a copy that is complete when
// it returns; the ticket is a non-NULL token.
int g_ready_ticket;
peat_status_t cpu_stage_to_host_async(void* host_dst, const void* src, DLDevice src_device, size_t bytes,
                                      void* stream, void** out_ticket) {
  if (out_ticket == nullptr) return cpu_fail(PEAT_STATUS_INVALID_ARGUMENT, "out_ticket is NULL");
  const peat_status_t status = cpu_copy(host_dst, DLDevice{kDLCPU, 0}, src, src_device, bytes, stream);
  if (status != PEAT_STATUS_OK) return status;
  *out_ticket = &g_ready_ticket;
  return PEAT_STATUS_OK;
}

peat_status_t cpu_stage_wait(void* ticket) {
  if (ticket != &g_ready_ticket) return cpu_fail(PEAT_STATUS_INVALID_ARGUMENT, "unknown staging ticket");
  return PEAT_STATUS_OK;
}

const peat_backend_api_t kCpuTable = [] {
  peat_backend_api_t table{};
  table.struct_size = sizeof(peat_backend_api_t);
  table.abi_major = PEAT_BACKEND_ABI_MAJOR;
  table.abi_minor = PEAT_BACKEND_ABI_MINOR;
  table.name = "cpu";
  table.device_type = kDLCPU;
  table.last_error = cpu_last_error;
  table.device_count = cpu_device_count;
  table.device_info = cpu_device_info;
  table.alloc = cpu_alloc;
  table.free = cpu_free;
  table.copy = cpu_copy;
  table.synchronize = cpu_synchronize;
  table.stage_to_host_async = cpu_stage_to_host_async;
  table.stage_wait = cpu_stage_wait;
  table.signature_accumulate = signature_accumulate;  // signature.cpp
  table.inject = inject;                              // inject.cpp
  table.intercept_install = nullptr;     // the CPU has no kernels to intercept
  table.intercept_uninstall = nullptr;
  return table;
}();

}  // namespace

const peat_backend_api_t* table() noexcept { return &kCpuTable; }

void set_error(std::string message) noexcept { t_cpu_error = std::move(message); }

}  // namespace peat::impl::backend::cpu

namespace peat::impl::backend {

const peat_backend_api_t* cpu_backend_table() noexcept { return cpu::table(); }

}  // namespace peat::impl::backend
