/* Pure-C test: a recorded op whose input is a strided view (a transposed GEMM
 * operand) replays with that layout. The trace keeps each input's strides
 * (format 1.1), the reader reports them (and still serves a caller whose
 * peat_trace_tensor_info_t ends before them), and playback hands the
 * candidate the recorded strides, so that a kernel whose rounding depends on
 * the layout -- as a BLAS does when it picks its kernel by the transpose flag
 * -- replays as itself, EXACT. Includes only <peat/peat.h>. */
#include <peat/peat.h>

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

static const char* kPath = "c_api_test_playback_layout.peat";

enum { M = 7, N = 5, K = 64 };

static int64_t g_seen_strides[2][2];
static int g_seen_null[2];
static int g_calls;

static int64_t stride_of(const DLTensor* t, int d, int64_t compact) {
  return t->strides ? t->strides[d] : compact;
}

/* C = A * B for any strides of A [M, K] and B [K, N]. Like a BLAS, the
 * accumulation order follows A's layout: a column-major (transposed) A is
 * summed from the last k down, a row-major one from the first up. */
static int32_t layout_gemm(void* ctx, const DLTensor* in, int32_t n_in, DLTensor* out, int32_t n_out,
                           const void* attrs) {
  const float* a;
  const float* b;
  float* c;
  int64_t a0, a1, b0, b1, i, j, p;
  int column_major;
  (void)ctx;
  (void)attrs;
  if (n_in != 2 || n_out != 1) return 1;
  for (i = 0; i < 2; ++i) {
    g_seen_null[i] = in[i].strides == NULL;
    g_seen_strides[i][0] = stride_of(&in[i], 0, in[i].shape[1]);
    g_seen_strides[i][1] = stride_of(&in[i], 1, 1);
  }
  ++g_calls;
  a = (const float*)in[0].data;
  b = (const float*)in[1].data;
  c = (float*)out[0].data;
  a0 = stride_of(&in[0], 0, K);
  a1 = stride_of(&in[0], 1, 1);
  b0 = stride_of(&in[1], 0, N);
  b1 = stride_of(&in[1], 1, 1);
  column_major = a0 == 1 && a1 != 1;
  for (i = 0; i < M; ++i)
    for (j = 0; j < N; ++j) {
      float acc = 0.0f;
      for (p = 0; p < K; ++p) {
        const int64_t q = column_major ? K - 1 - p : p;
        volatile float prod = a[i * a0 + q * a1] * b[q * b0 + j * b1];
        acc += prod;
      }
      c[i * N + j] = acc;
    }
  return 0;
}

