/* Pure-C test of peat/trace.h: every exported function, including misuse
 * (NULL handles and pointers, wrong struct_size, unknown enum values), on a
 * trace recorded through the profiler. Includes only <peat/peat.h>. */
#include <peat/peat.h>

#include <stdio.h>
#include <string.h>

#include "check.h"

static const char* kPath = "c_api_test_trace.peat";

static void write_trace(void) {
  peat_session_t* session = NULL;
  peat_profiler_options_t o;
  peat_profiler_t* p = NULL;
  peat_profiler_tag_t tags[1] = {{"k", "v"}};
  peat_op_record_t rec;
  peat_attr_t attr;
  int64_t ints[3] = {1, 2, 3};
  double x[4] = {0.5, -1.0, 1e-310, 3.0};
  int64_t shape[1] = {4};
  DLTensor t;
  const DLTensor* tensors[1];
  uint32_t op = 0;

  memset(&t, 0, sizeof t);
  t.data = x;
  t.device.device_type = kDLCPU;
  t.ndim = 1;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 64;
  t.dtype.lanes = 1;
  t.shape = shape;
  tensors[0] = &t;
  CHECK_STATUS(peat_session_create(NULL, &session), PEAT_STATUS_OK);
  CHECK_STATUS(peat_session_intern_op(session, "aten::conv2d", &op), PEAT_STATUS_OK);
  peat_profiler_options_init(&o);
  o.path = kPath;
  o.framework = "c";
  o.device = "dev";
  o.vendor = "ven";
  o.tags = tags;
  o.n_tags = 1;
  CHECK_STATUS(peat_profiler_create(session, &o, &p), PEAT_STATUS_OK);
  CHECK_STATUS(peat_profiler_mark_step(p, 2), PEAT_STATUS_OK);
  memset(&attr, 0, sizeof attr);
  attr.key = "stride";
  attr.type = PEAT_ATTR_INT_ARRAY;
  attr.ints = ints;
  attr.n_ints = 3;
  peat_op_record_init(&rec);
  rec.op = op;
  rec.phase = PEAT_PHASE_FORWARD;
  rec.module_path = "net.conv1";
  rec.attrs = &attr;
  rec.n_attrs = 1;
  rec.inputs = tensors;
  rec.n_inputs = 1;
  rec.outputs = tensors;
  rec.n_outputs = 1;
  CHECK_STATUS(peat_profiler_record_op(p, &rec, NULL, NULL), PEAT_STATUS_OK);
  CHECK_STATUS(peat_profiler_record_checkpoint(p, "ck", -1, NULL, tensors, 1, NULL, NULL), PEAT_STATUS_OK);
  CHECK_STATUS(peat_profiler_record_scalar(p, "loss", -1, 0.25), PEAT_STATUS_OK);
  CHECK_STATUS(peat_profiler_close(p), PEAT_STATUS_OK);
  peat_profiler_destroy(p);
  peat_session_destroy(session);
}

