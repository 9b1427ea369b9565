/* Pure-C test of peat/profiler.h: every exported function, including misuse
 * (NULL handles and pointers, wrong struct_size, unknown enum values).
 * Includes only <peat/peat.h>. */
#include <peat/peat.h>

#include <stdio.h>
#include <string.h>

#include "check.h"

static const char* kPath = "c_api_test_profiler.peat";

static void test_misuse(peat_session_t* session) {
  peat_profiler_options_t o;
  peat_profiler_t* p = NULL;
  peat_profiler_options_init(NULL);
  peat_sample_rule_init(NULL);
  peat_op_record_init(NULL);
  peat_profiler_destroy(NULL);
  peat_profiler_options_init(&o);
  CHECK(o.struct_size == sizeof o);
  CHECK(o.codec == PEAT_TRACE_CODEC_SHUFFLE_ZSTD);
  CHECK(o.full_queue_policy == PEAT_QUEUE_BLOCK);
  o.path = kPath;
  CHECK_STATUS(peat_profiler_create(NULL, &o, &p), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_profiler_create(session, NULL, &p), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_profiler_create(session, &o, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  o.struct_size = sizeof o + 8;
  CHECK_STATUS(peat_profiler_create(session, &o, &p), PEAT_STATUS_VERSION_MISMATCH);
  o.struct_size = 0;
  CHECK_STATUS(peat_profiler_create(session, &o, &p), PEAT_STATUS_VERSION_MISMATCH);
  peat_profiler_options_init(&o);
  o.path = kPath;
  o.codec = 42;
  CHECK_STATUS(peat_profiler_create(session, &o, &p), PEAT_STATUS_INVALID_ARGUMENT);
  o.codec = PEAT_TRACE_CODEC_RAW;
  o.full_queue_policy = -1;
  CHECK_STATUS(peat_profiler_create(session, &o, &p), PEAT_STATUS_INVALID_ARGUMENT);
  o.full_queue_policy = PEAT_QUEUE_DROP;
  o.default_record = 2;
  CHECK_STATUS(peat_profiler_create(session, &o, &p), PEAT_STATUS_INVALID_ARGUMENT);
  o.default_record = 1;
  o.n_tags = 3;
  CHECK_STATUS(peat_profiler_create(session, &o, &p), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(p == NULL);

  /* NULL handles everywhere */
  {
    peat_sample_rule_t rule;
    peat_op_record_t rec;
    peat_profiler_stats_t st;
    int32_t flag = 0;
    peat_sample_rule_init(&rule);
    rule.op_glob = "*";
    peat_op_record_init(&rec);
    st.struct_size = sizeof st;
    CHECK_STATUS(peat_profiler_add_rule(NULL, &rule), PEAT_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(peat_profiler_should_record(NULL, 0, 0, 0, &flag), PEAT_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(peat_profiler_record_op(NULL, &rec, NULL, NULL), PEAT_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(peat_profiler_record_checkpoint(NULL, "c", 0, NULL, NULL, 0, NULL, NULL), PEAT_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(peat_profiler_record_scalar(NULL, "loss", 0, 1.0), PEAT_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(peat_profiler_mark_step(NULL, 0), PEAT_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(peat_profiler_flush(NULL), PEAT_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(peat_profiler_close(NULL), PEAT_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(peat_profiler_stats(NULL, &st), PEAT_STATUS_INVALID_ARGUMENT);
  }
}

static void test_recording(peat_session_t* session) {
  peat_profiler_options_t o;
  peat_profiler_t* p = NULL;
  peat_profiler_tag_t tags[1] = {{"suite", "c_api"}};
  peat_sample_rule_t rule;
  peat_op_record_t rec;
  peat_profiler_stats_t st;
  peat_attr_t attrs[2];
  float x[6] = {1, 2, 3, 4, 5, 6};
  int64_t shape[2] = {2, 3};
  DLTensor t;
  const DLTensor* tensors[1];
  const char* names[1] = {"x"};
  uint32_t op = 0, op2 = 0;
  int32_t recorded = -1, flag = -1;
  uint64_t call = 0;
  peat_trace_reader_t* r = NULL;
  uint64_t count = 0;

  memset(&t, 0, sizeof t);
  t.data = x;
  t.device.device_type = kDLCPU;
  t.ndim = 2;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = shape;
  tensors[0] = &t;

  CHECK_STATUS(peat_session_intern_op(session, "c::gemm", &op), PEAT_STATUS_OK);
  CHECK_STATUS(peat_session_intern_op(session, "c::skip", &op2), PEAT_STATUS_OK);
  peat_profiler_options_init(&o);
  o.path = kPath;
  o.framework = "c";
  o.tags = tags;
  o.n_tags = 1;
  CHECK_STATUS(peat_profiler_create(session, &o, &p), PEAT_STATUS_OK);
  if (p == NULL) return;

  peat_sample_rule_init(&rule);
  CHECK(rule.every_n == 1 && rule.record == 1);
  CHECK_STATUS(peat_profiler_add_rule(p, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_profiler_add_rule(p, &rule), PEAT_STATUS_INVALID_ARGUMENT); /* no glob */
  rule.op_glob = "c::skip";
  rule.record = 3;
  CHECK_STATUS(peat_profiler_add_rule(p, &rule), PEAT_STATUS_INVALID_ARGUMENT);
  rule.record = 0;
  rule.struct_size = 1000;
  CHECK_STATUS(peat_profiler_add_rule(p, &rule), PEAT_STATUS_VERSION_MISMATCH);
  rule.struct_size = sizeof rule;
  CHECK_STATUS(peat_profiler_add_rule(p, &rule), PEAT_STATUS_OK);
  CHECK_STATUS(peat_profiler_should_record(p, op2, 0, -1, &flag), PEAT_STATUS_OK);
  CHECK(flag == 0);
  CHECK_STATUS(peat_profiler_should_record(p, op, 0, -1, &flag), PEAT_STATUS_OK);
  CHECK(flag == 1);
  CHECK_STATUS(peat_profiler_should_record(p, op, 0, -1, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_profiler_should_record(p, 999, 0, -1, &flag), PEAT_STATUS_NOT_FOUND);
  CHECK_STATUS(peat_profiler_should_record(p, op, 0, -7, &flag), PEAT_STATUS_INVALID_ARGUMENT);

  CHECK_STATUS(peat_profiler_mark_step(p, 1), PEAT_STATUS_OK);
  CHECK_STATUS(peat_profiler_mark_step(p, -1), PEAT_STATUS_INVALID_ARGUMENT);
  memset(attrs, 0, sizeof attrs);
  attrs[0].key = "lda";
  attrs[0].type = PEAT_ATTR_INT;
  attrs[0].i = 3;
  attrs[1].key = "mode";
  attrs[1].type = PEAT_ATTR_STRING;
  attrs[1].s = "nn";
  peat_op_record_init(&rec);
  CHECK(rec.call_index == PEAT_CALL_NEXT && rec.step == -1 && rec.phase == -1);
  rec.op = op;
  rec.attrs = attrs;
  rec.n_attrs = 2;
  rec.inputs = tensors;
  rec.input_names = names;
  rec.n_inputs = 1;
  rec.outputs = tensors;
  rec.n_outputs = 1;
  CHECK_STATUS(peat_profiler_record_op(p, NULL, NULL, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_profiler_record_op(p, &rec, &recorded, &call), PEAT_STATUS_OK);
  CHECK(recorded == 1 && call == 0);
  rec.op = op2;
  CHECK_STATUS(peat_profiler_record_op(p, &rec, &recorded, &call), PEAT_STATUS_OK);
  CHECK(recorded == 0);
  rec.op = op;
  rec.force = 5;
  CHECK_STATUS(peat_profiler_record_op(p, &rec, &recorded, &call), PEAT_STATUS_INVALID_ARGUMENT);
  rec.force = 0;
  rec.phase = 4;
  CHECK_STATUS(peat_profiler_record_op(p, &rec, &recorded, &call), PEAT_STATUS_INVALID_ARGUMENT);
  rec.phase = -1;
  attrs[1].type = 99;
  CHECK_STATUS(peat_profiler_record_op(p, &rec, &recorded, &call), PEAT_STATUS_INVALID_ARGUMENT);
  attrs[1].type = PEAT_ATTR_STRING;
  rec.struct_size = sizeof rec + 4;
  CHECK_STATUS(peat_profiler_record_op(p, &rec, &recorded, &call), PEAT_STATUS_VERSION_MISMATCH);
  rec.struct_size = sizeof rec;
  t.ndim = -1;
  CHECK_STATUS(peat_profiler_record_op(p, &rec, &recorded, &call), PEAT_STATUS_INVALID_ARGUMENT);
  t.ndim = 2;

  CHECK_STATUS(peat_profiler_record_checkpoint(p, "ckpt", -1, names, tensors, 1, NULL, &recorded), PEAT_STATUS_OK);
  CHECK(recorded == 1);
  CHECK_STATUS(peat_profiler_record_checkpoint(p, "ckpt", -1, names, NULL, 1, NULL, &recorded),
               PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_profiler_record_scalar(p, "loss", -1, 0.5), PEAT_STATUS_OK);
  CHECK_STATUS(peat_profiler_record_scalar(p, NULL, -1, 0.5), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_profiler_flush(p), PEAT_STATUS_OK);

  st.struct_size = 4;
  CHECK_STATUS(peat_profiler_stats(p, &st), PEAT_STATUS_VERSION_MISMATCH);
  CHECK_STATUS(peat_profiler_stats(p, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  st.struct_size = sizeof st;
  CHECK_STATUS(peat_profiler_stats(p, &st), PEAT_STATUS_OK);
  CHECK(st.records_written == 4);
  CHECK(st.not_sampled == 1);
  CHECK(st.error == PEAT_STATUS_OK);
  CHECK_STATUS(peat_profiler_close(p), PEAT_STATUS_OK);
  CHECK_STATUS(peat_profiler_record_scalar(p, "loss", -1, 0.5), PEAT_STATUS_BAD_STATE);
  CHECK_STATUS(peat_profiler_mark_step(p, 2), PEAT_STATUS_BAD_STATE);
  peat_profiler_destroy(p);

  CHECK_STATUS(peat_trace_open(kPath, NULL, &r), PEAT_STATUS_OK);
  CHECK_STATUS(peat_trace_record_count(r, &count), PEAT_STATUS_OK);
  CHECK(count == 4);
  peat_trace_close(r);
  remove(kPath);
}

int main(void) {
  peat_session_t* session = NULL;
  CHECK_STATUS(peat_session_create(NULL, &session), PEAT_STATUS_OK);
  test_misuse(session);
  test_recording(session);
  peat_session_destroy(session);
  return check_report("profiler");
}
