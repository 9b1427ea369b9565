/* Reads the trace an interposed test program wrote (through the public trace
 * API) and checks it against the calls the program made (gemm_cases.h):
 * which calls were recorded (entry 0 every `every_n`-th call, the others every
 * call), their attributes, and every tensor element (A, B, C_in when beta !=
 * 0, and the output C). Usage: check_trace <trace> <cublas|rocblas> <every_n> */
#include <peat/peat.h>

#include "gemm_cases.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char* const CUBLAS_NAMES[GEMM_KINDS] = {"cublasSgemm_v2", "cublasDgemm_v2", "cublasGemmEx",
                                                     "cublasSgemmStridedBatched"};
static const char* const ROCBLAS_NAMES[GEMM_KINDS] = {"hipblasSgemm", "rocblas_dgemm", "rocblas_gemm_ex",
                                                      "rocblas_sgemm_strided_batched"};

static int failures = 0;
#define FAIL(...) (fprintf(stderr, "check_trace: " __VA_ARGS__), fputc('\n', stderr), ++failures)

static const peat_attr_t* find_attr(const peat_trace_reader_t* r, uint64_t rec, uint64_t n, const char* key,
                                    peat_attr_t* out) {
  for (uint64_t a = 0; a < n; ++a)
    if (peat_trace_attr(r, rec, a, out) == PEAT_STATUS_OK && strcmp(out->key, key) == 0) return out;
  return NULL;
}

static void expect_int(const peat_trace_reader_t* r, uint64_t rec, uint64_t n, const char* key, int64_t want) {
  peat_attr_t a;
  if (!find_attr(r, rec, n, key, &a) || a.type != PEAT_ATTR_INT || a.i != want)
    FAIL("record %llu: attribute %s is not %lld", (unsigned long long)rec, key, (long long)want);
}

static void expect_float(const peat_trace_reader_t* r, uint64_t rec, uint64_t n, const char* key, double want) {
  peat_attr_t a;
  if (!find_attr(r, rec, n, key, &a) || a.type != PEAT_ATTR_FLOAT || a.f != want)
    FAIL("record %llu: attribute %s is not %g", (unsigned long long)rec, key, want);
}

static void expect_string(const peat_trace_reader_t* r, uint64_t rec, uint64_t n, const char* key, const char* want) {
  peat_attr_t a;
  if (!find_attr(r, rec, n, key, &a) || a.type != PEAT_ATTR_STRING || strcmp(a.s, want) != 0)
    FAIL("record %llu: attribute %s is not '%s'", (unsigned long long)rec, key, want);
}

/* Compares a recorded operand ([batch,] cols, rows, compact) with the
 * program's storage (x = 0 A, 1 B, 2 C before the call) or, for x = 3, with
 * the exact result. */
