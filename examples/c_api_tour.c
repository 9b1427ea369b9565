/* c_api_tour.c — the four PEAT objects through the C header only, on small tensors.
 *
 *   1. profiler -> trace -> playback: record four calls of a small GEMM (its
 *      operands, the result, a loss per step) into a trace, read the trace
 *      back, and replay every recorded call through a candidate GEMM that
 *      rounds its inputs to bfloat16;
 *   2. injector: the same candidate swapped in at run time on every 2nd call;
 *   3. analyzer: the candidate's result against the golden one (signature,
 *      RMSE, relative L2, effective mantissa bits);
 *   4. detector: the error model behind that signature.
 *
 * C11, includes only <peat/peat.h>, links only libpeat. Every step checks what
 * it gets and the program exits non-zero with "FAILED: ..." when something is
 * off; the last line, "tour done", is printed only when every check held.
 *
 *   build/examples/c_api_tour [trace-path]     (default: c_api_tour.peat here) */
#include <peat/peat.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { M = 16, N = 12, K = 32, CALLS = 4 };

static int failures = 0;

/* Prints and counts a failed expectation (the tour goes on to show the rest). */
static void expect(int ok, const char* what) {
  if (!ok) {
    printf("FAILED: %s\n", what);
    ++failures;
  }
}

/* A PEAT call that must succeed; exits with the library's message otherwise. */
static void must(peat_status_t status, const char* call) {
  if (status != PEAT_STATUS_OK) {
    printf("FAILED: %s: %s (%s)\n", call, peat_status_string(status), peat_last_error_message());
    exit(1);
  }
}

/* C = A * B, row-major, fp32, summed in index order: the golden kernel. */
static int32_t golden_gemm(void* ctx, const DLTensor* in, int32_t n_in, DLTensor* out, int32_t n_out, const void* attrs) {
  const float* a;
  const float* b;
  float* c;
  int i, j, p;
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
        volatile float prod = a[i * K + p] * b[p * N + j]; /* no fused multiply-add */
        acc += prod;
      }
      c[i * N + j] = acc;
    }
  return 0;
}

/* x rounded to bfloat16 (8 significant bits), round to nearest even. */
static float to_bf16(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  u += 0x7FFFu + ((u >> 16) & 1u);
  u &= 0xFFFF0000u;
  memcpy(&x, &u, sizeof x);
  return x;
}

/* The candidate: the golden GEMM on inputs rounded to bfloat16. */
static int32_t bf16_gemm(void* ctx, const DLTensor* in, int32_t n_in, DLTensor* out, int32_t n_out, const void* attrs) {
  static float a[M * K], b[K * N];
  DLTensor rounded[2];
  int i;
  if (n_in != 2) return 1;
  for (i = 0; i < M * K; ++i) a[i] = to_bf16(((const float*)in[0].data)[i]);
  for (i = 0; i < K * N; ++i) b[i] = to_bf16(((const float*)in[1].data)[i]);
  rounded[0] = in[0];
  rounded[1] = in[1];
  rounded[0].data = a;
  rounded[1].data = b;
  return golden_gemm(ctx, rounded, n_in, out, n_out, attrs);
}

/* A 2-D fp32 view of `data` on the CPU. */
static DLTensor matrix(float* data, int64_t* shape, int64_t rows, int64_t cols) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  shape[0] = rows;
  shape[1] = cols;
  t.data = data;
  t.device.device_type = kDLCPU;
  t.ndim = 2;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = shape;
  return t;
}

static unsigned rng_state = 12345u;
static float uniform(void) { /* in [-1, 1) */
  rng_state = rng_state * 1664525u + 1013904223u;
  return (float)(rng_state >> 8) / 8388608.0f - 1.0f;
}

static float A[M * K], B[K * N], C[M * N], C2[M * N];
static int64_t shape_a[2], shape_b[2], shape_c[2], shape_c2[2];