int main(void) {
  peat_trace_reader_options_t ro;
  peat_trace_reader_t* r = NULL;
  peat_trace_recovery_t rc;
  peat_trace_run_info_t info;
  peat_trace_record_info_t ri;
  peat_trace_tensor_info_t ti;
  peat_trace_filter_t f;
  peat_attr_t attr;
  const char* key = NULL;
  const char* value = NULL;
  uint64_t n = 0, idx = 0;
  double got[4];
  DLManagedTensor* m = NULL;

  write_trace();

  peat_trace_reader_options_init(NULL);
  peat_trace_filter_init(NULL);
  peat_trace_close(NULL);
  peat_trace_tensor_free(NULL);
  peat_trace_reader_options_init(&ro);
  CHECK(ro.struct_size == sizeof ro && ro.max_tensor_bytes > 0);

  /* opening */
  CHECK_STATUS(peat_trace_open(NULL, NULL, &r), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_trace_open(kPath, NULL, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_trace_open("no-such-file.peat", NULL, &r), PEAT_STATUS_NOT_FOUND);
  CHECK(strstr(peat_last_error_message(), "no-such-file.peat") != NULL);
  ro.struct_size = sizeof ro + 1;
  CHECK_STATUS(peat_trace_open(kPath, &ro, &r), PEAT_STATUS_VERSION_MISMATCH);
  peat_trace_reader_options_init(&ro);
  ro.max_meta_bytes = 1;
  CHECK_STATUS(peat_trace_open(kPath, &ro, &r), PEAT_STATUS_INVALID_ARGUMENT);
  rc.struct_size = 2;
  CHECK_STATUS(peat_trace_recover(kPath, NULL, &r, &rc), PEAT_STATUS_VERSION_MISMATCH);
  rc.struct_size = sizeof rc;
  CHECK_STATUS(peat_trace_recover(NULL, NULL, &r, &rc), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_trace_recover(kPath, NULL, NULL, &rc), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_trace_recover(kPath, NULL, &r, &rc), PEAT_STATUS_OK);
  CHECK(rc.complete == 1 && rc.records == 4 && rc.valid_bytes == rc.file_bytes && rc.stop_reason[0] == 0);
  peat_trace_close(r);
  r = NULL;
  CHECK_STATUS(peat_trace_open(kPath, NULL, &r), PEAT_STATUS_OK);
  if (r == NULL) return check_report("trace");

  /* run info and tags */
  info.struct_size = 3;
  CHECK_STATUS(peat_trace_run_info(r, &info), PEAT_STATUS_VERSION_MISMATCH);
  CHECK_STATUS(peat_trace_run_info(NULL, &info), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_trace_run_info(r, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  info.struct_size = sizeof info;
  CHECK_STATUS(peat_trace_run_info(r, &info), PEAT_STATUS_OK);
  CHECK(info.format_major == PEAT_TRACE_FORMAT_MAJOR);
  CHECK(strcmp(info.framework, "c") == 0 && strcmp(info.device, "dev") == 0 && strcmp(info.vendor, "ven") == 0);
  CHECK(info.n_tags == 1 && info.world_size == 1 && info.created_unix_ns > 0);
  CHECK_STATUS(peat_trace_tag(r, 0, &key, &value), PEAT_STATUS_OK);
  CHECK(strcmp(key, "k") == 0 && strcmp(value, "v") == 0);
  CHECK_STATUS(peat_trace_tag(r, 1, &key, &value), PEAT_STATUS_NOT_FOUND);
  CHECK_STATUS(peat_trace_tag(r, 0, NULL, &value), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_trace_tag(NULL, 0, &key, &value), PEAT_STATUS_INVALID_ARGUMENT);

  /* records */
  CHECK_STATUS(peat_trace_record_count(r, &n), PEAT_STATUS_OK);
  CHECK(n == 4);
  CHECK_STATUS(peat_trace_record_count(r, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_trace_record_count(NULL, &n), PEAT_STATUS_INVALID_ARGUMENT);
  ri.struct_size = sizeof ri;
  CHECK_STATUS(peat_trace_record_info(r, 1, &ri), PEAT_STATUS_OK);
  CHECK(ri.kind == PEAT_TRACE_KIND_OP && strcmp(ri.name, "aten::conv2d") == 0 && ri.step == 2);
  CHECK(strcmp(ri.module_path, "net.conv1") == 0 && ri.n_inputs == 1 && ri.n_outputs == 1 && ri.n_attrs == 1);
  CHECK_STATUS(peat_trace_record_info(r, 4, &ri), PEAT_STATUS_NOT_FOUND);
  ri.struct_size = 0;
  CHECK_STATUS(peat_trace_record_info(r, 1, &ri), PEAT_STATUS_VERSION_MISMATCH);
  CHECK_STATUS(peat_trace_record_info(r, 1, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_trace_attr(r, 1, 0, &attr), PEAT_STATUS_OK);
  CHECK(attr.type == PEAT_ATTR_INT_ARRAY && attr.n_ints == 3 && attr.ints[2] == 3);
  CHECK_STATUS(peat_trace_attr(r, 1, 1, &attr), PEAT_STATUS_NOT_FOUND);
  CHECK_STATUS(peat_trace_attr(r, 0, 0, &attr), PEAT_STATUS_INVALID_ARGUMENT); /* a step marker */
  CHECK_STATUS(peat_trace_attr(r, 1, 0, NULL), PEAT_STATUS_INVALID_ARGUMENT);

  /* filters */
  peat_trace_filter_init(&f);
  f.op_glob = "aten::*";
  CHECK_STATUS(peat_trace_next(r, &f, 0, &idx), PEAT_STATUS_OK);
  CHECK(idx == 1);
  CHECK(peat_trace_next(r, &f, 2, &idx) == PEAT_STATUS_NOT_FOUND);
  f.kinds = 1u << PEAT_TRACE_KIND_SCALAR;
  f.op_glob = NULL;
  CHECK_STATUS(peat_trace_next(r, &f, 0, &idx), PEAT_STATUS_OK);
  CHECK(idx == 3);
  f.struct_size = 1;
  CHECK_STATUS(peat_trace_next(r, &f, 0, &idx), PEAT_STATUS_VERSION_MISMATCH);
  CHECK_STATUS(peat_trace_next(NULL, NULL, 0, &idx), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_trace_next(r, NULL, 0, NULL), PEAT_STATUS_INVALID_ARGUMENT);

  /* tensors */
  CHECK_STATUS(peat_trace_tensor_count(r, 1, PEAT_TRACE_SLOT_OUTPUT, &n), PEAT_STATUS_OK);
  CHECK(n == 1);
  CHECK_STATUS(peat_trace_tensor_count(r, 2, PEAT_TRACE_SLOT_CHECKPOINT, &n), PEAT_STATUS_OK);
  CHECK(n == 1);
  CHECK_STATUS(peat_trace_tensor_count(r, 1, 7, &n), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_trace_tensor_count(r, 3, PEAT_TRACE_SLOT_INPUT, &n), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_trace_tensor_count(r, 1, PEAT_TRACE_SLOT_INPUT, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  ti.struct_size = sizeof ti;
  CHECK_STATUS(peat_trace_tensor_info(r, 1, PEAT_TRACE_SLOT_INPUT, 0, &ti), PEAT_STATUS_OK);
  CHECK(ti.ndim == 1 && ti.shape[0] == 4 && ti.numel == 4 && ti.raw_bytes == 32 && ti.dtype.bits == 64);
  CHECK_STATUS(peat_trace_tensor_info(r, 1, PEAT_TRACE_SLOT_INPUT, 1, &ti), PEAT_STATUS_NOT_FOUND);
  ti.struct_size = 1;
  CHECK_STATUS(peat_trace_tensor_info(r, 1, PEAT_TRACE_SLOT_INPUT, 0, &ti), PEAT_STATUS_VERSION_MISMATCH);
  CHECK_STATUS(peat_trace_load_tensor(r, 2, PEAT_TRACE_SLOT_CHECKPOINT, 0, got, sizeof got), PEAT_STATUS_OK);
  CHECK(got[0] == 0.5 && got[1] == -1.0 && got[2] == 1e-310 && got[3] == 3.0);
  CHECK_STATUS(peat_trace_load_tensor(r, 1, PEAT_TRACE_SLOT_INPUT, 0, got, 8), PEAT_STATUS_BUFFER_TOO_SMALL);
  CHECK_STATUS(peat_trace_load_tensor(r, 1, PEAT_TRACE_SLOT_INPUT, 0, NULL, 32), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_trace_load_tensor(NULL, 1, PEAT_TRACE_SLOT_INPUT, 0, got, 32), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_trace_load_tensor(r, 1, -1, 0, got, 32), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_trace_load_tensor_alloc(r, 1, PEAT_TRACE_SLOT_OUTPUT, 0, &m), PEAT_STATUS_OK);
  CHECK(m != NULL && m->dl_tensor.ndim == 1 && ((double*)m->dl_tensor.data)[3] == 3.0);
  peat_trace_tensor_free(m);
  CHECK_STATUS(peat_trace_load_tensor_alloc(r, 1, PEAT_TRACE_SLOT_OUTPUT, 0, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_trace_load_tensor_alloc(r, 1, PEAT_TRACE_SLOT_OUTPUT, 5, &m), PEAT_STATUS_NOT_FOUND);
  CHECK_STATUS(peat_trace_verify(r, &n), PEAT_STATUS_OK);
  CHECK(n == 3);
  CHECK_STATUS(peat_trace_verify(NULL, &n), PEAT_STATUS_INVALID_ARGUMENT);
  peat_trace_close(r);

  /* a limit below the tensor's size */
  peat_trace_reader_options_init(&ro);
  ro.max_tensor_bytes = 16;
  CHECK_STATUS(peat_trace_open(kPath, &ro, &r), PEAT_STATUS_OK);
  CHECK_STATUS(peat_trace_load_tensor_alloc(r, 1, PEAT_TRACE_SLOT_OUTPUT, 0, &m), PEAT_STATUS_OUT_OF_MEMORY);
  peat_trace_close(r);
  remove(kPath);
  return check_report("trace");
}
