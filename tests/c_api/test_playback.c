/* Pure-C test of peat/playback.h: every exported function, including misuse
 * (NULL handles and pointers, wrong struct_size, unknown enum values), on a
 * trace of a golden GEMM recorded through the profiler, replayed against
 * itself (exact) and against a candidate with a known defect. Includes only
 * <peat/peat.h>. */
#include <peat/peat.h>

#include <stdio.h>
#include <string.h>

#include "check.h"

static const char* kPath = "c_api_test_playback.peat";
static const char* kJson = "c_api_test_playback.jsonl";

enum { M = 8, N = 6, K = 5, CALLS = 6 };

/* Golden: C = A * B, sequential fp32 sum. */
static int32_t gemm(void* ctx, const DLTensor* in, int32_t n_in, DLTensor* out, int32_t n_out, const void* attrs) {
  const float* a;
  const float* b;
  float* c;
  int64_t i, j, p;
  (void)ctx;
  (void)attrs;
  if (n_in != 2 || n_out != 1) return 1;
  a = (const float*)in[0].data;
  b = (const float*)in[1].data;
  c = (float*)out[0].data;
  for (i = 0; i < M; ++i)
    for (j = 0; j < N; ++j) {
      float acc = 0.0f;
      for (p = 0; p < K; ++p) {
        volatile float prod = a[i * K + p] * b[p * N + j];
        acc += prod;
      }
      c[i * N + j] = acc;
    }
  return 0;
}

/* Defect: the last row is never written (stays as playback left it: zero). */
static int32_t gemm_drop_row(void* ctx, const DLTensor* in, int32_t n_in, DLTensor* out, int32_t n_out,
                             const void* attrs) {
  int32_t rc = gemm(ctx, in, n_in, out, n_out, attrs);
  memset((float*)out[0].data + (M - 1) * N, 0, N * sizeof(float));
  return rc;
}

static int32_t gemm_fails(void* ctx, const DLTensor* in, int32_t n_in, DLTensor* out, int32_t n_out,
                          const void* attrs) {
  (void)ctx; (void)in; (void)n_in; (void)out; (void)n_out; (void)attrs;
  return 5;
}

/* Reads the record description (ATTRS_LIST mode), then the golden GEMM. */
static int32_t gemm_checks_attrs(void* ctx, const DLTensor* in, int32_t n_in, DLTensor* out, int32_t n_out,
                                 const void* attrs) {
  const peat_playback_attrs_t* a = (const peat_playback_attrs_t*)attrs;
  if (a == NULL || a->struct_size != sizeof(peat_playback_attrs_t) || a->n_attrs != 0) return 2;
  if (strcmp(a->op, "gemm") != 0 || a->step != (int64_t)(a->call_index / 2)) return 3;
  if (strcmp(a->module_path, a->call_index % 2 ? "layer.b" : "layer.a") != 0) return 4;
  return gemm(ctx, in, n_in, out, n_out, NULL);
}

static int32_t cancel_after_2(void* user, uint64_t done, uint64_t total) {
  (void)user;
  (void)total;
  return done >= 2 ? 1 : 0;
}

static void fill_tensor(DLTensor* t, float* data, int64_t* shape, int64_t rows, int64_t cols) {
  memset(t, 0, sizeof *t);
  shape[0] = rows;
  shape[1] = cols;
  t->data = data;
  t->device.device_type = kDLCPU;
  t->ndim = 2;
  t->dtype.code = kDLFloat;
  t->dtype.bits = 32;
  t->dtype.lanes = 1;
  t->shape = shape;
}