/* ---- 1. profiler -> trace -> playback ----------------------------------- */
static void tour_profiler_trace_playback(const char* path) {
  peat_session_t* session = NULL;
  peat_profiler_t* profiler = NULL;
  peat_profiler_options_t po;
  peat_profiler_stats_t stats;
  peat_trace_reader_t* reader = NULL;
  peat_trace_filter_t filter;
  peat_playback_t* playback = NULL;
  peat_playback_options_t pbo;
  peat_playback_summary_t summary;
  DLTensor in[2], out;
  const DLTensor* ins[2];
  const DLTensor* outs[1];
  const char* in_names[2] = {"A", "B"};
  const char* out_names[1] = {"C"};
  peat_attr_t attrs[3];
  uint32_t op = 0;
  uint64_t count = 0, index, ops = 0, scalars = 0;
  int call, i;

  in[0] = matrix(A, shape_a, M, K);
  in[1] = matrix(B, shape_b, K, N);
  out = matrix(C, shape_c, M, N);
  ins[0] = &in[0];
  ins[1] = &in[1];
  outs[0] = &out;
  must(peat_session_create(NULL, &session), "peat_session_create");
  must(peat_session_intern_op(session, "layer1/fwd_gemm", &op), "peat_session_intern_op");
  peat_profiler_options_init(&po);
  po.path = path;
  po.framework = "c_api_tour";
  must(peat_profiler_create(session, &po, &profiler), "peat_profiler_create");
  memset(attrs, 0, sizeof attrs);
  attrs[0].key = "M";
  attrs[1].key = "N";
  attrs[2].key = "K";
  attrs[0].type = attrs[1].type = attrs[2].type = PEAT_ATTR_INT;
  attrs[0].i = M;
  attrs[1].i = N;
  attrs[2].i = K;
  for (call = 0; call < CALLS; ++call) {
    peat_op_record_t rec;
    int32_t recorded = 0;
    for (i = 0; i < M * K; ++i) A[i] = uniform();
    for (i = 0; i < K * N; ++i) B[i] = uniform();
    must(peat_profiler_mark_step(profiler, call), "peat_profiler_mark_step");
    golden_gemm(NULL, in, 2, &out, 1, NULL);
    peat_op_record_init(&rec);
    rec.op = op;
    rec.phase = PEAT_PHASE_FORWARD;
    rec.module_path = "layer1";
    rec.attrs = attrs;
    rec.n_attrs = 3;
    rec.inputs = ins;
    rec.input_names = in_names;
    rec.n_inputs = 2;
    rec.outputs = outs;
    rec.output_names = out_names;
    rec.n_outputs = 1;
    must(peat_profiler_record_op(profiler, &rec, &recorded, NULL), "peat_profiler_record_op");
    expect(recorded == 1, "every call is recorded (no sampling rule: the default records)");
    must(peat_profiler_record_scalar(profiler, "loss", call, 2.0 / (call + 1)), "peat_profiler_record_scalar");
  }
  must(peat_profiler_close(profiler), "peat_profiler_close");
  stats.struct_size = sizeof stats;
  must(peat_profiler_stats(profiler, &stats), "peat_profiler_stats");
  printf("profiler: %llu records written to %s (%llu tensor bytes, %llu file bytes)\n", (unsigned long long)stats.records_written, path,
         (unsigned long long)stats.raw_bytes, (unsigned long long)stats.file_bytes);
  expect(stats.records_written == 3 * CALLS, "4 step markers + 4 ops + 4 scalars written");
  peat_profiler_destroy(profiler);
  peat_session_destroy(session);

  must(peat_trace_open(path, NULL, &reader), "peat_trace_open");
  must(peat_trace_record_count(reader, &count), "peat_trace_record_count");
  peat_trace_filter_init(&filter);
  filter.kinds = 1u << PEAT_TRACE_KIND_OP;
  for (index = 0; peat_trace_next(reader, &filter, index, &index) == PEAT_STATUS_OK; ++index) {
    peat_trace_record_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    must(peat_trace_record_info(reader, index, &info), "peat_trace_record_info");
    if (ops == 0) printf("trace: record %llu is op '%s' (layer %s) at step %lld\n", (unsigned long long)index, info.name, info.module_path,
                         (long long)info.step);
    ++ops;
  }
  filter.kinds = 1u << PEAT_TRACE_KIND_SCALAR;
  for (index = 0; peat_trace_next(reader, &filter, index, &index) == PEAT_STATUS_OK; ++index) ++scalars;
  printf("trace: %llu records, %llu op calls, %llu scalars\n", (unsigned long long)count, (unsigned long long)ops,
         (unsigned long long)scalars);
  expect(count == 3 * CALLS && ops == CALLS && scalars == CALLS, "the trace holds what was recorded");

  peat_playback_options_init(&pbo);
  pbo.run_twice = 1;
  must(peat_playback_create(reader, &pbo, &playback), "peat_playback_create");
  must(peat_playback_set_candidate(playback, bf16_gemm, NULL), "peat_playback_set_candidate");
  must(peat_playback_run(playback), "peat_playback_run");
  memset(&summary, 0, sizeof summary);
  summary.struct_size = sizeof summary;
  must(peat_playback_summary(playback, &summary), "peat_playback_summary");
  printf("playback (bf16 candidate): %llu records, %llu exact, %llu mismatched, %llu nondeterministic\n",
         (unsigned long long)summary.done, (unsigned long long)summary.exact, (unsigned long long)summary.mismatched,
         (unsigned long long)summary.nondeterministic);
  expect(summary.done == CALLS && summary.mismatched == CALLS && summary.nondeterministic == 0,
         "every replayed call differs from the recorded golden output, deterministically");
  must(peat_playback_set_candidate(playback, golden_gemm, NULL), "peat_playback_set_candidate");
  must(peat_playback_run(playback), "peat_playback_run");
  must(peat_playback_summary(playback, &summary), "peat_playback_summary");
  printf("playback (golden kernel): %llu records, %llu exact\n", (unsigned long long)summary.done, (unsigned long long)summary.exact);
  expect(summary.exact == CALLS, "the golden kernel replays its own recording exactly");
  peat_playback_destroy(playback);
  peat_trace_close(reader);
}

