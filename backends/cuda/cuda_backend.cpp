// The CUDA backend plugin: devices, memory, copies, streams and asynchronous
// device-to-host staging through the CUDA runtime. The numeric entries
// (signature, injection) are filled by the single-source kernels of
// backends/common once they are compiled for CUDA; until then they are NULL and
// the registry reports them as unsupported.
#include <peat/backend.h>

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace {

thread_local std::string t_error;

peat_status_t fail(peat_status_t status, std::string message) {
  t_error = std::move(message);
  return status;
}

// Maps a CUDA runtime error to a PEAT status, with the runtime's own words.
peat_status_t from_cuda(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return PEAT_STATUS_OK;
  cudaGetLastError();  // clear the sticky-free error state for the next call
  peat_status_t status = PEAT_STATUS_INTERNAL;
  switch (error) {
    case cudaErrorInsufficientDriver:
    case cudaErrorNoDevice:
    case cudaErrorInitializationError:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
    case cudaErrorStubLibrary:
      status = PEAT_STATUS_UNAVAILABLE;
      break;
    case cudaErrorMemoryAllocation: status = PEAT_STATUS_OUT_OF_MEMORY; break;
    case cudaErrorInvalidValue:
    case cudaErrorInvalidDevice:
    case cudaErrorInvalidDevicePointer: status = PEAT_STATUS_INVALID_ARGUMENT; break;
    default: break;
  }
  return fail(status, fmt::format("{}: {} ({})", what, cudaGetErrorString(error), cudaGetErrorName(error)));
}

const char* cuda_last_error() { return t_error.c_str(); }

peat_status_t cuda_device_count(int32_t* out_count) {
  if (out_count == nullptr) return fail(PEAT_STATUS_INVALID_ARGUMENT, "out_count is NULL");
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error == cudaErrorNoDevice) {
    cudaGetLastError();
    *out_count = 0;  // a driver without devices: zero devices, not an error
    return PEAT_STATUS_OK;
  }
  if (const peat_status_t status = from_cuda(error, "cudaGetDeviceCount"); status != PEAT_STATUS_OK) return status;
  *out_count = count;
  return PEAT_STATUS_OK;
}

peat_status_t check_device(int32_t device) {
  int32_t count = 0;
  if (const peat_status_t status = cuda_device_count(&count); status != PEAT_STATUS_OK) return status;
  if (device < 0 || device >= count)
    return fail(PEAT_STATUS_INVALID_ARGUMENT, fmt::format("CUDA device {} does not exist ({} present)", device, count));
  return PEAT_STATUS_OK;
}

peat_status_t cuda_device_info(int32_t device, peat_backend_device_info_t* out) {
  if (out == nullptr) return fail(PEAT_STATUS_INVALID_ARGUMENT, "out is NULL");
  if (const peat_status_t status = check_device(device); status != PEAT_STATUS_OK) return status;
  cudaDeviceProp prop{};
  if (const peat_status_t status = from_cuda(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
      status != PEAT_STATUS_OK)
    return status;
  peat_backend_device_info_t info{};
  info.struct_size = out->struct_size;
  info.device_type = kDLCUDA;
  info.device_id = device;
  fmt::format_to_n(info.name, sizeof(info.name) - 1, "{} (sm_{}{})", prop.name, prop.major, prop.minor);
  fmt::format_to_n(info.vendor, sizeof(info.vendor) - 1, "NVIDIA");
  info.total_memory_bytes = prop.totalGlobalMem;
  info.compute_units = static_cast<uint32_t>(prop.multiProcessorCount);
  std::memcpy(out, &info, std::min<std::size_t>(out->struct_size, sizeof(info)));
  return PEAT_STATUS_OK;
}

peat_status_t cuda_alloc(int32_t device, size_t bytes, void** out_ptr) {
  if (out_ptr == nullptr) return fail(PEAT_STATUS_INVALID_ARGUMENT, "out_ptr is NULL");
  if (const peat_status_t status = check_device(device); status != PEAT_STATUS_OK) return status;
  if (const peat_status_t status = from_cuda(cudaSetDevice(device), "cudaSetDevice"); status != PEAT_STATUS_OK)
    return status;
  return from_cuda(cudaMalloc(out_ptr, bytes == 0 ? 1 : bytes), "cudaMalloc");
}

peat_status_t cuda_free(int32_t device, void* ptr) {
  if (ptr == nullptr) return PEAT_STATUS_OK;
  if (const peat_status_t status = from_cuda(cudaSetDevice(device), "cudaSetDevice"); status != PEAT_STATUS_OK)
    return status;
  return from_cuda(cudaFree(ptr), "cudaFree");
}

bool is_cuda_or_host(DLDevice device) {
  switch (device.device_type) {
    case kDLCPU: case kDLCUDA: case kDLCUDAHost: case kDLCUDAManaged: return true;
    default: return false;
  }
}

peat_status_t cuda_copy(void* dst, DLDevice dst_device, const void* src, DLDevice src_device, size_t bytes,
                        void* stream) {
  if (!is_cuda_or_host(dst_device) || !is_cuda_or_host(src_device))
    return fail(PEAT_STATUS_UNSUPPORTED, fmt::format("the CUDA backend cannot copy between device types {} and {}",
                                                     static_cast<int>(src_device.device_type),
                                                     static_cast<int>(dst_device.device_type)));
  if (bytes == 0) return PEAT_STATUS_OK;
  if (dst == nullptr || src == nullptr) return fail(PEAT_STATUS_INVALID_ARGUMENT, "NULL pointer with bytes > 0");
  // Unified addressing: the runtime infers the direction from the pointers.
  return from_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, static_cast<cudaStream_t>(stream)),
                   "cudaMemcpyAsync");
}

