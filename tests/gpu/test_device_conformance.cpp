// The conformance suite (conformance.hpp) against a device plugin.
//
// usage: test_device_conformance BACKEND   (cuda, hip)
// Without a driver or a device it prints why and exits 77, which ctest reports
// as "skipped" (SKIP_RETURN_CODE).
#include "conformance.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s BACKEND\n", argv[0]);
    return 2;
  }
  peat_backend_t* backend = nullptr;
  if (peat_backend_get(argv[1], &backend) != PEAT_STATUS_OK) {
    std::printf("SKIP: backend '%s' cannot be loaded: %s\n", argv[1], peat_last_error_message());
    return 77;
  }
  int32_t count = 0;
  const peat_status_t status = peat_backend_device_count(backend, &count);
  if (status != PEAT_STATUS_OK || count == 0) {
    std::printf("SKIP: backend '%s' has no device here (%s): conformance against the CPU not run\n", argv[1],
                status != PEAT_STATUS_OK ? peat_last_error_message() : "the driver sees no device");
    return 77;
  }
  return run_conformance(peat_backend_table(backend), argv[1]) == 0 ? 0 : 1;
}
