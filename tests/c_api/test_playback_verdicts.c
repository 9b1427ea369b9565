/* Pure-C test: playback judges every call alone and counts the verdicts per
 * op and output (peat_playback_group_verdicts), because merged signatures
 * misname per-call faults. A candidate that flips one exponent bit of one
 * output element per call, in another element each call, is BITFLIP_SINGLE
 * in every one of its calls, with the bit named. Includes only <peat/peat.h>. */
#include <peat/peat.h>

#include <stdio.h>
#include <string.h>

#include "check.h"

static const char* kPath = "c_api_test_playback_verdicts.peat";

enum { M = 12, N = 10, K = 16, CALLS = 8, BIT = 27 };

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
      for (p = 0; p < K; ++p) acc += a[i * K + p] * b[p * N + j];
      c[i * N + j] = acc;
    }
  return 0;
}

/* The golden GEMM, then bit BIT of one element flipped: element 7 * call. */
static int32_t gemm_flip_one(void* ctx, const DLTensor* in, int32_t n_in, DLTensor* out, int32_t n_out,
                             const void* attrs) {
  const peat_playback_attrs_t* a = (const peat_playback_attrs_t*)attrs;
  uint32_t bits;
  float* c;
  int64_t e;
  int32_t rc = gemm(ctx, in, n_in, out, n_out, NULL);
  if (rc != 0 || a == NULL) return rc ? rc : 2;
  c = (float*)out[0].data;
  e = (int64_t)((a->call_index * 7u) % (M * N));
  memcpy(&bits, &c[e], sizeof bits);
  bits ^= 1u << BIT;
  memcpy(&c[e], &bits, sizeof bits);
  return 0;
}