peat_status_t cuda_synchronize(int32_t device, void* stream) {
  if (stream != nullptr) return from_cuda(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), "cudaStreamSynchronize");
  if (const peat_status_t status = from_cuda(cudaSetDevice(device), "cudaSetDevice"); status != PEAT_STATUS_OK)
    return status;
  return from_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

// Staging: an async copy followed by an event; the ticket is the event, which
// stage_wait synchronises on and destroys.
peat_status_t cuda_stage_to_host_async(void* host_dst, const void* src, DLDevice src_device, size_t bytes,
                                       void* stream, void** out_ticket) {
  if (out_ticket == nullptr) return fail(PEAT_STATUS_INVALID_ARGUMENT, "out_ticket is NULL");
  if (const peat_status_t status = cuda_copy(host_dst, DLDevice{kDLCPU, 0}, src, src_device, bytes, stream);
      status != PEAT_STATUS_OK)
    return status;
  cudaEvent_t event = nullptr;
  if (const peat_status_t status = from_cuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate");
      status != PEAT_STATUS_OK)
    return status;
  if (const peat_status_t status = from_cuda(cudaEventRecord(event, static_cast<cudaStream_t>(stream)), "cudaEventRecord");
      status != PEAT_STATUS_OK) {
    cudaEventDestroy(event);
    return status;
  }
  *out_ticket = event;
  return PEAT_STATUS_OK;
}

peat_status_t cuda_stage_wait(void* ticket) {
  if (ticket == nullptr) return fail(PEAT_STATUS_INVALID_ARGUMENT, "ticket is NULL");
  auto event = static_cast<cudaEvent_t>(ticket);
  const peat_status_t status = from_cuda(cudaEventSynchronize(event), "cudaEventSynchronize");
  cudaEventDestroy(event);
  return status;
}

peat_backend_api_t make_table() {
  peat_backend_api_t table{};
  table.struct_size = sizeof(peat_backend_api_t);
  table.abi_major = PEAT_BACKEND_ABI_MAJOR;
  table.abi_minor = PEAT_BACKEND_ABI_MINOR;
  table.name = "cuda";
  table.device_type = kDLCUDA;
  table.last_error = cuda_last_error;
  table.device_count = cuda_device_count;
  table.device_info = cuda_device_info;
  table.alloc = cuda_alloc;
  table.free = cuda_free;
  table.copy = cuda_copy;
  table.synchronize = cuda_synchronize;
  table.stage_to_host_async = cuda_stage_to_host_async;
  table.stage_wait = cuda_stage_wait;
  return table;
}

const peat_backend_api_t kTable = make_table();

}  // namespace

extern "C" __attribute__((visibility("default"))) const peat_backend_api_t* peat_backend_get_api(uint32_t abi_major) {
  return abi_major == PEAT_BACKEND_ABI_MAJOR ? &kTable : nullptr;
}