int main(void) {
  static float at_storage[K * M]; /* A^T, row-major [K, M]: A = at_storage viewed [M, K] with strides {1, M} */
  static float b[K * N];
  static float c[M * N];
  int64_t a_shape[2] = {M, K}, a_strides[2] = {1, M};
  int64_t b_shape[2] = {K, N}, c_shape[2] = {M, N};
  DLTensor a_view, b_view, c_view;
  const DLTensor* ins[2];
  const DLTensor* outs[1];
  peat_session_t* s = NULL;
  peat_profiler_t* prof = NULL;
  peat_profiler_options_t po;
  peat_op_record_t rec;
  peat_trace_reader_t* r = NULL;
  peat_trace_tensor_info_t info;
  peat_playback_t* pb = NULL;
  peat_playback_summary_t sum;
  uint32_t op = 0;
  int32_t recorded = 0;
  int i;
  unsigned state = 12345u;

  for (i = 0; i < K * M; ++i) {
    state = state * 1664525u + 1013904223u;
    at_storage[i] = (float)((state >> 8) % 2001) / 1000.0f - 1.0f;
  }
  for (i = 0; i < K * N; ++i) {
    state = state * 1664525u + 1013904223u;
    b[i] = (float)((state >> 8) % 2001) / 1000.0f - 1.0f;
  }
  a_view = check_tensor_f32(at_storage, 2, a_shape);
  a_view.strides = a_strides;
  b_view = check_tensor_f32(b, 2, b_shape);
  c_view = check_tensor_f32(c, 2, c_shape);
  ins[0] = &a_view;
  ins[1] = &b_view;
  outs[0] = &c_view;
  /* the golden output, computed on the transposed view */
  {
    DLTensor operands[2];
    operands[0] = a_view;
    operands[1] = b_view;
    CHECK(layout_gemm(NULL, operands, 2, &c_view, 1, NULL) == 0);
  }

  CHECK_STATUS(peat_session_create(NULL, &s), PEAT_STATUS_OK);
  CHECK_STATUS(peat_session_intern_op(s, "aten::mm", &op), PEAT_STATUS_OK);
  peat_profiler_options_init(&po);
  po.path = kPath;
  CHECK_STATUS(peat_profiler_create(s, &po, &prof), PEAT_STATUS_OK);
  peat_op_record_init(&rec);
  rec.op = op;
  rec.inputs = ins;
  rec.n_inputs = 2;
  rec.outputs = outs;
  rec.n_outputs = 1;
  CHECK_STATUS(peat_profiler_record_op(prof, &rec, &recorded, NULL), PEAT_STATUS_OK);
  CHECK(recorded == 1);
  CHECK_STATUS(peat_profiler_close(prof), PEAT_STATUS_OK);
  peat_profiler_destroy(prof);

  CHECK_STATUS(peat_trace_open(kPath, NULL, &r), PEAT_STATUS_OK);
  {
    peat_trace_run_info_t ri;
    memset(&ri, 0, sizeof ri);
    ri.struct_size = sizeof ri;
    CHECK_STATUS(peat_trace_run_info(r, &ri), PEAT_STATUS_OK);
    CHECK(ri.format_major == 1 && ri.format_minor >= 1);
  }
  /* the strided input keeps its strides; the compact one reports none */
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  CHECK_STATUS(peat_trace_tensor_info(r, 0, PEAT_TRACE_SLOT_INPUT, 0, &info), PEAT_STATUS_OK);
  CHECK(info.strides != NULL && info.strides[0] == 1 && info.strides[1] == M);
  CHECK(info.raw_bytes == (uint64_t)M * K * sizeof(float));
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  CHECK_STATUS(peat_trace_tensor_info(r, 0, PEAT_TRACE_SLOT_INPUT, 1, &info), PEAT_STATUS_OK);
  CHECK(info.strides == NULL);
  /* the payload is compact row-major: A's elements in [M, K] order */
  {
    static float loaded[M * K];
    CHECK_STATUS(peat_trace_load_tensor(r, 0, PEAT_TRACE_SLOT_INPUT, 0, loaded, sizeof loaded), PEAT_STATUS_OK);
    CHECK(loaded[0 * K + 1] == at_storage[1 * M + 0] && loaded[3 * K + 5] == at_storage[5 * M + 3]);
  }
  /* a caller built against the first version of the struct (ending at checksum) */
  memset(&info, 0xAB, sizeof info);
  info.struct_size = (uint32_t)offsetof(peat_trace_tensor_info_t, strides);
  CHECK_STATUS(peat_trace_tensor_info(r, 0, PEAT_TRACE_SLOT_INPUT, 0, &info), PEAT_STATUS_OK);
  CHECK(info.struct_size == offsetof(peat_trace_tensor_info_t, strides));
  CHECK(info.ndim == 2 && info.numel == (int64_t)M * K);
  {
    const unsigned char* tail = (const unsigned char*)&info + offsetof(peat_trace_tensor_info_t, strides);
    CHECK(tail[0] == 0xAB); /* left untouched */
  }
  info.struct_size = 8;
  CHECK_STATUS(peat_trace_tensor_info(r, 0, PEAT_TRACE_SLOT_INPUT, 0, &info), PEAT_STATUS_VERSION_MISMATCH);

  /* same-op replay: the candidate sees A with the recorded strides and is EXACT */
  CHECK_STATUS(peat_playback_create(r, NULL, &pb), PEAT_STATUS_OK);
  CHECK_STATUS(peat_playback_set_candidate(pb, layout_gemm, NULL), PEAT_STATUS_OK);
  CHECK_STATUS(peat_playback_run(pb), PEAT_STATUS_OK);
  memset(&sum, 0, sizeof sum);
  sum.struct_size = sizeof sum;
  CHECK_STATUS(peat_playback_summary(pb, &sum), PEAT_STATUS_OK);
  CHECK(g_calls == 2);
  CHECK(!g_seen_null[0] && g_seen_strides[0][0] == 1 && g_seen_strides[0][1] == M);
  CHECK(g_seen_null[1]);
  CHECK(sum.ok == 1 && sum.exact == 1 && sum.mismatched == 0);
  if (sum.exact != 1) fprintf(stderr, "same-op replay is not exact: the candidate saw another layout\n");
  peat_playback_destroy(pb);
  peat_trace_close(r);
  peat_session_destroy(s);
  remove(kPath);
  return check_report("c_api: playback layout");
}