/* ---- 2. injector: the candidate on every 2nd call at run time ------------ */
static void tour_injector(void) {
  peat_session_t* session = NULL;
  peat_injector_t* injector = NULL;
  peat_injector_policy_t policy;
  DLTensor in[2], out;
  uint32_t op = 0;
  uint64_t firings = 0, call = 0;
  int c, candidate_calls = 0;

  in[0] = matrix(A, shape_a, M, K);
  in[1] = matrix(B, shape_b, K, N);
  out = matrix(C, shape_c, M, N);
  must(peat_session_create(NULL, &session), "peat_session_create");
  must(peat_session_intern_op(session, "layer1/fwd_gemm", &op), "peat_session_intern_op");
  must(peat_injector_create(session, NULL, &injector), "peat_injector_create");
  must(peat_injector_set_candidate(injector, "layer1/*", bf16_gemm, NULL), "peat_injector_set_candidate");
  peat_injector_policy_init(&policy);
  policy.op_pattern = "layer1/*";
  policy.action = PEAT_ACTION_RUN_CANDIDATE;
  policy.every_n = 2;
  policy.phase_offset = 1;
  must(peat_injector_add_policy(injector, &policy, NULL), "peat_injector_add_policy");
  printf("injector:");
  for (c = 0; c < 4; ++c) {
    peat_action_t action = PEAT_ACTION_RUN_GOLDEN;
    must(peat_injector_dispatch(injector, op, in, 2, &out, 1, NULL, golden_gemm, NULL, &action, &call), "peat_injector_dispatch");
    printf(" call %llu -> %s%s", (unsigned long long)call, peat_action_name(action), c < 3 ? "," : "\n");
    expect(action == (c % 2 ? PEAT_ACTION_RUN_CANDIDATE : PEAT_ACTION_RUN_GOLDEN), "the candidate runs on odd calls only");
    candidate_calls += action == PEAT_ACTION_RUN_CANDIDATE;
  }
  must(peat_injector_firing_count(injector, &firings, NULL), "peat_injector_firing_count");
  printf("injector: %llu firings logged\n", (unsigned long long)firings);
  expect(firings == 2 && candidate_calls == 2, "two firings in four calls");
  peat_injector_destroy(injector);
  peat_session_destroy(session);
}

/* ---- 3. analyzer and 4. detector on one golden/candidate pair ----------- */
static void tour_analyzer_detector(void) {
  DLTensor in[2], golden, candidate;
  peat_signature_config_t config;
  peat_signature_t sig;
  peat_detect_context_t ctx;
  peat_detection_t det;
  double rmse = 0, rel_l2 = 0, bits = 0;
  char text[4096];
  size_t length = 0;

  in[0] = matrix(A, shape_a, M, K);
  in[1] = matrix(B, shape_b, K, N);
  golden = matrix(C, shape_c, M, N);
  candidate = matrix(C2, shape_c2, M, N);
  golden_gemm(NULL, in, 2, &golden, 1, NULL);
  bf16_gemm(NULL, in, 2, &candidate, 1, NULL);

  peat_signature_config_init(&config);
  config.reduction_length = K;
  peat_signature_init(&sig);
  must(peat_analyze(&golden, &candidate, &config, &sig, NULL), "peat_analyze");
  must(peat_signature_rmse(&sig, &rmse), "peat_signature_rmse");
  must(peat_signature_relative_l2(&sig, &rel_l2), "peat_signature_relative_l2");
  must(peat_signature_effective_mantissa_bits(&sig, 0.5, &bits), "peat_signature_effective_mantissa_bits");
  printf("analyzer: %llu elements, %llu differ, rmse %.3g, relative L2 %.3g, %.1f effective mantissa bits\n", (unsigned long long)sig.count,
         (unsigned long long)sig.value_mismatch_count, rmse, rel_l2, bits);
  expect(sig.count == M * N && rel_l2 > 1e-4 && rel_l2 < 1e-1, "bf16 inputs: a relative L2 error between 1e-4 and 1e-1");
  expect(bits > 5.5 && bits < 10.0, "bf16 inputs: 6 to 9 effective mantissa bits");

  peat_detect_context_init(&ctx);
  ctx.op_kind = PEAT_OP_KIND_GEMM;
  ctx.reduction_length = K;
  peat_detection_init(&det);
  must(peat_detect(&sig, &ctx, &det), "peat_detect");
  must(peat_detection_render(&det, PEAT_RENDER_TEXT, text, sizeof text, &length), "peat_detection_render");
  printf("detector: %s (confidence %.2f)\n%s\n", peat_error_model_name(det.verdicts[0].model), det.verdicts[0].confidence, text);
  expect(det.verdicts[0].model == PEAT_ERROR_MODEL_REDUCED_PRECISION, "the detector names REDUCED_PRECISION");
}

int main(int argc, char** argv) {
  const char* path = argc > 1 ? argv[1] : "c_api_tour.peat";
  printf("PEAT %s\n", peat_version_string());
  tour_profiler_trace_playback(path);
  tour_injector();
  tour_analyzer_detector();
  remove(path);
  if (failures) {
    printf("FAILED: %d check(s)\n", failures);
    return 1;
  }
  printf("tour done: profiler, trace, playback, injector, analyzer, detector\n");
  return 0;
}