static void expect_tensor(const peat_trace_reader_t* r, uint64_t rec, peat_trace_slot_t slot, uint64_t t, int c,
                          int x, int rows, int cols, int ld, long long stride) {
  const gemm_case* g = &GEMM_CASES[c];
  DLManagedTensor* m = NULL;
  if (peat_trace_load_tensor_alloc(r, rec, slot, t, &m) != PEAT_STATUS_OK) {
    FAIL("record %llu tensor %llu: %s", (unsigned long long)rec, (unsigned long long)t, peat_last_error_message());
    return;
  }
  const DLTensor* d = &m->dl_tensor;
  const int nd = g->batch > 1 ? 3 : 2;
  if (d->ndim == 1) {
    /* A padded device operand, recorded as the span of its storage: compare
     * the elements of the matrix, where the leading dimension puts them. */
    long long bad = 0;
    if (d->shape[0] != gemm_size(rows, cols, ld, g->batch, stride) || d->dtype.bits != g->bits) {
      FAIL("record %llu tensor %llu: span length or dtype differs", (unsigned long long)rec, (unsigned long long)t);
    } else {
      for (int b = 0; b < g->batch; ++b)
        for (int j = 0; j < cols; ++j)
          for (int i = 0; i < rows; ++i) {
            const long long k = (long long)b * stride + (long long)j * ld + i;
            const double got = g->bits == 32 ? ((const float*)d->data)[k] : ((const double*)d->data)[k];
            double want = x == 3 ? gemm_expected(c, b, i, j) : gemm_value(x, c, k);
            if (g->bits == 32) want = (double)(float)want;
            if (got != want) ++bad;
          }
      if (bad != 0)
        FAIL("record %llu tensor %llu (span of operand %d of call %d): %lld elements differ", (unsigned long long)rec,
             (unsigned long long)t, x, c, bad);
    }
    peat_trace_tensor_free(m);
    return;
  }
  if (d->ndim != nd || d->shape[nd - 1] != rows || d->shape[nd - 2] != cols || (nd == 3 && d->shape[0] != g->batch) ||
      d->dtype.bits != g->bits) {
    FAIL("record %llu tensor %llu: shape or dtype differs", (unsigned long long)rec, (unsigned long long)t);
  } else {
    long long bad = 0;
    for (int b = 0; b < g->batch; ++b)
      for (int j = 0; j < cols; ++j)
        for (int i = 0; i < rows; ++i) {
          const long long k = ((long long)b * cols + j) * rows + i;
          const double got = g->bits == 32 ? ((const float*)d->data)[k] : ((const double*)d->data)[k];
          double want = x == 3 ? gemm_expected(c, b, i, j)
                               : gemm_value(x, c, (long long)b * stride + (long long)j * ld + i);
          if (g->bits == 32) want = (double)(float)want;
          if (got != want) ++bad;
        }
    if (bad != 0)
      FAIL("record %llu tensor %llu (operand %d of call %d): %lld elements differ", (unsigned long long)rec,
           (unsigned long long)t, x, c, bad);
  }
  peat_trace_tensor_free(m);
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: check_trace <trace> <cublas|rocblas> <every_n>\n");
    return 2;
  }
  const char* const* names = strcmp(argv[2], "rocblas") == 0 ? ROCBLAS_NAMES : CUBLAS_NAMES;
  const int every_n = atoi(argv[3]);
  peat_trace_reader_t* r = NULL;
  if (peat_trace_open(argv[1], NULL, &r) != PEAT_STATUS_OK) {
    fprintf(stderr, "check_trace: %s\n", peat_last_error_message());
    return 1;
  }
  int seen[GEMM_CALLS] = {0};
  uint64_t count = 0, ops = 0;
  peat_trace_record_count(r, &count);
  for (uint64_t rec = 0; rec < count; ++rec) {
    peat_trace_record_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    if (peat_trace_record_info(r, rec, &info) != PEAT_STATUS_OK || info.kind != PEAT_TRACE_KIND_OP) continue;
    ++ops;
    int kind = -1;
    for (int k = 0; k < GEMM_KINDS; ++k)
      if (strcmp(info.name, names[k]) == 0) kind = k;
    if (kind < 0 || info.call_index >= (uint64_t)GEMM_KIND_COUNT[kind]) {
      FAIL("record %llu: unexpected op '%s' call %llu", (unsigned long long)rec, info.name,
           (unsigned long long)info.call_index);
      continue;
    }
    const int c = GEMM_KIND_FIRST[kind] + (int)info.call_index;
    const gemm_case* g = &GEMM_CASES[c];
    ++seen[c];
    const uint64_t n = info.n_attrs;
    const char ta[2] = {g->ta, 0}, tb[2] = {g->tb, 0};
    expect_int(r, rec, n, "m", g->m);
    expect_int(r, rec, n, "n", g->n);
    expect_int(r, rec, n, "k", g->k);
    expect_int(r, rec, n, "lda", g->lda);
    expect_int(r, rec, n, "ldb", g->ldb);
    expect_int(r, rec, n, "ldc", g->ldc);
    expect_int(r, rec, n, "batch", g->batch);
    expect_string(r, rec, n, "transa", ta);
    expect_string(r, rec, n, "transb", tb);
    expect_string(r, rec, n, "dtype", g->bits == 32 ? "f32" : "f64");
    expect_string(r, rec, n, "layout", "column_major");
    expect_float(r, rec, n, "alpha", g->alpha);
    expect_float(r, rec, n, "beta", g->beta);
    if (g->batch > 1) {
      expect_int(r, rec, n, "stride_a", g->sa);
      expect_int(r, rec, n, "stride_c", g->sc);
    }
    const uint64_t want_inputs = g->beta != 0.0 ? 3 : 2;
    if (info.n_inputs != want_inputs || info.n_outputs != 1) {
      FAIL("record %llu: %llu inputs and %llu outputs, expected %llu and 1", (unsigned long long)rec,
           (unsigned long long)info.n_inputs, (unsigned long long)info.n_outputs, (unsigned long long)want_inputs);
      continue;
    }
    expect_tensor(r, rec, PEAT_TRACE_SLOT_INPUT, 0, c, 0, gemm_rows_a(g), gemm_cols_a(g), g->lda, g->sa);
    expect_tensor(r, rec, PEAT_TRACE_SLOT_INPUT, 1, c, 1, gemm_rows_b(g), gemm_cols_b(g), g->ldb, g->sb);
    if (want_inputs == 3) expect_tensor(r, rec, PEAT_TRACE_SLOT_INPUT, 2, c, 2, g->m, g->n, g->ldc, g->sc);
    expect_tensor(r, rec, PEAT_TRACE_SLOT_OUTPUT, 0, c, 3, g->m, g->n, g->ldc, g->sc);
  }
  /* Sampling: entry 0 every every_n-th call (0, every_n, ...), the rest always. */
  uint64_t expected = 0;
  for (int c = 0; c < GEMM_CALLS; ++c) {
    const int kind = GEMM_CASES[c].kind, call = c - GEMM_KIND_FIRST[kind];
    const int want = kind != 0 || call % every_n == 0;
    expected += (uint64_t)want;
    if (seen[c] != want) FAIL("%s call %d recorded %d times, expected %d", names[kind], call, seen[c], want);
  }
  if (ops != expected) FAIL("%llu op records, expected %llu", (unsigned long long)ops, (unsigned long long)expected);
  peat_trace_close(r);
  if (failures == 0) printf("check_trace: %llu op records, attributes and tensors as called\n", (unsigned long long)ops);
  return failures == 0 ? 0 : 1;
}