int main(void) {
  static float a[M * K], b[K * N], c[M * N];
  int64_t a_shape[2] = {M, K}, b_shape[2] = {K, N}, c_shape[2] = {M, N};
  DLTensor av, bv, cv;
  const DLTensor* ins[2];
  const DLTensor* outs[1];
  peat_session_t* s = NULL;
  peat_profiler_t* prof = NULL;
  peat_profiler_options_t po;
  peat_trace_reader_t* r = NULL;
  peat_playback_t* pb = NULL;
  peat_playback_options_t opts;
  peat_playback_verdicts_t v;
  peat_detection_t det;
  peat_detect_context_t ctx;
  uint32_t op = 0;
  unsigned state = 99u;
  int call, i;

  av = check_tensor_f32(a, 2, a_shape);
  bv = check_tensor_f32(b, 2, b_shape);
  cv = check_tensor_f32(c, 2, c_shape);
  ins[0] = &av;
  ins[1] = &bv;
  outs[0] = &cv;
  CHECK_STATUS(peat_session_create(NULL, &s), PEAT_STATUS_OK);
  CHECK_STATUS(peat_session_intern_op(s, "fc/aten::mm", &op), PEAT_STATUS_OK);
  peat_profiler_options_init(&po);
  po.path = kPath;
  CHECK_STATUS(peat_profiler_create(s, &po, &prof), PEAT_STATUS_OK);
  for (call = 0; call < CALLS; ++call) {
    peat_op_record_t rec;
    for (i = 0; i < M * K; ++i) {
      state = state * 1664525u + 1013904223u;
      a[i] = (float)((state >> 8) % 2001) / 1000.0f - 1.0f;
    }
    for (i = 0; i < K * N; ++i) {
      state = state * 1664525u + 1013904223u;
      b[i] = (float)((state >> 8) % 2001) / 1000.0f - 1.0f;
    }
    {
      DLTensor operands[2];
      operands[0] = av;
      operands[1] = bv;
      CHECK(gemm(NULL, operands, 2, &cv, 1, NULL) == 0);
    }
    peat_op_record_init(&rec);
    rec.op = op;
    rec.inputs = ins;
    rec.n_inputs = 2;
    rec.outputs = outs;
    rec.n_outputs = 1;
    CHECK_STATUS(peat_profiler_record_op(prof, &rec, NULL, NULL), PEAT_STATUS_OK);
  }
  CHECK_STATUS(peat_profiler_close(prof), PEAT_STATUS_OK);
  peat_profiler_destroy(prof);

  CHECK_STATUS(peat_trace_open(kPath, NULL, &r), PEAT_STATUS_OK);
  /* the record's context: a GEMM with K from the shapes */
  peat_detect_context_init(&ctx);
  CHECK_STATUS(peat_playback_detect_context(r, 0, 0, 0, &ctx), PEAT_STATUS_OK);
  CHECK(ctx.op_kind == PEAT_OP_KIND_GEMM && ctx.reduction_length == K);
  CHECK_STATUS(peat_playback_detect_context(r, 99, 0, 0, &ctx), PEAT_STATUS_NOT_FOUND);
  CHECK_STATUS(peat_playback_detect_context(NULL, 0, 0, 0, &ctx), PEAT_STATUS_INVALID_ARGUMENT);

  peat_playback_options_init(&opts);
  opts.attrs_mode = PEAT_PLAYBACK_ATTRS_LIST;
  CHECK_STATUS(peat_playback_create(r, &opts, &pb), PEAT_STATUS_OK);
  CHECK_STATUS(peat_playback_set_candidate(pb, gemm_flip_one, NULL), PEAT_STATUS_OK);
  CHECK_STATUS(peat_playback_run(pb), PEAT_STATUS_OK);

  memset(&v, 0, sizeof v);
  v.struct_size = sizeof v;
  CHECK_STATUS(peat_playback_group_verdicts(pb, PEAT_PLAYBACK_BY_OP, 0, 0, &v), PEAT_STATUS_OK);
  CHECK(v.records == CALLS && v.judged == CALLS);
  CHECK(v.counts[PEAT_ERROR_MODEL_BITFLIP_SINGLE] == CALLS);
  CHECK(v.top_model == PEAT_ERROR_MODEL_BITFLIP_SINGLE);
  CHECK(v.bits == (1ull << BIT));
  if (v.counts[PEAT_ERROR_MODEL_BITFLIP_SINGLE] != CALLS)
    for (i = 0; i < PEAT_PLAYBACK_MODEL_SLOTS; ++i)
      if (v.counts[i]) fprintf(stderr, "  %s: %llu\n", peat_error_model_name(i), (unsigned long long)v.counts[i]);
  /* by layer too (the record's module path is "") */
  CHECK_STATUS(peat_playback_group_verdicts(pb, PEAT_PLAYBACK_BY_LAYER, 0, 0, &v), PEAT_STATUS_OK);
  CHECK(v.counts[PEAT_ERROR_MODEL_BITFLIP_SINGLE] == CALLS);

  /* one call's full detection: the flipped bit and one element */
  peat_detection_init(&det);
  CHECK_STATUS(peat_playback_result_detection(pb, 3, 0, &det), PEAT_STATUS_OK);
  CHECK(det.verdict_count >= 1 && det.verdicts[0].model == PEAT_ERROR_MODEL_BITFLIP_SINGLE);
  CHECK(det.verdicts[0].bit == BIT && det.mismatches == 1);

  /* misuse */
  CHECK_STATUS(peat_playback_group_verdicts(pb, PEAT_PLAYBACK_BY_OP, 0, 1, &v), PEAT_STATUS_NOT_FOUND);
  CHECK_STATUS(peat_playback_group_verdicts(pb, PEAT_PLAYBACK_BY_OP, 5, 0, &v), PEAT_STATUS_NOT_FOUND);
  CHECK_STATUS(peat_playback_group_verdicts(pb, 7, 0, 0, &v), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_playback_group_verdicts(pb, PEAT_PLAYBACK_BY_OP, 0, 0, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  v.struct_size = 8;
  CHECK_STATUS(peat_playback_group_verdicts(pb, PEAT_PLAYBACK_BY_OP, 0, 0, &v), PEAT_STATUS_VERSION_MISMATCH);
  CHECK_STATUS(peat_playback_result_detection(pb, CALLS, 0, &det), PEAT_STATUS_NOT_FOUND);
  CHECK_STATUS(peat_playback_result_detection(pb, 0, 1, &det), PEAT_STATUS_NOT_FOUND);

  peat_playback_destroy(pb);
  peat_trace_close(r);
  peat_session_destroy(s);
  remove(kPath);
  return check_report("c_api: playback per-call verdicts");
}
