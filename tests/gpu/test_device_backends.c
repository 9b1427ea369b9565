/* Loads a device backend plugin by name through the registry (it is built next
 * to libpeat) and checks how it reports devices. Without a driver or device the
 * only acceptable answers are PEAT_STATUS_UNAVAILABLE with a message, or zero
 * devices; the test then says it skipped the device part. With devices, it
 * allocates, copies host -> device -> host, stages device -> host and compares. */
#include <peat/peat.h>

#include <stdio.h>
#include <string.h>

#include "check.h"

static void round_trip(const peat_backend_api_t* api, int32_t device, int32_t device_type) {
  enum { N = 1 << 16 };
  static unsigned char src[N], dst[N], staged[N];
  for (int i = 0; i < N; ++i) src[i] = (unsigned char)(i * 31 + 7);
  void* buffer = NULL;
  DLDevice host = {kDLCPU, 0};
  DLDevice dev = {(DLDeviceType)device_type, device};
  CHECK_STATUS(api->alloc(device, N, &buffer), PEAT_STATUS_OK);
  CHECK_STATUS(api->copy(buffer, dev, src, host, N, NULL), PEAT_STATUS_OK);
  CHECK_STATUS(api->copy(dst, host, buffer, dev, N, NULL), PEAT_STATUS_OK);
  CHECK_STATUS(api->synchronize(device, NULL), PEAT_STATUS_OK);
  CHECK(memcmp(src, dst, N) == 0);
  void* ticket = NULL;
  CHECK_STATUS(api->stage_to_host_async(staged, buffer, dev, N, NULL, &ticket), PEAT_STATUS_OK);
  CHECK_STATUS(api->stage_wait(ticket), PEAT_STATUS_OK);
  CHECK(memcmp(src, staged, N) == 0);
  CHECK_STATUS(api->free(device, buffer), PEAT_STATUS_OK);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s BACKEND\n", argv[0]);
    return 2;
  }
  const char* name = argv[1];
  peat_backend_t* backend = NULL;
  CHECK_STATUS(peat_backend_get(name, &backend), PEAT_STATUS_OK);
  if (backend == NULL) return check_report(name);
  CHECK(strcmp(peat_backend_name(backend), name) == 0);
  CHECK(strstr(peat_backend_path(backend), "libpeat-backend-") != NULL);
  const peat_backend_api_t* api = peat_backend_table(backend);
  CHECK(api != NULL && api->abi_major == PEAT_BACKEND_ABI_MAJOR && api->struct_size >= sizeof(peat_backend_api_t));

  int32_t count = -1;
  peat_status_t status = peat_backend_device_count(backend, &count);
  if (status == PEAT_STATUS_UNAVAILABLE) {
    CHECK(strlen(peat_last_error_message()) > 0);
    CHECK(strstr(peat_last_error_message(), name) != NULL);
    /* Every device entry must fail the same clean way, never crash. */
    peat_backend_device_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    CHECK_STATUS(peat_backend_device_info(backend, 0, &info), PEAT_STATUS_UNAVAILABLE);
    void* p = NULL;
    CHECK(api->alloc(0, 16, &p) == PEAT_STATUS_UNAVAILABLE);
    printf("%s: no driver or device here (%s): device part skipped\n", name, peat_last_error_message());
    return check_report(name);
  }
  CHECK_STATUS(status, PEAT_STATUS_OK);
  if (count == 0) printf("%s: driver present, no device: device part skipped\n", name);
  for (int32_t d = 0; d < count; ++d) {
    peat_backend_device_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    CHECK_STATUS(peat_backend_device_info(backend, d, &info), PEAT_STATUS_OK);
    printf("%s device %d: %s, %s, %llu bytes, %u compute units\n", name, d, info.name, info.vendor,
           (unsigned long long)info.total_memory_bytes, info.compute_units);
    round_trip(api, d, api->device_type);
  }
  CHECK_STATUS(peat_backend_device_info(backend, count, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  return check_report(name);
}
