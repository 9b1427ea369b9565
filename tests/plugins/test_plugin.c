/* A backend plugin for the registry tests: a host-memory backend named by the
 * variant it is compiled as (see CMakeLists.txt). It is a complete, working
 * backend in the "testmem" variant; the other variants are broken on purpose. */
#include <peat/backend.h>

#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

static const char* last_error_text = "";

static const char* test_last_error(void) { return last_error_text; }

static peat_status_t test_device_count(int32_t* out) {
  if (!out) { last_error_text = "out is NULL"; return PEAT_STATUS_INVALID_ARGUMENT; }
  *out = 2; /* two "devices", both host memory */
  return PEAT_STATUS_OK;
}

static peat_status_t test_device_info(int32_t device, peat_backend_device_info_t* out) {
  if (!out || device < 0 || device > 1) { last_error_text = "no such test device"; return PEAT_STATUS_INVALID_ARGUMENT; }
  out->device_type = kDLExtDev;
  out->device_id = device;
  strcpy(out->name, device == 0 ? "test device 0" : "test device 1");
  strcpy(out->vendor, "PEAT tests");
  out->total_memory_bytes = 1u << 20;
  out->compute_units = 1;
  return PEAT_STATUS_OK;
}

static peat_status_t test_alloc(int32_t device, size_t bytes, void** out) {
  (void)device;
  if (!out) { last_error_text = "out is NULL"; return PEAT_STATUS_INVALID_ARGUMENT; }
  if (bytes > (1u << 20)) { last_error_text = "test devices hold 1 MiB"; return PEAT_STATUS_OUT_OF_MEMORY; }
  *out = malloc(bytes ? bytes : 1);
  return *out ? PEAT_STATUS_OK : PEAT_STATUS_OUT_OF_MEMORY;
}

static peat_status_t test_free(int32_t device, void* ptr) { (void)device; free(ptr); return PEAT_STATUS_OK; }

static peat_status_t test_copy(void* dst, DLDevice dst_device, const void* src, DLDevice src_device, size_t bytes,
                               void* stream) {
  (void)dst_device; (void)src_device; (void)stream;
  if (bytes && (!dst || !src)) { last_error_text = "NULL pointer"; return PEAT_STATUS_INVALID_ARGUMENT; }
  if (bytes) memmove(dst, src, bytes);
  return PEAT_STATUS_OK;
}

static peat_status_t test_synchronize(int32_t device, void* stream) { (void)device; (void)stream; return PEAT_STATUS_OK; }

#if defined(PEAT_TEST_PLUGIN_TESTMEM)
#  define PLUGIN_NAME "testmem"
#elif defined(PEAT_TEST_PLUGIN_WRONGABI)
#  define PLUGIN_NAME "wrongabi"
#elif defined(PEAT_TEST_PLUGIN_NOENTRY)
#  define PLUGIN_NAME "noentry"
#elif defined(PEAT_TEST_PLUGIN_MISSINGFN)
#  define PLUGIN_NAME "missingfn"
#elif defined(PEAT_TEST_PLUGIN_SHADOWED)
#  define PLUGIN_NAME "shadowed"
#else
#  define PLUGIN_NAME "nulltable"
#endif

static peat_backend_api_t table;

static const peat_backend_api_t* make_table(uint32_t abi_major) {
  if (abi_major != PEAT_BACKEND_ABI_MAJOR) return NULL;
  memset(&table, 0, sizeof table);
  table.struct_size = sizeof table;
  table.abi_major = PEAT_BACKEND_ABI_MAJOR;
  table.abi_minor = PEAT_BACKEND_ABI_MINOR;
  table.name = PLUGIN_NAME;
  table.device_type = kDLExtDev;
  table.last_error = test_last_error;
  table.device_count = test_device_count;
  table.device_info = test_device_info;
  table.alloc = test_alloc;
  table.free = test_free;
  table.copy = test_copy;
  table.synchronize = test_synchronize;
#if defined(PEAT_TEST_PLUGIN_WRONGABI)
  table.abi_major = 99;
#elif defined(PEAT_TEST_PLUGIN_MISSINGFN)
  table.copy = NULL;
#endif
  return &table;
}

#if defined(PEAT_TEST_PLUGIN_NOENTRY)
EXPORT const peat_backend_api_t* peat_backend_get_api_misspelled(uint32_t abi_major) { return make_table(abi_major); }
#elif defined(PEAT_TEST_PLUGIN_NULLTABLE)
EXPORT const peat_backend_api_t* peat_backend_get_api(uint32_t abi_major) { (void)abi_major; (void)make_table; return NULL; }
#else
EXPORT const peat_backend_api_t* peat_backend_get_api(uint32_t abi_major) { return make_table(abi_major); }
#endif
