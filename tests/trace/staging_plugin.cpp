// libpeat-backend-stagetest.so: a host-memory backend (device type kDLExtDev)
// whose stage_to_host_async really is asynchronous: the copy runs on its own
// thread after a short delay, and stage_wait joins it. A profiler that read
// the staged buffer before waiting would record the buffer's old contents.
// Copies of exactly 4 bytes fail at once, copies of exactly 8 bytes fail in
// stage_wait, so the tests can exercise both error paths.
#include <peat/backend.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#define EXPORT __attribute__((visibility("default")))

namespace {

thread_local const char* last_error_text = "";

struct Ticket {
  std::thread copier;
  bool fail = false;
};

const char* st_last_error() { return last_error_text; }
peat_status_t st_device_count(int32_t* out) {
  *out = 1;
  return PEAT_STATUS_OK;
}
peat_status_t st_device_info(int32_t device, peat_backend_device_info_t* out) {
  if (device != 0 || out == nullptr) {
    last_error_text = "no such device";
    return PEAT_STATUS_INVALID_ARGUMENT;
  }
  out->device_type = kDLExtDev;
  out->device_id = 0;
  std::strcpy(out->name, "staging test device");
  std::strcpy(out->vendor, "test");
  out->total_memory_bytes = 1 << 20;
  out->compute_units = 1;
  return PEAT_STATUS_OK;
}
peat_status_t st_alloc(int32_t, size_t bytes, void** out) {
  *out = std::malloc(bytes ? bytes : 1);
  return PEAT_STATUS_OK;
}
peat_status_t st_free(int32_t, void* ptr) {
  std::free(ptr);
  return PEAT_STATUS_OK;
}
peat_status_t st_copy(void* dst, DLDevice, const void* src, DLDevice, size_t bytes, void*) {
  if (bytes) std::memmove(dst, src, bytes);
  return PEAT_STATUS_OK;
}
peat_status_t st_synchronize(int32_t, void*) { return PEAT_STATUS_OK; }

peat_status_t st_stage(void* host_dst, const void* src, DLDevice, size_t bytes, void*, void** out_ticket) {
  if (bytes == 4) {
    last_error_text = "staging refused (test: 4-byte copies fail at once)";
    return PEAT_STATUS_IO_ERROR;
  }
  auto* ticket = new Ticket;
  ticket->fail = bytes == 8;
  ticket->copier = std::thread([host_dst, src, bytes] {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::memcpy(host_dst, src, bytes);
  });
  *out_ticket = ticket;
  return PEAT_STATUS_OK;
}

peat_status_t st_wait(void* t) {
  auto* ticket = static_cast<Ticket*>(t);
  ticket->copier.join();
  const bool fail = ticket->fail;
  delete ticket;
  if (fail) {
    last_error_text = "staging failed (test: 8-byte copies fail in stage_wait)";
    return PEAT_STATUS_IO_ERROR;
  }
  return PEAT_STATUS_OK;
}

peat_backend_api_t make_table() {
  peat_backend_api_t table{};
  table.struct_size = sizeof table;
  table.abi_major = PEAT_BACKEND_ABI_MAJOR;
  table.abi_minor = PEAT_BACKEND_ABI_MINOR;
  table.name = "stagetest";
  table.device_type = kDLExtDev;
  table.last_error = st_last_error;
  table.device_count = st_device_count;
  table.device_info = st_device_info;
  table.alloc = st_alloc;
  table.free = st_free;
  table.copy = st_copy;
  table.synchronize = st_synchronize;
  table.stage_to_host_async = st_stage;
  table.stage_wait = st_wait;
  return table;
}

const peat_backend_api_t kTable = make_table();

}  // namespace

extern "C" EXPORT const peat_backend_api_t* peat_backend_get_api(uint32_t abi_major) {
  return abi_major == PEAT_BACKEND_ABI_MAJOR ? &kTable : nullptr;
}
