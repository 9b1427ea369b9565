// The CUDA backend plugin: the CUDA runtime's calls plugged into the shared
// GPU table (backends/common/gpu_runtime_table.hpp), and the numeric entries
// (signature_accumulate, inject) from the single-source kernels of
// backends/common/kernels, compiled by nvcc (sm_80, sm_90 and PTX).
#include <cuda_runtime_api.h>

#include "backends/common/gpu_inject_entry.hpp"
#include "backends/common/gpu_runtime_table.hpp"
#include "backends/common/gpu_signature_entry.hpp"

namespace {

struct CudaRuntime {
  using error_t = cudaError_t;
  using stream_t = cudaStream_t;
  using event_t = cudaEvent_t;
  static constexpr error_t success = cudaSuccess;
  static constexpr const char* name = "cuda";
  static constexpr int32_t device_type = kDLCUDA;
  static constexpr const char* vendor = "NVIDIA";

  static error_t device_count(int* count) { return cudaGetDeviceCount(count); }
  static error_t device_props(int device, peat::gpu::DeviceProps& out) {
    cudaDeviceProp prop{};
    const error_t error = cudaGetDeviceProperties(&prop, device);
    if (error != cudaSuccess) return error;
    peat::gpu::copy_name(out.name, sizeof(out.name), prop.name);
    out.major = prop.major;
    out.minor = prop.minor;
    out.total_memory = prop.totalGlobalMem;
    out.compute_units = static_cast<uint32_t>(prop.multiProcessorCount);
    return cudaSuccess;
  }
  static error_t set_device(int device) { return cudaSetDevice(device); }
  static error_t malloc(void** ptr, size_t bytes) { return cudaMalloc(ptr, bytes); }
  static error_t free(void* ptr) { return cudaFree(ptr); }
  static error_t memcpy_async(void* dst, const void* src, size_t bytes, stream_t stream) {
    return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream);
  }
  static error_t memset_async(void* dst, int value, size_t bytes, stream_t stream) {
    return cudaMemsetAsync(dst, value, bytes, stream);
  }
  static error_t stream_sync(stream_t stream) { return cudaStreamSynchronize(stream); }
  static error_t device_sync() { return cudaDeviceSynchronize(); }
  static error_t event_create(event_t* event) { return cudaEventCreateWithFlags(event, cudaEventDisableTiming); }
  static error_t event_record(event_t event, stream_t stream) { return cudaEventRecord(event, stream); }
  static error_t event_sync(event_t event) { return cudaEventSynchronize(event); }
  static error_t event_destroy(event_t event) { return cudaEventDestroy(event); }
  static void clear_error() { cudaGetLastError(); }
  static const char* error_string(error_t error) { return cudaGetErrorString(error); }
  static const char* error_name(error_t error) { return cudaGetErrorName(error); }
  static bool no_device(error_t error) { return error == cudaErrorNoDevice; }
  static bool serves(DLDevice device) {
    switch (device.device_type) {
      case kDLCPU: case kDLCUDA: case kDLCUDAHost: case kDLCUDAManaged: return true;
      default: return false;
    }
  }
  static peat_status_t classify(error_t error) {
    switch (error) {
      case cudaErrorInsufficientDriver: case cudaErrorNoDevice: case cudaErrorInitializationError:
      case cudaErrorSystemDriverMismatch: case cudaErrorCompatNotSupportedOnDevice: case cudaErrorStubLibrary:
        return PEAT_STATUS_UNAVAILABLE;
      case cudaErrorMemoryAllocation: return PEAT_STATUS_OUT_OF_MEMORY;
      case cudaErrorInvalidValue: case cudaErrorInvalidDevice: case cudaErrorInvalidDevicePointer:
        return PEAT_STATUS_INVALID_ARGUMENT;
      default: return PEAT_STATUS_INTERNAL;
    }
  }
};

peat_backend_api_t make_table() {
  peat_backend_api_t table = peat::gpu::RuntimeTable<CudaRuntime>::make();
  table.signature_accumulate = peat::gpu::GpuEntries<CudaRuntime>::signature_accumulate;
  table.inject = peat::gpu::GpuInject<CudaRuntime>::inject;
  return table;
}

const peat_backend_api_t kTable = make_table();

}  // namespace

extern "C" __attribute__((visibility("default"))) const peat_backend_api_t* peat_backend_get_api(uint32_t abi_major) {
  return abi_major == PEAT_BACKEND_ABI_MAJOR ? &kTable : nullptr;
}
