/* Pure-C test of peat/core.h, peat/backend.h and peat/session.h: every
 * exported function, including misuse (NULL handles and pointers, wrong
 * struct_size, unknown enum values). Includes only <peat/peat.h>. */
#include <peat/peat.h>

#include <stdlib.h>
#include <string.h>

#include "check.h"

static void test_version(void) {
  CHECK(peat_version_number() == PEAT_VERSION_NUMBER);
  CHECK(peat_abi_version() == PEAT_ABI_VERSION);
  CHECK(strcmp(peat_version_string(), "0.2.0") == 0);
}

static void test_status_and_errors(void) {
  CHECK(strcmp(peat_status_string(PEAT_STATUS_OK), "ok") == 0);
  CHECK(strcmp(peat_status_string(PEAT_STATUS_INVALID_ARGUMENT), "invalid argument") == 0);
  CHECK(strcmp(peat_status_string(12345), "unknown status") == 0);
  CHECK(strcmp(peat_status_string(-1), "unknown status") == 0);
  peat_clear_last_error();
  CHECK(strcmp(peat_last_error_message(), "") == 0);
  CHECK_STATUS(peat_dtype_from_name(NULL, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(strstr(peat_last_error_message(), "peat_dtype_from_name") != NULL);
  peat_clear_last_error();
  CHECK(peat_last_error_message()[0] == '\0');
}

static void test_dtypes(void) {
  DLDataType dt;
  CHECK_STATUS(peat_dtype_from_name("bf16", &dt), PEAT_STATUS_OK);
  CHECK(dt.code == kDLBfloat && dt.bits == 16 && dt.lanes == 1);
  CHECK(strcmp(peat_dtype_name(dt), "bf16") == 0);
  CHECK(peat_dtype_size(dt) == 2);
  CHECK(peat_dtype_is_supported_float(dt) == 1);
  CHECK_STATUS(peat_dtype_from_name("float32", &dt), PEAT_STATUS_OK);
  CHECK(dt.code == kDLFloat && dt.bits == 32);
  CHECK_STATUS(peat_dtype_from_name("f128", &dt), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(strstr(peat_last_error_message(), "f128") != NULL);

  int32_t bits = 0;
  double u = 0;
  CHECK_STATUS(peat_dtype_mantissa_bits(dt, &bits, &u), PEAT_STATUS_OK);
  CHECK(bits == 23 && u == 1.0 / 16777216.0);
  CHECK_STATUS(peat_dtype_mantissa_bits(dt, &bits, NULL), PEAT_STATUS_OK);
  CHECK_STATUS(peat_dtype_mantissa_bits(dt, NULL, &u), PEAT_STATUS_INVALID_ARGUMENT);
  DLDataType i32 = {kDLInt, 32, 1};
  CHECK(peat_dtype_is_supported_float(i32) == 0);
  CHECK_STATUS(peat_dtype_mantissa_bits(i32, &bits, &u), PEAT_STATUS_UNSUPPORTED);
  DLDataType vec = {kDLFloat, 32, 4};
  CHECK(peat_dtype_is_supported_float(vec) == 0);
  CHECK(peat_dtype_size(vec) == 16);
  DLDataType bad = {kDLFloat, 0, 1};
  CHECK(peat_dtype_size(bad) == 0);
  CHECK(strcmp(peat_dtype_name(bad), "unknown") == 0);
}

static void test_tensor_numel(void) {
  float data[12];
  int64_t shape[2] = {3, 4};
  int64_t strides[2] = {1, 3}; /* a transposed (strided) view is legal */
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = kDLCPU;
  t.ndim = 2;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = shape;
  int64_t n = 0;
  CHECK_STATUS(peat_tensor_numel(&t, &n), PEAT_STATUS_OK);
  CHECK(n == 12);
  t.strides = strides;
  CHECK_STATUS(peat_tensor_numel(&t, &n), PEAT_STATUS_OK);
  CHECK_STATUS(peat_tensor_numel(NULL, &n), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_tensor_numel(&t, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  t.data = NULL;
  CHECK_STATUS(peat_tensor_numel(&t, &n), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(strstr(peat_last_error_message(), "data is NULL") != NULL);
  shape[0] = 0; /* empty tensor: NULL data is fine */
  CHECK_STATUS(peat_tensor_numel(&t, &n), PEAT_STATUS_OK);
  CHECK(n == 0);
  shape[0] = -3;
  CHECK_STATUS(peat_tensor_numel(&t, &n), PEAT_STATUS_INVALID_ARGUMENT);
  shape[0] = 3;
  t.data = data;
  t.ndim = 40;
  CHECK_STATUS(peat_tensor_numel(&t, &n), PEAT_STATUS_INVALID_ARGUMENT);
  t.ndim = 2;
  t.shape = NULL;
  CHECK_STATUS(peat_tensor_numel(&t, &n), PEAT_STATUS_INVALID_ARGUMENT);
  t.shape = shape;
  t.byte_offset = 2; /* not a multiple of 4 */
  CHECK_STATUS(peat_tensor_numel(&t, &n), PEAT_STATUS_INVALID_ARGUMENT);
}

static void test_backends(void) {
  peat_backend_t* cpu = NULL;
  CHECK_STATUS(peat_backend_get("cpu", &cpu), PEAT_STATUS_OK);
  CHECK(cpu != NULL);
  CHECK(strcmp(peat_backend_name(cpu), "cpu") == 0);
  CHECK(strcmp(peat_backend_path(cpu), "") == 0);
  const peat_backend_api_t* table = peat_backend_table(cpu);
  CHECK(table != NULL && table->abi_major == PEAT_BACKEND_ABI_MAJOR && table->device_type == kDLCPU);
  int32_t count = 0;
  CHECK_STATUS(peat_backend_device_count(cpu, &count), PEAT_STATUS_OK);
  CHECK(count == 1);
  peat_backend_device_info_t info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  CHECK_STATUS(peat_backend_device_info(cpu, 0, &info), PEAT_STATUS_OK);
  CHECK(info.device_type == kDLCPU && info.compute_units >= 1 && info.total_memory_bytes > 0);
  CHECK(info.name[0] != '\0' && strcmp(info.vendor, "host") == 0);
  CHECK_STATUS(peat_backend_device_info(cpu, 1, &info), PEAT_STATUS_INVALID_ARGUMENT);
  info.struct_size = 3;
  CHECK_STATUS(peat_backend_device_info(cpu, 0, &info), PEAT_STATUS_VERSION_MISMATCH);
  info.struct_size = sizeof info + 8;
  CHECK_STATUS(peat_backend_device_info(cpu, 0, &info), PEAT_STATUS_VERSION_MISMATCH);
  CHECK_STATUS(peat_backend_device_info(cpu, 0, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_backend_device_info(NULL, 0, &info), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_backend_device_count(NULL, &count), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_backend_device_count(cpu, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(peat_backend_name(NULL) == NULL);
  CHECK(peat_backend_table(NULL) == NULL);
  CHECK(peat_backend_path(NULL) == NULL);

  peat_backend_t* b = NULL;
  CHECK_STATUS(peat_backend_get(NULL, &b), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_backend_get("cpu", NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_backend_get("no-such-backend", &b), PEAT_STATUS_UNAVAILABLE);
  CHECK(strstr(peat_last_error_message(), "libpeat-backend-no-such-backend.so") != NULL);
  CHECK_STATUS(peat_backend_get("../evil", &b), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_backend_for_device(kDLCPU, &b), PEAT_STATUS_OK);
  CHECK(b == cpu);
  CHECK_STATUS(peat_backend_for_device(kDLCUDAHost, &b), PEAT_STATUS_OK);
  CHECK_STATUS(peat_backend_for_device(kDLVulkan, &b), PEAT_STATUS_UNSUPPORTED);
  CHECK_STATUS(peat_backend_for_device(kDLCPU, NULL), PEAT_STATUS_INVALID_ARGUMENT);

  /* Plugins: a good one, and broken ones refused with a reason. */
  CHECK_STATUS(peat_backend_load_file(PEAT_TEST_PLUGIN_DIR "/libpeat-backend-testmem.so", &b), PEAT_STATUS_OK);
  CHECK(strcmp(peat_backend_name(b), "testmem") == 0);
  CHECK_STATUS(peat_backend_device_count(b, &count), PEAT_STATUS_OK);
  CHECK(count == 2);
  CHECK_STATUS(peat_backend_device_info(b, 1, &info), PEAT_STATUS_VERSION_MISMATCH); /* struct_size still too big */
  info.struct_size = sizeof info;
  CHECK_STATUS(peat_backend_device_info(b, 1, &info), PEAT_STATUS_OK);
  CHECK(strcmp(info.name, "test device 1") == 0);
  CHECK_STATUS(peat_backend_for_device(kDLExtDev, &b), PEAT_STATUS_OK);
  CHECK(strcmp(peat_backend_name(b), "testmem") == 0);
  CHECK_STATUS(peat_backend_load_file(PEAT_TEST_PLUGIN_DIR "/libpeat-backend-wrongabi.so", &b),
               PEAT_STATUS_UNAVAILABLE);
  CHECK(strstr(peat_last_error_message(), "ABI 99") != NULL);
  CHECK_STATUS(peat_backend_load_file(PEAT_TEST_PLUGIN_DIR "/libpeat-backend-noentry.so", &b),
               PEAT_STATUS_UNAVAILABLE);
  CHECK(strstr(peat_last_error_message(), "peat_backend_get_api") != NULL);
  CHECK_STATUS(peat_backend_load_file(PEAT_TEST_PLUGIN_DIR "/libpeat-backend-missingfn.so", &b),
               PEAT_STATUS_UNAVAILABLE);
  CHECK(strstr(peat_last_error_message(), "'copy'") != NULL);
  CHECK_STATUS(peat_backend_load_file(PEAT_TEST_PLUGIN_DIR "/libpeat-backend-nulltable.so", &b),
               PEAT_STATUS_UNAVAILABLE);
  CHECK_STATUS(peat_backend_load_file(PEAT_TEST_PLUGIN_DIR "/does-not-exist.so", &b), PEAT_STATUS_NOT_FOUND);
  CHECK_STATUS(peat_backend_load_file(NULL, &b), PEAT_STATUS_INVALID_ARGUMENT);
}

static void test_session(void) {
  peat_session_options_t options;
  peat_session_options_init(&options);
  peat_session_options_init(NULL); /* NULL-safe */
  CHECK(options.struct_size == sizeof options && options.world_size == 1 && options.max_ops == 4096);

  peat_session_t* s = NULL;
  CHECK_STATUS(peat_session_create(NULL, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  options.struct_size = sizeof options + 4;
  CHECK_STATUS(peat_session_create(&options, &s), PEAT_STATUS_VERSION_MISMATCH);
  options.struct_size = 0;
  CHECK_STATUS(peat_session_create(&options, &s), PEAT_STATUS_VERSION_MISMATCH);
  peat_session_options_init(&options);
  options.rank = 2;
  CHECK_STATUS(peat_session_create(&options, &s), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(strstr(peat_last_error_message(), "world_size") != NULL);
  peat_session_options_init(&options);
  options.backend = "no-such-backend";
  CHECK_STATUS(peat_session_create(&options, &s), PEAT_STATUS_UNAVAILABLE);
  peat_session_options_init(&options);
  options.max_ops = 2;
  options.max_log_entries = 2;
  options.seed = 42;
  options.run_name = "c-test";
  CHECK_STATUS(peat_session_create(&options, &s), PEAT_STATUS_OK);
  CHECK(s != NULL);

  uint32_t a = 99, b = 99, again = 99, n = 0;
  CHECK_STATUS(peat_session_intern_op(s, "gemm", &a), PEAT_STATUS_OK);
  CHECK_STATUS(peat_session_intern_op(s, "conv", &b), PEAT_STATUS_OK);
  CHECK_STATUS(peat_session_intern_op(s, "gemm", &again), PEAT_STATUS_OK);
  CHECK(a == 0 && b == 1 && again == 0);
  CHECK_STATUS(peat_session_intern_op(s, "third", &n), PEAT_STATUS_OUT_OF_MEMORY);
  CHECK_STATUS(peat_session_intern_op(s, "", &n), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_session_intern_op(s, NULL, &n), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_session_intern_op(NULL, "x", &n), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_session_op_count(s, &n), PEAT_STATUS_OK);
  CHECK(n == 2);
  const char* name = NULL;
  CHECK_STATUS(peat_session_op_name(s, b, &name), PEAT_STATUS_OK);
  CHECK(name && strcmp(name, "conv") == 0);
  CHECK_STATUS(peat_session_op_name(s, 7, &name), PEAT_STATUS_NOT_FOUND);

  uint64_t call = 99, calls = 0;
  CHECK_STATUS(peat_session_next_call(s, a, &call), PEAT_STATUS_OK);
  CHECK(call == 0);
  CHECK_STATUS(peat_session_next_call(s, a, &call), PEAT_STATUS_OK);
  CHECK(call == 1);
  CHECK_STATUS(peat_session_call_count(s, a, &calls), PEAT_STATUS_OK);
  CHECK(calls == 2);
  CHECK_STATUS(peat_session_call_count(s, b, &calls), PEAT_STATUS_OK);
  CHECK(calls == 0);
  CHECK_STATUS(peat_session_next_call(s, 5, &call), PEAT_STATUS_NOT_FOUND);
  CHECK_STATUS(peat_session_next_call(s, a, NULL), PEAT_STATUS_INVALID_ARGUMENT);

  int64_t step = -1;
  CHECK_STATUS(peat_session_set_step(s, 17), PEAT_STATUS_OK);
  CHECK_STATUS(peat_session_step(s, &step), PEAT_STATUS_OK);
  CHECK(step == 17);
  CHECK_STATUS(peat_session_set_step(s, -1), PEAT_STATUS_INVALID_ARGUMENT);
  peat_phase_t phase = -1;
  CHECK_STATUS(peat_session_set_phase(s, PEAT_PHASE_BACKWARD), PEAT_STATUS_OK);
  CHECK_STATUS(peat_session_phase(s, &phase), PEAT_STATUS_OK);
  CHECK(phase == PEAT_PHASE_BACKWARD);
  CHECK_STATUS(peat_session_set_phase(s, 9), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_session_phase(s, NULL), PEAT_STATUS_INVALID_ARGUMENT);

  peat_backend_t* backend = NULL;
  CHECK_STATUS(peat_session_backend(s, &backend), PEAT_STATUS_OK);
  CHECK(backend && strcmp(peat_backend_name(backend), "cpu") == 0);
  uint64_t seed = 0;
  CHECK_STATUS(peat_session_seed(s, &seed), PEAT_STATUS_OK);
  CHECK(seed == 42);

  CHECK_STATUS(peat_session_log(s, PEAT_LOG_INFO, "first"), PEAT_STATUS_OK);
  CHECK_STATUS(peat_session_log(s, PEAT_LOG_WARNING, "second message"), PEAT_STATUS_OK);
  CHECK_STATUS(peat_session_log(s, PEAT_LOG_ERROR, "third"), PEAT_STATUS_OK);
  CHECK_STATUS(peat_session_log(s, 17, "bad level"), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_session_log(s, PEAT_LOG_INFO, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  uint64_t count = 0, dropped = 0;
  CHECK_STATUS(peat_session_log_count(s, &count, &dropped), PEAT_STATUS_OK);
  CHECK(count == 2 && dropped == 1); /* max_log_entries = 2 keeps the newest two */
  char buffer[64];
  size_t needed = 0;
  peat_log_level_t level = -1;
  CHECK_STATUS(peat_session_log_entry(s, 0, &level, buffer, sizeof buffer, &needed), PEAT_STATUS_OK);
  CHECK(strcmp(buffer, "second message") == 0 && level == PEAT_LOG_WARNING && needed == 15);
  CHECK_STATUS(peat_session_log_entry(s, 0, NULL, buffer, 4, &needed), PEAT_STATUS_BUFFER_TOO_SMALL);
  CHECK(strcmp(buffer, "sec") == 0 && needed == 15);
  CHECK_STATUS(peat_session_log_entry(s, 0, NULL, NULL, 0, &needed), PEAT_STATUS_BUFFER_TOO_SMALL);
  CHECK_STATUS(peat_session_log_entry(s, 0, NULL, NULL, 8, &needed), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_session_log_entry(s, 2, NULL, buffer, sizeof buffer, NULL), PEAT_STATUS_NOT_FOUND);

  peat_session_destroy(s);
  peat_session_destroy(NULL);

  /* An older, smaller options struct (only struct_size and backend) is accepted. */
  peat_session_options_init(&options);
  options.struct_size = (uint32_t)(offsetof(peat_session_options_t, backend) + sizeof(const char*));
  CHECK_STATUS(peat_session_create(&options, &s), PEAT_STATUS_OK);
  peat_session_destroy(s);
}

int main(void) {
  test_version();
  test_status_and_errors();
  test_dtypes();
  test_tensor_numel();
  test_backends();
  test_session();
  return check_report("c_api core");
}