static void write_trace(void) {
  peat_session_t* session = NULL;
  peat_profiler_options_t o;
  peat_profiler_t* p = NULL;
  peat_op_record_t rec;
  float a[M * K], b[K * N], c[M * N];
  int64_t sa[2], sb[2], sc[2];
  DLTensor in[2], tc;
  const DLTensor* ins[2];
  const DLTensor* outs[1];
  uint32_t op = 0;
  int call, i;
  unsigned seed = 7;

  fill_tensor(&in[0], a, sa, M, K);
  fill_tensor(&in[1], b, sb, K, N);
  fill_tensor(&tc, c, sc, M, N);
  ins[0] = &in[0];
  ins[1] = &in[1];
  outs[0] = &tc;
  CHECK_STATUS(peat_session_create(NULL, &session), PEAT_STATUS_OK);
  CHECK_STATUS(peat_session_intern_op(session, "gemm", &op), PEAT_STATUS_OK);
  peat_profiler_options_init(&o);
  o.path = kPath;
  CHECK_STATUS(peat_profiler_create(session, &o, &p), PEAT_STATUS_OK);
  for (call = 0; call < CALLS; ++call) {
    for (i = 0; i < M * K; ++i) a[i] = (float)((seed = seed * 1103515245u + 12345u) >> 16) / 65536.0f - 0.5f;
    for (i = 0; i < K * N; ++i) b[i] = (float)((seed = seed * 1103515245u + 12345u) >> 16) / 65536.0f - 0.5f;
    CHECK(gemm(NULL, in, 2, &tc, 1, NULL) == 0);
    CHECK_STATUS(peat_profiler_mark_step(p, call / 2), PEAT_STATUS_OK);
    peat_op_record_init(&rec);
    rec.op = op;
    rec.phase = PEAT_PHASE_FORWARD;
    rec.module_path = call % 2 ? "layer.b" : "layer.a";
    rec.inputs = ins;
    rec.n_inputs = 2;
    rec.outputs = outs;
    rec.n_outputs = 1;
    CHECK_STATUS(peat_profiler_record_op(p, &rec, NULL, NULL), PEAT_STATUS_OK);
  }
  CHECK_STATUS(peat_profiler_close(p), PEAT_STATUS_OK);
  peat_profiler_destroy(p);
  peat_session_destroy(session);
}

