/* Pure-C test of the playback partition (peat_playback_options_t.partition_*,
 * peat_playback_partition_share, peat_playback_export / _import): for world
 * 1..5, the shares of a trace cover every selected record once, in contiguous
 * record ranges, and the shares' playbacks, exported and imported into share
 * 0's, equal one unpartitioned playback byte for byte -- summary, every
 * result and signature, every group, its merged signatures and per-call
 * verdicts, and the JSON lines file. Also misuse: a share merged twice,
 * another world, truncated or foreign bytes. No MPI: the shares run one after
 * the other in this process, as a batch array would run them. */
#include <peat/peat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static const char* kPath = "c_api_test_playback_partition.peat";

enum { RECORDS = 37 };

/* Golden: C = A * B (A m x k, B k x n), sequential fp32 sum. */
static void gemm_ref(const DLTensor* in, DLTensor* out) {
  const float* a = (const float*)in[0].data;
  const float* b = (const float*)in[1].data;
  float* c = (float*)out[0].data;
  const int64_t m = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[1];
  int64_t i, j, p;
  for (i = 0; i < m; ++i)
    for (j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (p = 0; p < k; ++p) {
        volatile float prod = a[i * k + p] * b[p * n + j];
        acc += prod;
      }
      c[i * n + j] = acc;
    }
}

/* Candidate (ATTRS_LIST): another summation order (pairs), a stuck bit on
 * every third call, a failure on every seventh; thread-safe. */
static int32_t candidate(void* ctx, const DLTensor* in, int32_t n_in, DLTensor* out, int32_t n_out,
                         const void* attrs) {
  const peat_playback_attrs_t* a = (const peat_playback_attrs_t*)attrs;
  const float* x;
  const float* y;
  float* c;
  int64_t m, k, n, i, j, p;
  (void)ctx;
  if (n_in != 2 || n_out != 1 || a == NULL) return 1;
  if (a->call_index % 7 == 6) return 9;
  x = (const float*)in[0].data;
  y = (const float*)in[1].data;
  c = (float*)out[0].data;
  m = in[0].shape[0];
  k = in[0].shape[1];
  n = in[1].shape[1];
  for (i = 0; i < m; ++i)
    for (j = 0; j < n; ++j) {
      float even = 0.0f, odd = 0.0f;
      for (p = 0; p < k; ++p) {
        volatile float prod = x[i * k + p] * y[p * n + j];
        if (p % 2) odd += prod; else even += prod;
      }
      c[i * n + j] = even + odd;
    }
  if (a->call_index % 3 == 0)
    for (i = 0; i < m * n; i += 4) {
      uint32_t bits;
      memcpy(&bits, &c[i], 4);
      bits |= 1u << 20;
      memcpy(&c[i], &bits, 4);
    }
  return 0;
}

