// The HIP backend plugin: the HIP runtime's calls plugged into the shared GPU
// table (backends/common/gpu_runtime_table.hpp), and the numeric entries
// (signature_accumulate, inject) from the single-source kernels of
// backends/common/kernels, compiled by clang -x hip (gfx90a, gfx940).
#include <hip/hip_runtime_api.h>

#include "backends/common/gpu_inject_entry.hpp"
#include "backends/common/gpu_runtime_table.hpp"
#include "backends/common/gpu_signature_entry.hpp"

namespace {

struct HipRuntime {
  using error_t = hipError_t;
  using stream_t = hipStream_t;
  using event_t = hipEvent_t;
  static constexpr error_t success = hipSuccess;
  static constexpr const char* name = "hip";
  static constexpr int32_t device_type = kDLROCM;
  static constexpr const char* vendor = "AMD";

  static error_t device_count(int* count) { return hipGetDeviceCount(count); }
  static error_t device_props(int device, peat::gpu::DeviceProps& out) {
    hipDeviceProp_t prop{};
    const error_t error = hipGetDeviceProperties(&prop, device);
    if (error != hipSuccess) return error;
    peat::gpu::copy_name(out.name, sizeof(out.name), prop.gcnArchName[0] ? prop.gcnArchName : prop.name);
    out.major = prop.major;
    out.minor = prop.minor;
    out.total_memory = prop.totalGlobalMem;
    out.compute_units = static_cast<uint32_t>(prop.multiProcessorCount);
    return hipSuccess;
  }
  static error_t set_device(int device) { return hipSetDevice(device); }
  static error_t malloc(void** ptr, size_t bytes) { return hipMalloc(ptr, bytes); }
  static error_t free(void* ptr) { return hipFree(ptr); }
  static error_t memcpy_async(void* dst, const void* src, size_t bytes, stream_t stream) {
    return hipMemcpyAsync(dst, src, bytes, hipMemcpyDefault, stream);
  }
  static error_t memset_async(void* dst, int value, size_t bytes, stream_t stream) {
    return hipMemsetAsync(dst, value, bytes, stream);
  }
  static error_t stream_sync(stream_t stream) { return hipStreamSynchronize(stream); }
  static error_t device_sync() { return hipDeviceSynchronize(); }
  static error_t event_create(event_t* event) { return hipEventCreateWithFlags(event, hipEventDisableTiming); }
  static error_t event_record(event_t event, stream_t stream) { return hipEventRecord(event, stream); }
  static error_t event_sync(event_t event) { return hipEventSynchronize(event); }
  static error_t event_destroy(event_t event) { return hipEventDestroy(event); }
  static void clear_error() { (void)hipGetLastError(); }
  static const char* error_string(error_t error) { return hipGetErrorString(error); }
  static const char* error_name(error_t error) { return hipGetErrorName(error); }
  static bool no_device(error_t error) { return error == hipErrorNoDevice; }
  static bool serves(DLDevice device) {
    switch (device.device_type) {
      case kDLCPU: case kDLROCM: case kDLROCMHost: return true;
      default: return false;
    }
  }
  static peat_status_t classify(error_t error) {
    switch (error) {
      case hipErrorInsufficientDriver: case hipErrorNoDevice: case hipErrorInitializationError:
        return PEAT_STATUS_UNAVAILABLE;
      case hipErrorOutOfMemory: return PEAT_STATUS_OUT_OF_MEMORY;
      case hipErrorInvalidValue: case hipErrorInvalidDevice: case hipErrorInvalidDevicePointer:
        return PEAT_STATUS_INVALID_ARGUMENT;
      default: return PEAT_STATUS_INTERNAL;
    }
  }
};

peat_backend_api_t make_table() {
  peat_backend_api_t table = peat::gpu::RuntimeTable<HipRuntime>::make();
  table.signature_accumulate = peat::gpu::GpuEntries<HipRuntime>::signature_accumulate;
  table.inject = peat::gpu::GpuInject<HipRuntime>::inject;
  return table;
}

const peat_backend_api_t kTable = make_table();

}  // namespace

extern "C" __attribute__((visibility("default"))) const peat_backend_api_t* peat_backend_get_api(uint32_t abi_major) {
  return abi_major == PEAT_BACKEND_ABI_MAJOR ? &kTable : nullptr;
}