static void test_misuse(peat_trace_reader_t* reader) {
  peat_playback_options_t o;
  peat_playback_t* pb = NULL;
  peat_trace_filter_t f;
  peat_signature_config_t config;
  peat_playback_summary_t s;
  peat_playback_result_t r;
  peat_playback_group_t g;
  peat_signature_t sig;
  uint64_t n = 0;

  peat_playback_options_init(NULL); /* NULL-safe */
  peat_playback_destroy(NULL);
  CHECK_STATUS(peat_playback_create(NULL, NULL, &pb), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_playback_create(reader, NULL, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  peat_playback_options_init(&o);
  o.struct_size = 2;
  CHECK_STATUS(peat_playback_create(reader, &o, &pb), PEAT_STATUS_VERSION_MISMATCH);
  o.struct_size = sizeof o + 8;
  CHECK_STATUS(peat_playback_create(reader, &o, &pb), PEAT_STATUS_VERSION_MISMATCH);
  peat_playback_options_init(&o);
  o.attrs_mode = 9;
  CHECK_STATUS(peat_playback_create(reader, &o, &pb), PEAT_STATUS_INVALID_ARGUMENT);
  peat_playback_options_init(&o);
  o.max_in_flight = 0;
  CHECK_STATUS(peat_playback_create(reader, &o, &pb), PEAT_STATUS_INVALID_ARGUMENT);
  peat_playback_options_init(&o);
  o.num_threads = -1;
  CHECK_STATUS(peat_playback_create(reader, &o, &pb), PEAT_STATUS_INVALID_ARGUMENT);
  peat_playback_options_init(&o);
  o.run_twice = 2;
  CHECK_STATUS(peat_playback_create(reader, &o, &pb), PEAT_STATUS_INVALID_ARGUMENT);
  peat_playback_options_init(&o);
  peat_trace_filter_init(&f);
  f.phase = 17;
  o.filter = &f;
  CHECK_STATUS(peat_playback_create(reader, &o, &pb), PEAT_STATUS_INVALID_ARGUMENT);
  peat_trace_filter_init(&f);
  f.kinds = 1u << 30;
  CHECK_STATUS(peat_playback_create(reader, &o, &pb), PEAT_STATUS_INVALID_ARGUMENT);
  peat_trace_filter_init(&f);
  f.struct_size = 1;
  CHECK_STATUS(peat_playback_create(reader, &o, &pb), PEAT_STATUS_VERSION_MISMATCH);
  peat_playback_options_init(&o);
  peat_signature_config_init(&config);
  config.tile_rows = 0;
  o.config = &config;
  CHECK_STATUS(peat_playback_create(reader, &o, &pb), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(pb == NULL);

  /* NULL handles everywhere */
  CHECK_STATUS(peat_playback_set_candidate(NULL, gemm, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_playback_set_candidate_symbol(NULL, "x.so:f", NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_playback_run(NULL), PEAT_STATUS_INVALID_ARGUMENT);
  s.struct_size = sizeof s;
  CHECK_STATUS(peat_playback_summary(NULL, &s), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_playback_result_count(NULL, &n), PEAT_STATUS_INVALID_ARGUMENT);
  r.struct_size = sizeof r;
  CHECK_STATUS(peat_playback_result(NULL, 0, &r), PEAT_STATUS_INVALID_ARGUMENT);
  peat_signature_init(&sig);
  CHECK_STATUS(peat_playback_result_signature(NULL, 0, 0, PEAT_PLAYBACK_FIRST_VS_GOLDEN, &sig),
               PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_playback_group_count(NULL, PEAT_PLAYBACK_BY_OP, &n), PEAT_STATUS_INVALID_ARGUMENT);
  g.struct_size = sizeof g;
  CHECK_STATUS(peat_playback_group(NULL, PEAT_PLAYBACK_BY_OP, 0, &g), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_playback_group_signature(NULL, PEAT_PLAYBACK_BY_OP, 0, 0, PEAT_PLAYBACK_FIRST_VS_GOLDEN, &sig),
               PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_playback_write_jsonl(NULL, kJson, 0), PEAT_STATUS_INVALID_ARGUMENT);

  /* a valid handle with bad arguments */
  CHECK_STATUS(peat_playback_create(reader, NULL, &pb), PEAT_STATUS_OK);
  CHECK_STATUS(peat_playback_run(pb), PEAT_STATUS_BAD_STATE); /* no candidate */
  CHECK(strlen(peat_last_error_message()) > 0);
  CHECK_STATUS(peat_playback_set_candidate(pb, NULL, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_playback_set_candidate_symbol(pb, NULL, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_playback_set_candidate_symbol(pb, "nocolon", NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_playback_set_candidate_symbol(pb, "/no/such/libx.so:f", NULL), PEAT_STATUS_NOT_FOUND);
  CHECK(strstr(peat_last_error_message(), "/no/such/libx.so") != NULL);
  CHECK_STATUS(peat_playback_set_candidate_symbol(pb, "libc.so.6:peat_no_such_symbol", NULL), PEAT_STATUS_NOT_FOUND);
  CHECK(strstr(peat_last_error_message(), "peat_no_such_symbol") != NULL);
  s.struct_size = 4;
  CHECK_STATUS(peat_playback_summary(pb, &s), PEAT_STATUS_VERSION_MISMATCH);
  CHECK_STATUS(peat_playback_summary(pb, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  s.struct_size = sizeof s;
  CHECK_STATUS(peat_playback_summary(pb, &s), PEAT_STATUS_OK);
  CHECK(s.done == 0 && s.selected == 0);
  CHECK_STATUS(peat_playback_result_count(pb, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_playback_result_count(pb, &n), PEAT_STATUS_OK);
  CHECK(n == 0);
  CHECK_STATUS(peat_playback_result(pb, 0, &r), PEAT_STATUS_NOT_FOUND);
  CHECK_STATUS(peat_playback_result(pb, 0, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  r.struct_size = 8;
  CHECK_STATUS(peat_playback_result(pb, 0, &r), PEAT_STATUS_VERSION_MISMATCH);
  CHECK_STATUS(peat_playback_result_signature(pb, 0, 0, PEAT_PLAYBACK_FIRST_VS_GOLDEN, &sig), PEAT_STATUS_NOT_FOUND);
  CHECK_STATUS(peat_playback_result_signature(pb, 0, 0, 3, &sig), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_playback_result_signature(pb, 0, 0, PEAT_PLAYBACK_FIRST_VS_GOLDEN, NULL),
               PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_playback_group_count(pb, 5, &n), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_playback_group_count(pb, PEAT_PLAYBACK_BY_OP, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_playback_group(pb, -1, 0, &g), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_playback_group(pb, PEAT_PLAYBACK_BY_LAYER, 0, &g), PEAT_STATUS_NOT_FOUND);
  CHECK_STATUS(peat_playback_group(pb, PEAT_PLAYBACK_BY_LAYER, 0, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_playback_group_signature(pb, 7, 0, 0, PEAT_PLAYBACK_FIRST_VS_GOLDEN, &sig),
               PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_playback_group_signature(pb, PEAT_PLAYBACK_BY_OP, 0, 0, PEAT_PLAYBACK_FIRST_VS_GOLDEN, &sig),
               PEAT_STATUS_NOT_FOUND);
  CHECK_STATUS(peat_playback_write_jsonl(pb, NULL, 0), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_playback_write_jsonl(pb, kJson, 3), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_playback_write_jsonl(pb, "/no/such/dir/x.jsonl", 0), PEAT_STATUS_NOT_FOUND);
  peat_playback_destroy(pb);
}

static void test_replay(peat_trace_reader_t* reader) {
  peat_playback_options_t o;
  peat_playback_t* pb = NULL;
  peat_playback_summary_t s;
  peat_playback_result_t r;
  peat_playback_group_t g;
  peat_signature_t sig;
  uint64_t n = 0, i;
  FILE* f;
  char line[4096];
  int lines = 0;

  /* golden against itself: exact, serial and pipelined */
  for (i = 0; i < 2; ++i) {
    peat_playback_options_init(&o);
    o.thread_safe = (int32_t)i;
    o.run_twice = 1;
    CHECK_STATUS(peat_playback_create(reader, &o, &pb), PEAT_STATUS_OK);
    CHECK_STATUS(peat_playback_set_candidate(pb, gemm, NULL), PEAT_STATUS_OK);
    CHECK_STATUS(peat_playback_run(pb), PEAT_STATUS_OK);
    s.struct_size = sizeof s;
    CHECK_STATUS(peat_playback_summary(pb, &s), PEAT_STATUS_OK);
    CHECK(s.selected == CALLS && s.done == CALLS && s.ok == CALLS && s.exact == CALLS);
    CHECK(s.failed == 0 && s.mismatched == 0 && s.nondeterministic == 0 && s.cancelled == 0);
    CHECK_STATUS(peat_playback_result_count(pb, &n), PEAT_STATUS_OK);
    CHECK(n == CALLS);
    r.struct_size = sizeof r;
    CHECK_STATUS(peat_playback_result(pb, 3, &r), PEAT_STATUS_OK);
    CHECK(r.status == PEAT_STATUS_OK && r.call_index == 3 && r.step == 1 && r.deterministic == 1);
    CHECK(strcmp(r.op, "gemm") == 0 && strcmp(r.module_path, "layer.b") == 0 && strcmp(r.message, "") == 0);
    CHECK(r.elements == M * N && r.bitwise_mismatches == 0 && r.n_outputs == 1);
    peat_signature_init(&sig);
    CHECK_STATUS(peat_playback_result_signature(pb, 3, 0, PEAT_PLAYBACK_SECOND_VS_FIRST, &sig), PEAT_STATUS_OK);
    CHECK(sig.count == M * N && sig.bitwise_mismatch_count == 0);
    CHECK_STATUS(peat_playback_result_signature(pb, 3, 1, PEAT_PLAYBACK_FIRST_VS_GOLDEN, &sig), PEAT_STATUS_NOT_FOUND);
    CHECK_STATUS(peat_playback_group_count(pb, PEAT_PLAYBACK_BY_LAYER, &n), PEAT_STATUS_OK);
    CHECK(n == 2);
    g.struct_size = sizeof g;
    CHECK_STATUS(peat_playback_group(pb, PEAT_PLAYBACK_BY_LAYER, 1, &g), PEAT_STATUS_OK);
    CHECK(strcmp(g.name, "layer.b") == 0 && g.records == 3 && g.exact == 3 && g.n_outputs == 1);
    CHECK_STATUS(peat_playback_group_signature(pb, PEAT_PLAYBACK_BY_OP, 0, 0, PEAT_PLAYBACK_FIRST_VS_GOLDEN, &sig),
                 PEAT_STATUS_OK);
    CHECK(sig.count == CALLS * M * N && sig.bitwise_mismatch_count == 0);
    CHECK_STATUS(peat_playback_group_signature(pb, PEAT_PLAYBACK_BY_OP, 0, 1, PEAT_PLAYBACK_FIRST_VS_GOLDEN, &sig),
                 PEAT_STATUS_NOT_FOUND);
    peat_playback_destroy(pb);
  }

  /* a known defect: the last row dropped -> N mismatches per record, all dropped writes */
  peat_playback_options_init(&o);
  CHECK_STATUS(peat_playback_create(reader, &o, &pb), PEAT_STATUS_OK);
  CHECK_STATUS(peat_playback_set_candidate(pb, gemm_drop_row, NULL), PEAT_STATUS_OK);
  CHECK_STATUS(peat_playback_run(pb), PEAT_STATUS_OK);
  CHECK_STATUS(peat_playback_group_signature(pb, PEAT_PLAYBACK_BY_OP, 0, 0, PEAT_PLAYBACK_FIRST_VS_GOLDEN, &sig),
               PEAT_STATUS_OK);
  CHECK(sig.bitwise_mismatch_count == CALLS * N && sig.dropped_count == CALLS * N);
  CHECK_STATUS(peat_playback_result_signature(pb, 0, 0, PEAT_PLAYBACK_SECOND_VS_GOLDEN, &sig), PEAT_STATUS_NOT_FOUND);
  CHECK_STATUS(peat_playback_write_jsonl(pb, kJson, 0), PEAT_STATUS_OK);
  f = fopen(kJson, "r");
  CHECK(f != NULL);
  if (f) {
    while (fgets(line, sizeof line, f)) {
      if (lines == 0) CHECK(strstr(line, "\"bitwise_mismatches\":6") != NULL);
      ++lines;
    }
    fclose(f);
  }
  CHECK(lines == CALLS + 1 + 2); /* records, one op, two layers */
  remove(kJson);

  /* a failing candidate: every record reported, playback goes on */
  CHECK_STATUS(peat_playback_set_candidate(pb, gemm_fails, NULL), PEAT_STATUS_OK);
  CHECK_STATUS(peat_playback_run(pb), PEAT_STATUS_OK);
  CHECK_STATUS(peat_playback_summary(pb, &s), PEAT_STATUS_OK);
  CHECK(s.failed == CALLS && s.ok == 0);
  CHECK_STATUS(peat_playback_result(pb, 5, &r), PEAT_STATUS_OK);
  CHECK(r.status == PEAT_STATUS_CALLBACK_FAILED);
  CHECK(strstr(r.message, kPath) != NULL && strstr(r.message, "gemm") != NULL);
  CHECK_STATUS(peat_playback_result_signature(pb, 5, 0, PEAT_PLAYBACK_FIRST_VS_GOLDEN, &sig), PEAT_STATUS_NOT_FOUND);
  peat_playback_destroy(pb);

  /* the record description reaches the candidate in ATTRS_LIST mode (NULL is the default) */
  peat_playback_options_init(&o);
  CHECK(o.attrs_mode == PEAT_PLAYBACK_ATTRS_NULL);
  o.attrs_mode = PEAT_PLAYBACK_ATTRS_LIST;
  CHECK_STATUS(peat_playback_create(reader, &o, &pb), PEAT_STATUS_OK);
  CHECK_STATUS(peat_playback_set_candidate(pb, gemm_checks_attrs, NULL), PEAT_STATUS_OK);
  CHECK_STATUS(peat_playback_run(pb), PEAT_STATUS_OK);
  CHECK_STATUS(peat_playback_summary(pb, &s), PEAT_STATUS_OK);
  CHECK(s.exact == CALLS);
  peat_playback_destroy(pb);

  /* cancel through the progress callback */
  peat_playback_options_init(&o);
  o.progress = cancel_after_2;
  CHECK_STATUS(peat_playback_create(reader, &o, &pb), PEAT_STATUS_OK);
  CHECK_STATUS(peat_playback_set_candidate(pb, gemm, NULL), PEAT_STATUS_OK);
  CHECK_STATUS(peat_playback_run(pb), PEAT_STATUS_CANCELLED);
  CHECK_STATUS(peat_playback_summary(pb, &s), PEAT_STATUS_OK);
  CHECK(s.cancelled == 1 && s.done == 2 && s.selected == CALLS);
  peat_playback_destroy(pb);
}

#ifdef PEAT_TEST_CANDIDATES
/* Candidates loaded as "libx.so:symbol" on a trace of an identity op. */
static void test_symbols(void) {
  static const char* path = "c_api_test_playback_copy.peat";
  peat_session_t* session = NULL;
  peat_profiler_options_t po;
  peat_profiler_t* p = NULL;
  peat_op_record_t rec;
  peat_trace_reader_t* reader = NULL;
  peat_playback_t* pb = NULL;
  peat_playback_summary_t s;
  peat_playback_result_t r;
  peat_signature_t sig;
  float x[20];
  int64_t shape[2];
  DLTensor t;
  const DLTensor* ts[1];
  uint32_t op = 0;
  int call, i;

  fill_tensor(&t, x, shape, 4, 5);
  ts[0] = &t;
  CHECK_STATUS(peat_session_create(NULL, &session), PEAT_STATUS_OK);
  CHECK_STATUS(peat_session_intern_op(session, "copy", &op), PEAT_STATUS_OK);
  peat_profiler_options_init(&po);
  po.path = path;
  CHECK_STATUS(peat_profiler_create(session, &po, &p), PEAT_STATUS_OK);
  for (call = 0; call < 3; ++call) {
    for (i = 0; i < 20; ++i) x[i] = 0.25f * (float)(i + 1) * (float)(call + 1);
    peat_op_record_init(&rec);
    rec.op = op;
    rec.inputs = ts;
    rec.n_inputs = 1;
    rec.outputs = ts;
    rec.n_outputs = 1;
    CHECK_STATUS(peat_profiler_record_op(p, &rec, NULL, NULL), PEAT_STATUS_OK);
  }
  CHECK_STATUS(peat_profiler_close(p), PEAT_STATUS_OK);
  peat_profiler_destroy(p);
  peat_session_destroy(session);

  CHECK_STATUS(peat_trace_open(path, NULL, &reader), PEAT_STATUS_OK);
  CHECK_STATUS(peat_playback_create(reader, NULL, &pb), PEAT_STATUS_OK);
  s.struct_size = sizeof s;
  r.struct_size = sizeof r;
  peat_signature_init(&sig);
  CHECK_STATUS(peat_playback_set_candidate_symbol(pb, PEAT_TEST_CANDIDATES ":peat_test_exact", NULL), PEAT_STATUS_OK);
  CHECK_STATUS(peat_playback_run(pb), PEAT_STATUS_OK);
  CHECK_STATUS(peat_playback_summary(pb, &s), PEAT_STATUS_OK);
  CHECK(s.selected == 3 && s.exact == 3);
  CHECK_STATUS(peat_playback_set_candidate_symbol(pb, PEAT_TEST_CANDIDATES ":peat_test_next_ulp", NULL), PEAT_STATUS_OK);
  CHECK_STATUS(peat_playback_run(pb), PEAT_STATUS_OK);
  CHECK_STATUS(peat_playback_summary(pb, &s), PEAT_STATUS_OK);
  CHECK(s.mismatched == 3 && s.exact == 0);
  CHECK_STATUS(peat_playback_group_signature(pb, PEAT_PLAYBACK_BY_OP, 0, 0, PEAT_PLAYBACK_FIRST_VS_GOLDEN, &sig),
               PEAT_STATUS_OK);
  CHECK(sig.count == 60 && sig.bitwise_mismatch_count == 60 && sig.ulp_hist[1] == 60);
  /* a failed load keeps the earlier candidate */
  CHECK_STATUS(peat_playback_set_candidate_symbol(pb, PEAT_TEST_CANDIDATES ":no_such_kernel", NULL),
               PEAT_STATUS_NOT_FOUND);
  CHECK_STATUS(peat_playback_run(pb), PEAT_STATUS_OK);
  CHECK_STATUS(peat_playback_summary(pb, &s), PEAT_STATUS_OK);
  CHECK(s.mismatched == 3);
  CHECK_STATUS(peat_playback_set_candidate_symbol(pb, PEAT_TEST_CANDIDATES ":peat_test_fail", NULL), PEAT_STATUS_OK);
  CHECK_STATUS(peat_playback_run(pb), PEAT_STATUS_OK);
  CHECK_STATUS(peat_playback_result(pb, 2, &r), PEAT_STATUS_OK);
  CHECK(r.status == PEAT_STATUS_CALLBACK_FAILED && strstr(r.message, ":peat_test_fail returned 3") != NULL);
  CHECK(strstr(r.message, path) != NULL && strstr(r.message, "record 2") != NULL && strstr(r.message, "'copy'") != NULL);
  peat_playback_destroy(pb);
  peat_trace_close(reader);
  remove(path);
}
#endif

int main(void) {
  peat_trace_reader_t* reader = NULL;
  write_trace();
  CHECK_STATUS(peat_trace_open(kPath, NULL, &reader), PEAT_STATUS_OK);
  if (reader) {
    test_misuse(reader);
    test_replay(reader);
  }
  peat_trace_close(reader);
  remove(kPath);
#ifdef PEAT_TEST_CANDIDATES
  test_symbols();
#endif
  return check_report("playback");
}
