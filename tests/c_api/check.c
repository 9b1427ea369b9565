#include "check.h"

#include <stdio.h>
#include <string.h>

static int passed, failed;

void check_record(int ok, const char* expr, const char* file, int line) {
  if (ok) {
    ++passed;
  } else {
    ++failed;
    fprintf(stderr, "%s:%d: CHECK failed: %s\n", file, line, expr);
  }
}

void check_status(peat_status_t got, peat_status_t want, const char* expr, const char* file, int line) {
  const char* message = peat_last_error_message();
  if (got != want) {
    ++failed;
    fprintf(stderr, "%s:%d: %s returned %d (%s), expected %d (%s); last error: %s\n", file, line, expr, (int)got,
            peat_status_string(got), (int)want, peat_status_string(want), message);
    return;
  }
  if (want != PEAT_STATUS_OK && (message == NULL || message[0] == '\0')) {
    ++failed;
    fprintf(stderr, "%s:%d: %s failed as expected but left no error message\n", file, line, expr);
    return;
  }
  ++passed;
}

int check_report(const char* suite) {
  printf("%s: %d passed, %d failed\n", suite, passed, failed);
  return failed == 0 ? 0 : 1;
}

DLTensor check_tensor_f32(float* data, int32_t ndim, int64_t* shape) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = kDLCPU;
  t.device.device_id = 0;
  t.ndim = ndim;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = shape;
  return t;
}

int32_t check_copy_kernel(void* ctx, const DLTensor* in, int32_t n_in, DLTensor* out, int32_t n_out,
                          const void* attrs) {
  int64_t i;
  (void)ctx;
  (void)attrs;
  if (n_in != 1 || n_out != 1) return 1;
  for (i = 0; i < in[0].shape[0]; ++i) ((float*)out[0].data)[i] = ((const float*)in[0].data)[i];
  return 0;
}