static void write_trace(void) {
  peat_session_t* session = NULL;
  peat_profiler_options_t o;
  peat_profiler_t* p = NULL;
  peat_op_record_t rec;
  static float a[24 * 24], b[24 * 24], c[24 * 24];
  int64_t sa[2], sb[2], sc[2];
  DLTensor in[2], tc;
  const DLTensor* ins[2];
  const DLTensor* outs[1];
  uint32_t ops[2];
  char layer[16];
  int r, i;
  unsigned seed = 11;

  CHECK_STATUS(peat_session_create(NULL, &session), PEAT_STATUS_OK);
  CHECK_STATUS(peat_session_intern_op(session, "mm", &ops[0]), PEAT_STATUS_OK);
  CHECK_STATUS(peat_session_intern_op(session, "addmm", &ops[1]), PEAT_STATUS_OK);
  peat_profiler_options_init(&o);
  o.path = kPath;
  CHECK_STATUS(peat_profiler_create(session, &o, &p), PEAT_STATUS_OK);
  for (r = 0; r < RECORDS; ++r) {
    /* sizes vary, so that byte-balanced shares differ from equal counts */
    const int64_t m = 4 + (r * 5) % 20, k = 3 + (r * 7) % 21, n = 2 + (r * 3) % 22;
    sa[0] = m; sa[1] = k;
    sb[0] = k; sb[1] = n;
    sc[0] = m; sc[1] = n;
    in[0] = check_tensor_f32(a, 2, sa);
    in[1] = check_tensor_f32(b, 2, sb);
    tc = check_tensor_f32(c, 2, sc);
    for (i = 0; i < m * k; ++i) a[i] = (float)((seed = seed * 1103515245u + 12345u) >> 16) / 65536.0f - 0.5f;
    for (i = 0; i < k * n; ++i) b[i] = (float)((seed = seed * 1103515245u + 12345u) >> 16) / 65536.0f - 0.5f;
    gemm_ref(in, &tc);
    ins[0] = &in[0];
    ins[1] = &in[1];
    outs[0] = &tc;
    if (r % 4 == 0) CHECK_STATUS(peat_profiler_mark_step(p, r / 4), PEAT_STATUS_OK);
    snprintf(layer, sizeof layer, "layer.%d", r % 3);
    peat_op_record_init(&rec);
    rec.op = ops[r % 2];
    rec.phase = r % 5 == 4 ? PEAT_PHASE_BACKWARD : PEAT_PHASE_FORWARD;
    rec.module_path = layer;
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

static peat_playback_t* make(peat_trace_reader_t* reader, uint32_t rank, uint32_t world, int run_twice,
                             int threads) {
  peat_playback_options_t o;
  peat_playback_t* pb = NULL;
  peat_playback_options_init(&o);
  o.partition_rank = rank;
  o.partition_world = world;
  o.run_twice = run_twice;
  o.attrs_mode = PEAT_PLAYBACK_ATTRS_LIST;
  o.thread_safe = threads > 1;
  o.num_threads = threads > 1 ? threads : 0;
  CHECK_STATUS(peat_playback_create(reader, &o, &pb), PEAT_STATUS_OK);
  if (pb == NULL) return NULL;
  CHECK_STATUS(peat_playback_set_candidate(pb, candidate, NULL), PEAT_STATUS_OK);
  CHECK_STATUS(peat_playback_run(pb), PEAT_STATUS_OK);
  return pb;
}

static unsigned char* export_of(const peat_playback_t* pb, size_t* size) {
  unsigned char* buf;
  size_t got = 0;
  CHECK_STATUS(peat_playback_export(pb, NULL, 0, size), PEAT_STATUS_OK);
  buf = (unsigned char*)malloc(*size);
  CHECK(buf != NULL);
  if (*size > 1) CHECK_STATUS(peat_playback_export(pb, buf, *size - 1, &got), PEAT_STATUS_BUFFER_TOO_SMALL);
  CHECK_STATUS(peat_playback_export(pb, buf, *size, &got), PEAT_STATUS_OK);
  CHECK(got == *size);
  return buf;
}

static char* slurp(const char* path, long* size) {
  FILE* f = fopen(path, "rb");
  char* buf;
  CHECK(f != NULL);
  if (f == NULL) return NULL;
  fseek(f, 0, SEEK_END);
  *size = ftell(f);
  fseek(f, 0, SEEK_SET);
  buf = (char*)malloc((size_t)*size + 1);
  CHECK(fread(buf, 1, (size_t)*size, f) == (size_t)*size);
  fclose(f);
  return buf;
}

/* Everything the two playbacks report is equal, bit for bit. */
static void check_same(const peat_playback_t* want, const peat_playback_t* got, int run_twice) {
  peat_playback_summary_t sw, sg;
  uint64_t n = 0, m = 0, i, out, kind;
  int which, compares = run_twice ? 3 : 1;
  long lw = 0, lg = 0;
  char *jw, *jg;
  sw.struct_size = sg.struct_size = sizeof sw;
  CHECK_STATUS(peat_playback_summary(want, &sw), PEAT_STATUS_OK);
  CHECK_STATUS(peat_playback_summary(got, &sg), PEAT_STATUS_OK);
  CHECK(memcmp(&sw, &sg, sizeof sw) == 0);
  CHECK(sw.done == RECORDS && sw.failed > 0 && sw.mismatched > 0);
  CHECK_STATUS(peat_playback_result_count(want, &n), PEAT_STATUS_OK);
  CHECK_STATUS(peat_playback_result_count(got, &m), PEAT_STATUS_OK);
  CHECK(n == m);
  for (i = 0; i < n && i < m; ++i) {
    peat_playback_result_t rw, rg;
    rw.struct_size = rg.struct_size = sizeof rw;
    CHECK_STATUS(peat_playback_result(want, i, &rw), PEAT_STATUS_OK);
    CHECK_STATUS(peat_playback_result(got, i, &rg), PEAT_STATUS_OK);
    CHECK(rw.record == rg.record && rw.status == rg.status && rw.step == rg.step && rw.call_index == rg.call_index);
    CHECK(rw.phase == rg.phase && rw.deterministic == rg.deterministic && rw.n_outputs == rg.n_outputs);
    CHECK(rw.elements == rg.elements && rw.bitwise_mismatches == rg.bitwise_mismatches);
    CHECK(strcmp(rw.op, rg.op) == 0 && strcmp(rw.module_path, rg.module_path) == 0);
    CHECK(strcmp(rw.message, rg.message) == 0);
    if (rw.status != PEAT_STATUS_OK) continue;
    for (which = 0; which < compares; ++which) {
      peat_signature_t a, b;
      peat_signature_init(&a);
      peat_signature_init(&b);
      CHECK_STATUS(peat_playback_result_signature(want, i, 0, which, &a), PEAT_STATUS_OK);
      CHECK_STATUS(peat_playback_result_signature(got, i, 0, which, &b), PEAT_STATUS_OK);
      CHECK(memcmp(&a, &b, sizeof a) == 0);
    }
  }
  for (kind = 0; kind < 2; ++kind) {
    CHECK_STATUS(peat_playback_group_count(want, (int32_t)kind, &n), PEAT_STATUS_OK);
    CHECK_STATUS(peat_playback_group_count(got, (int32_t)kind, &m), PEAT_STATUS_OK);
    CHECK(n == m && n > 1);
    for (i = 0; i < n && i < m; ++i) {
      peat_playback_group_t gw, gg;
      gw.struct_size = gg.struct_size = sizeof gw;
      CHECK_STATUS(peat_playback_group(want, (int32_t)kind, i, &gw), PEAT_STATUS_OK);
      CHECK_STATUS(peat_playback_group(got, (int32_t)kind, i, &gg), PEAT_STATUS_OK);
      CHECK(strcmp(gw.name, gg.name) == 0 && gw.records == gg.records && gw.ok == gg.ok && gw.failed == gg.failed);
      CHECK(gw.exact == gg.exact && gw.nondeterministic == gg.nondeterministic && gw.n_outputs == gg.n_outputs);
      for (out = 0; out < gw.n_outputs; ++out) {
        peat_playback_verdicts_t vw, vg;
        for (which = 0; which < compares; ++which) {
          peat_signature_t a, b;
          peat_signature_init(&a);
          peat_signature_init(&b);
          CHECK_STATUS(peat_playback_group_signature(want, (int32_t)kind, i, out, which, &a), PEAT_STATUS_OK);
          CHECK_STATUS(peat_playback_group_signature(got, (int32_t)kind, i, out, which, &b), PEAT_STATUS_OK);
          CHECK(memcmp(&a, &b, sizeof a) == 0);
        }
        memset(&vw, 0, sizeof vw);
        memset(&vg, 0, sizeof vg);
        vw.struct_size = vg.struct_size = sizeof vw;
        CHECK_STATUS(peat_playback_group_verdicts(want, (int32_t)kind, i, out, &vw), PEAT_STATUS_OK);
        CHECK_STATUS(peat_playback_group_verdicts(got, (int32_t)kind, i, out, &vg), PEAT_STATUS_OK);
        CHECK(memcmp(&vw, &vg, sizeof vw) == 0);
      }
    }
  }
  CHECK_STATUS(peat_playback_write_jsonl(want, "c_api_test_partition_want.jsonl", 0), PEAT_STATUS_OK);
  CHECK_STATUS(peat_playback_write_jsonl(got, "c_api_test_partition_got.jsonl", 0), PEAT_STATUS_OK);
  jw = slurp("c_api_test_partition_want.jsonl", &lw);
  jg = slurp("c_api_test_partition_got.jsonl", &lg);
  CHECK(jw != NULL && jg != NULL && lw == lg && lw > 0 && memcmp(jw, jg, (size_t)lw) == 0);
  free(jw);
  free(jg);
}

static void test_world(peat_trace_reader_t* reader, const peat_playback_t* full, uint32_t world, int run_twice) {
  peat_playback_t* parts[8] = {NULL};
  uint64_t covered = 0, next = 0;
  uint32_t r;
  for (r = 0; r < world; ++r) {
    uint64_t first = 0, end = 0, count = 0, n = 0;
    parts[r] = make(reader, r, world, run_twice, r % 2 ? 2 : 1);
    if (parts[r] == NULL) return;
    CHECK_STATUS(peat_playback_partition_share(parts[r], r, &first, &end, &count), PEAT_STATUS_OK);
    CHECK_STATUS(peat_playback_result_count(parts[r], &n), PEAT_STATUS_OK);
    CHECK(n == count);
    if (count > 0) {
      uint64_t i;
      CHECK(first >= next); /* contiguous, in rank order (step markers lie between op records) */
      CHECK(end - first >= count);
      for (i = 0; i < n; ++i) {
        peat_playback_result_t res;
        res.struct_size = sizeof res;
        CHECK_STATUS(peat_playback_result(parts[r], i, &res), PEAT_STATUS_OK);
        CHECK(res.record >= first && res.record < end);
      }
      next = end;
    }
    covered += count;
  }
  CHECK(covered == RECORDS);
  for (r = 1; r < world; ++r) {
    size_t size = 0;
    unsigned char* bytes = export_of(parts[r], &size);
    CHECK_STATUS(peat_playback_import(parts[0], bytes, size), PEAT_STATUS_OK);
    /* the same share twice is refused, and leaves the playback as it was */
    CHECK_STATUS(peat_playback_import(parts[0], bytes, size), PEAT_STATUS_INVALID_ARGUMENT);
    free(bytes);
  }
  check_same(full, parts[0], run_twice);
  for (r = 0; r < world; ++r) peat_playback_destroy(parts[r]);
}

static void test_misuse(peat_trace_reader_t* reader) {
  peat_playback_options_t o;
  peat_playback_t* pb = NULL;
  peat_playback_t *a, *b, *c;
  size_t size = 0, cut;
  unsigned char* bytes;
  uint64_t first = 0;

  peat_playback_options_init(&o);
  CHECK(o.partition_rank == 0 && o.partition_world == 1);
  o.partition_world = 0;
  CHECK_STATUS(peat_playback_create(reader, &o, &pb), PEAT_STATUS_INVALID_ARGUMENT);
  o.partition_world = 3;
  o.partition_rank = 3;
  CHECK_STATUS(peat_playback_create(reader, &o, &pb), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(pb == NULL);
  /* an older caller's struct (without the partition fields) replays everything */
  peat_playback_options_init(&o);
  o.struct_size = (uint32_t)offsetof(peat_playback_options_t, partition_rank);
  CHECK_STATUS(peat_playback_create(reader, &o, &pb), PEAT_STATUS_OK);
  CHECK_STATUS(peat_playback_partition_share(pb, 0, &first, NULL, NULL), PEAT_STATUS_OK);
  CHECK_STATUS(peat_playback_partition_share(pb, 1, NULL, NULL, NULL), PEAT_STATUS_NOT_FOUND);
  CHECK_STATUS(peat_playback_partition_share(NULL, 0, NULL, NULL, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_playback_export(pb, NULL, 0, &size), PEAT_STATUS_BAD_STATE); /* no run */
  peat_playback_destroy(pb);

  a = make(reader, 0, 2, 0, 1);
  b = make(reader, 1, 2, 0, 1);
  c = make(reader, 1, 3, 0, 1);
  CHECK_STATUS(peat_playback_export(NULL, NULL, 0, &size), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_playback_export(b, NULL, 0, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_playback_export(b, NULL, 5, &size), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_playback_import(a, NULL, 0), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_playback_import(NULL, &size, 1), PEAT_STATUS_INVALID_ARGUMENT);
  bytes = export_of(c, &size);
  CHECK_STATUS(peat_playback_import(a, bytes, size), PEAT_STATUS_INVALID_ARGUMENT); /* world 3 into world 2 */
  free(bytes);
  bytes = export_of(a, &size);
  CHECK_STATUS(peat_playback_import(a, bytes, size), PEAT_STATUS_INVALID_ARGUMENT); /* its own share */
  free(bytes);
  bytes = export_of(b, &size);
  for (cut = 0; cut < size; cut += 1 + cut / 3) /* every truncation is refused, none crashes */
    CHECK_STATUS(peat_playback_import(a, bytes, cut), PEAT_STATUS_CORRUPT_DATA);
  bytes[0] ^= 1;
  CHECK_STATUS(peat_playback_import(a, bytes, size), PEAT_STATUS_CORRUPT_DATA);
  bytes[0] ^= 1;
  CHECK_STATUS(peat_playback_import(a, bytes, size), PEAT_STATUS_OK);
  free(bytes);
  peat_playback_destroy(a);
  peat_playback_destroy(b);
  peat_playback_destroy(c);
}

int main(void) {
  peat_trace_reader_t* reader = NULL;
  int run_twice;
  uint32_t world;
  write_trace();
  CHECK_STATUS(peat_trace_open(kPath, NULL, &reader), PEAT_STATUS_OK);
  if (reader == NULL) return check_report("playback_partition");
  for (run_twice = 0; run_twice < 2; ++run_twice) {
    peat_playback_t* full = make(reader, 0, 1, run_twice, 1);
    for (world = 1; world <= 5; ++world) test_world(reader, full, world, run_twice);
    peat_playback_destroy(full);
  }
  test_misuse(reader);
  peat_trace_close(reader);
  remove(kPath);
  remove("c_api_test_partition_want.jsonl");
  remove("c_api_test_partition_got.jsonl");
  return check_report("playback_partition");
}
