/* Pure-C test of peat/report.h: every exported function, including misuse
 * (NULL pointers, wrong struct_size, bad inputs). Includes only <peat/peat.h>. */
#include <peat/peat.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int64_t g_shape[2] = {64, 64};

static int write_text(const char* path, const char* text) {
  FILE* f = fopen(path, "w");
  if (!f) return 0;
  fputs(text, f);
  fclose(f);
  return 1;
}

static char* render(const peat_report_t* r) {
  size_t len = 0;
  char* buf;
  CHECK_STATUS(peat_report_render_html(r, NULL, 0, &len), PEAT_STATUS_BUFFER_TOO_SMALL);
  CHECK(len > 100);
  buf = (char*)malloc(len + 1);
  CHECK_STATUS(peat_report_render_html(r, buf, len, NULL), PEAT_STATUS_BUFFER_TOO_SMALL); /* no room for the NUL */
  CHECK_STATUS(peat_report_render_html(r, buf, len + 1, NULL), PEAT_STATUS_OK);
  CHECK(strlen(buf) == len);
  return buf;
}

int main(void) {
  peat_report_options_t opts;
  peat_report_t* r = NULL;
  peat_report_input_kind_t kind = -1;
  static float g[64 * 64], c[64 * 64];
  DLTensor gt, ct;
  peat_signature_t sig;
  peat_spatial_map_t map;
  peat_detection_t det;
  peat_detect_context_t ctx;
  char* page;
  int i;
  const char* jsonl = "report_test_playback.jsonl";
  const char* runtime = "report_test_runtime.json";
  const char* html = "report_test.html";

  /* options and create */
  peat_report_options_init(NULL);
  peat_report_options_init(&opts);
  CHECK(opts.struct_size == sizeof opts && opts.max_table_rows == 200 && opts.title == NULL);
  CHECK_STATUS(peat_report_create(&opts, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  opts.struct_size = 2;
  CHECK_STATUS(peat_report_create(&opts, &r), PEAT_STATUS_VERSION_MISMATCH);
  CHECK(r == NULL);
  peat_report_options_init(&opts);
  opts.max_table_rows = 0;
  CHECK_STATUS(peat_report_create(&opts, &r), PEAT_STATUS_INVALID_ARGUMENT);
  peat_report_options_init(&opts);
  opts.title = "C <test> & report";
  CHECK_STATUS(peat_report_create(&opts, &r), PEAT_STATUS_OK);
  peat_report_destroy(NULL);

  /* an empty report renders, with the escaped title */
  page = render(r);
  CHECK(strstr(page, "<title>C &lt;test&gt; &amp; report</title>") != NULL);
  CHECK(strstr(page, "<svg") == NULL);
  free(page);

  /* inputs: playback JSON lines, runtime JSON, bad files */
  CHECK(write_text(jsonl,
                   "{\"type\":\"record\",\"record\":3,\"op\":\"gemm.fc1\",\"layer\":\"fc1\",\"phase\":0,\"step\":2,\"call\":0,"
                   "\"status\":\"OK\",\"message\":\"\",\"deterministic\":-1,\"outputs\":[{\"elements\":64,\"bitwise_mismatches\":5,"
                   "\"tolerance_failures\":1,\"new_nonfinite\":0,\"max_abs_error\":0.5,\"max_rel_error\":0.25}]}\n"
                   "{\"type\":\"op\",\"name\":\"gemm.fc1\",\"records\":1,\"ok\":1,\"failed\":0,\"exact\":0,\"nondeterministic\":0,"
                   "\"outputs\":[{\"elements\":64,\"bitwise_mismatches\":5,\"tolerance_failures\":1,\"new_nonfinite\":0,"
                   "\"max_abs_error\":0.5,\"max_rel_error\":0.25}]}\n"));
  CHECK_STATUS(peat_report_add_input(r, jsonl, &kind), PEAT_STATUS_OK);
  CHECK(kind == PEAT_REPORT_INPUT_PLAYBACK);
  CHECK(write_text(runtime, "{\"noise_band\": 0.1, \"loss_series\": {\"golden\": [3, 2, 1], \"c 1/10\": [3, 2.5, 2]},"
                            " \"candidates\": [{\"name\": \"c\", \"runtime_fi\": [{\"every\": 10, \"label\": \"c 1/10\","
                            " \"impact\": \"OUTSIDE_NOISE\", \"effect\": 5}]}],"
                            " \"checkpoint_drift\": {\"c 1/10\": [{\"tensor\": \"w\", \"count\": 4, \"rmse\": 0.1,"
                            " \"relative_l2\": 0.2, \"max_abs_error\": 0.3}]}}"));
  CHECK_STATUS(peat_report_add_input(r, runtime, &kind), PEAT_STATUS_OK);
  CHECK(kind == PEAT_REPORT_INPUT_RUNTIME);
  CHECK_STATUS(peat_report_add_input(r, "no/such/file.peat", NULL), PEAT_STATUS_NOT_FOUND);
  CHECK(strstr(peat_last_error_message(), "no/such/file.peat") != NULL);
  CHECK(write_text(runtime, "{\"loss\": [1, 2"));
  CHECK_STATUS(peat_report_add_input(r, runtime, NULL), PEAT_STATUS_CORRUPT_DATA);
  CHECK(strstr(peat_last_error_message(), runtime) != NULL);
  CHECK(write_text(runtime, "plain text"));
  CHECK_STATUS(peat_report_add_input(r, runtime, NULL), PEAT_STATUS_CORRUPT_DATA);
  CHECK_STATUS(peat_report_add_input(NULL, runtime, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_report_add_input(r, NULL, NULL), PEAT_STATUS_INVALID_ARGUMENT);

  /* a signature, its detection and its spatial map */
  for (i = 0; i < 64 * 64; ++i) g[i] = c[i] = 1.0f + 0.001f * (float)i;
  for (i = 0; i < 64; ++i) c[i * 64 + 7] = 0.0f; /* column 7 dropped */
  gt = check_tensor_f32(g, 2, g_shape);
  ct = check_tensor_f32(c, 2, g_shape);
  peat_signature_init(&sig);
  peat_spatial_map_init(&map);
  CHECK_STATUS(peat_analyze(&gt, &ct, NULL, &sig, &map), PEAT_STATUS_OK);
  peat_detect_context_init(&ctx);
  ctx.map = &map;
  peat_detection_init(&det);
  CHECK_STATUS(peat_detect(&sig, &ctx, &det), PEAT_STATUS_OK);
  CHECK_STATUS(peat_report_add_signature(r, "cand", "gemm.fc1", 2, 0, &sig, &det), PEAT_STATUS_OK);
  CHECK_STATUS(peat_report_add_signature(r, NULL, "gemm.fc1", 3, 1, &sig, NULL), PEAT_STATUS_OK);
  CHECK_STATUS(peat_report_add_signature(r, "cand", NULL, 0, 0, &sig, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_report_add_signature(r, "cand", "op", 0, 0, NULL, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  sig.struct_size = 8;
  CHECK_STATUS(peat_report_add_signature(r, "cand", "op", 0, 0, &sig, NULL), PEAT_STATUS_VERSION_MISMATCH);
  sig.struct_size = sizeof sig;
  det.verdict_count = 99;
  CHECK_STATUS(peat_report_add_signature(r, "cand", "op", 0, 0, &sig, &det), PEAT_STATUS_INVALID_ARGUMENT);
  det.verdict_count = 1;
  sig.rtol = 0.5; /* another tolerance cannot merge with the group's */
  CHECK_STATUS(peat_report_add_signature(r, "cand", "gemm.fc1", 4, 2, &sig, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_report_add_spatial_map(r, "worst call", &map), PEAT_STATUS_OK);
  CHECK_STATUS(peat_report_add_spatial_map(r, "x", NULL), PEAT_STATUS_INVALID_ARGUMENT);
  map.struct_size = 4;
  CHECK_STATUS(peat_report_add_spatial_map(r, "x", &map), PEAT_STATUS_VERSION_MISMATCH);
  map.struct_size = sizeof map;
  peat_spatial_map_release(&map);

  /* a noise band and runtime-FI runs through the library (the FI-run builder) */
  {
    double ref[12], rerun[12], cand[12];
    peat_noise_band_t* band = NULL;
    peat_noise_band_options_t bo;
    peat_report_fi_run_t run;
    peat_impact_t given;
    for (i = 0; i < 12; ++i) {
      ref[i] = 3.0 - 0.1 * i;
      rerun[i] = ref[i] + (i % 2 ? 0.01 : -0.01);
      cand[i] = ref[i] + 0.5; /* far outside */
    }
    peat_noise_band_options_init(&bo);
    bo.window = 2;
    CHECK_STATUS(peat_noise_band_create(ref, 12, &bo, &band), PEAT_STATUS_OK);
    CHECK_STATUS(peat_report_add_noise_band(r, "train", band), PEAT_STATUS_BAD_STATE); /* no rerun yet */
    CHECK_STATUS(peat_noise_band_add_rerun(band, rerun, 12, NAN), PEAT_STATUS_OK);
    CHECK_STATUS(peat_report_add_noise_band(r, NULL, band), PEAT_STATUS_OK);
    CHECK_STATUS(peat_report_add_noise_band(r, NULL, NULL), PEAT_STATUS_INVALID_ARGUMENT);
    peat_noise_band_destroy(band); /* the report keeps its own copy */
    peat_report_fi_run_init(NULL);
    peat_report_fi_run_init(&run);
    CHECK(run.candidate_calls == -1 && run.every == 0 && run.impact == NULL);
    CHECK_STATUS(peat_report_add_fi_run(r, &run), PEAT_STATUS_INVALID_ARGUMENT); /* no candidate */
    run.candidate = "fi<cand>";
    run.every = 1;
    run.loss = cand;
    run.length = 12;
    CHECK_STATUS(peat_report_add_fi_run(r, &run), PEAT_STATUS_OK); /* judged here: outside */
    run.every = 10;
    memset(&given, 0, sizeof given);
    given.struct_size = sizeof given;
    given.verdict = PEAT_IMPACT_INSIDE_NOISE;
    given.effect = 0.25;
    given.first_beyond_step = -1;
    run.impact = &given;
    CHECK_STATUS(peat_report_add_fi_run(r, &run), PEAT_STATUS_OK);
    given.verdict = 7;
    CHECK_STATUS(peat_report_add_fi_run(r, &run), PEAT_STATUS_INVALID_ARGUMENT);
    run.impact = NULL;
    run.loss = NULL;
    CHECK_STATUS(peat_report_add_fi_run(r, &run), PEAT_STATUS_INVALID_ARGUMENT); /* loss NULL, length 12 */
    run.struct_size = 3;
    CHECK_STATUS(peat_report_add_fi_run(r, &run), PEAT_STATUS_VERSION_MISMATCH);
    CHECK_STATUS(peat_report_add_fi_run(NULL, &run), PEAT_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(peat_report_add_fi_run(r, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  }
  CHECK_STATUS(peat_report_add_playback(r, "x", NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_report_focus_call(r, "not added", NULL, NULL), PEAT_STATUS_NOT_FOUND);
  CHECK_STATUS(peat_report_focus_call(r, NULL, NULL, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_report_add_candidate_map(r, NULL, "m", &map), PEAT_STATUS_INVALID_ARGUMENT);

  page = render(r);
  /* findings first: the summary, a row per candidate with its impact in band units */
  CHECK(strstr(page, "<section id=\"summary\">") != NULL);
  CHECK(strstr(page, "<section id=\"summary\">") < strstr(page, "<section id=\"inventory\">"));
  CHECK(strstr(page, "<td>fi&lt;cand&gt;</td>") != NULL);
  CHECK(strstr(page, "1/10 0.25 · 1/1 ") != NULL || strstr(page, "1/1 ") != NULL);
  CHECK(strstr(page, "stays inside run-to-run noise at 1/10 and leaves it at 1/1") != NULL);
  CHECK(strstr(page, "id=\"chart-cand-1-loss-1\"") != NULL); /* c's run from the JSON, with the band */
  CHECK(strstr(page, "id=\"chart-rel-hist-1\"") != NULL);
  CHECK(strstr(page, "id=\"chart-ulp-hist-1\"") != NULL);
  CHECK(strstr(page, "id=\"chart-xor-bits\"") != NULL);
  CHECK(strstr(page, "id=\"chart-error-steps-1\"") != NULL);
  CHECK(strstr(page, "id=\"chart-spatial-map\"") != NULL);
  CHECK(strstr(page, "id=\"chart-playback-steps-1-1\"") != NULL);
  CHECK(strstr(page, "id=\"chart-drift\"") != NULL);
  CHECK(strstr(page, "DROPPED_WRITES") != NULL || strstr(page, "REGION") != NULL);
  CHECK(strstr(page, "64 x 64 elements, 64 mismatches") != NULL);
  free(page);

  /* writing */
  CHECK_STATUS(peat_report_write_html(r, html), PEAT_STATUS_OK);
  CHECK_STATUS(peat_report_write_html(r, "no/such/dir/r.html"), PEAT_STATUS_NOT_FOUND);
  CHECK_STATUS(peat_report_write_html(NULL, html), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_report_write_html(r, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_report_render_html(NULL, NULL, 0, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  peat_report_destroy(r);
  remove(jsonl);
  remove(runtime);
  remove(html);
  return check_report("report");
}
