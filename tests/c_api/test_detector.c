/* Pure-C test of peat/detector.h: every exported function, including misuse
 * (NULL pointers, wrong struct_size, unknown enum values, inconsistent
 * signatures). Includes only <peat/peat.h>. */
#include <peat/peat.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int64_t g_shape[2] = {8, 8};

static DLTensor make_f32(float* data) {
  DLTensor t;
  memset(&t, 0, sizeof(t));
  t.data = data;
  t.device.device_type = kDLCPU;
  t.ndim = 2;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = g_shape;
  return t;
}

static void fill(float* g) {
  int i;
  for (i = 0; i < 64; ++i) g[i] = 1.0f + 0.01f * (float)i;
}

static void flip(float* v, int bit) {
  uint32_t b;
  memcpy(&b, v, 4);
  b ^= 1u << bit;
  memcpy(v, &b, 4);
}

/* Signature and map of (g, c). */
static void analyze(const float* g, const float* c, peat_signature_t* sig, peat_spatial_map_t* map) {
  DLTensor tg = make_f32((float*)g), tc = make_f32((float*)c);
  peat_signature_config_t cfg;
  peat_signature_config_init(&cfg);
  cfg.map_mismatch = PEAT_MISMATCH_BITWISE;
  cfg.tile_rows = 4;
  cfg.tile_cols = 4;
  peat_signature_init(sig);
  if (map) peat_spatial_map_init(map);
  CHECK_STATUS(peat_analyze(&tg, &tc, &cfg, sig, map), PEAT_STATUS_OK);
}

static void test_init_and_names(void) {
  peat_detect_context_t ctx;
  peat_detection_t det;
  peat_detect_context_init(&ctx);
  CHECK(ctx.struct_size == sizeof(ctx));
  CHECK(ctx.op_kind == PEAT_OP_KIND_UNKNOWN && ctx.reduction_length == 0 && ctx.rounding_slack == 4.0);
  CHECK(ctx.map == NULL && ctx.rerun == NULL && ctx.reference == NULL);
  peat_detection_init(&det);
  CHECK(det.struct_size == sizeof(det) && det.verdict_count == 0);
  peat_detect_context_init(NULL);
  peat_detection_init(NULL);
  CHECK(strcmp(peat_op_kind_name(PEAT_OP_KIND_GEMM), "gemm") == 0);
  CHECK(strcmp(peat_op_kind_name(PEAT_OP_KIND_CONV), "conv") == 0);
  CHECK(strcmp(peat_op_kind_name(PEAT_OP_KIND_REDUCTION), "reduction") == 0);
  CHECK(strcmp(peat_op_kind_name(PEAT_OP_KIND_ELEMENTWISE), "elementwise") == 0);
  CHECK(strcmp(peat_op_kind_name(99), "unknown") == 0);
  CHECK(strcmp(peat_float_format_name(PEAT_FORMAT_BF16), "bf16") == 0);
  CHECK(strcmp(peat_float_format_name(PEAT_FORMAT_FP8_E4M3), "fp8_e4m3") == 0);
  CHECK(strcmp(peat_float_format_name(-1), "none") == 0);
  CHECK(strcmp(peat_float_format_name(77), "unknown") == 0);
}

static void test_exact_and_flip(void) {
  float g[64], c[64];
  peat_signature_t sig;
  peat_spatial_map_t map;
  peat_detect_context_t ctx;
  peat_detection_t det;
  fill(g);
  memcpy(c, g, sizeof g);
  analyze(g, c, &sig, NULL);
  peat_detection_init(&det);
  CHECK_STATUS(peat_detect(&sig, NULL, &det), PEAT_STATUS_OK);
  CHECK(det.verdict_count == 1 && det.verdicts[0].model == PEAT_ERROR_MODEL_EXACT);
  CHECK(det.verdicts[0].confidence == 1.0 && det.verdicts[0].evidence_count >= 1);

  flip(&c[13], 26); /* an exponent bit */
  analyze(g, c, &sig, &map);
  peat_detect_context_init(&ctx);
  ctx.map = &map;
  CHECK_STATUS(peat_detect(&sig, &ctx, &det), PEAT_STATUS_OK);
  CHECK(det.verdict_count >= 1);
  CHECK(det.verdicts[0].model == PEAT_ERROR_MODEL_BITFLIP_SINGLE);
  CHECK(det.verdicts[0].bit == 26);
  CHECK(det.verdicts[0].elements == 1);
  CHECK(det.verdicts[0].rows_affected == 1 && det.verdicts[0].cols_affected == 1);
  CHECK(det.verdicts[0].first_index == 13);
  CHECK(det.verdicts[0].confidence > 0.0 && det.verdicts[0].confidence <= 1.0);
  CHECK(strstr(det.verdicts[0].evidence[0], "bit 26") != NULL);
  peat_spatial_map_release(&map);
}

static void test_scaling_and_region(void) {
  float g[64], c[64];
  int i;
  peat_signature_t sig;
  peat_spatial_map_t map;
  peat_detect_context_t ctx;
  peat_detection_t det;
  /* values over several binades, so that halving changes more than one bit */
  for (i = 0; i < 64; ++i) g[i] = 0.3f + 0.05f * (float)i;
  for (i = 0; i < 64; ++i) c[i] = 0.5f * g[i];
  analyze(g, c, &sig, NULL);
  peat_detection_init(&det);
  CHECK_STATUS(peat_detect(&sig, NULL, &det), PEAT_STATUS_OK);
  CHECK(det.verdicts[0].model == PEAT_ERROR_MODEL_SCALING);
  CHECK(det.verdicts[0].alpha == 0.5);
  /* rows 2 and 3 zeroed: a region of rows */
  fill(g);
  memcpy(c, g, sizeof g);
  for (i = 16; i < 32; ++i) c[i] = 0.0f;
  analyze(g, c, &sig, &map);
  peat_detect_context_init(&ctx);
  ctx.map = &map;
  CHECK_STATUS(peat_detect(&sig, &ctx, &det), PEAT_STATUS_OK);
  CHECK(det.verdicts[0].model == PEAT_ERROR_MODEL_REGION);
  CHECK(det.verdicts[0].rows_affected == 2 && det.verdicts[0].cols_affected == 8);
  CHECK(det.verdicts[0].elements == 16);
  /* without the map the same zeros are dropped writes */
  CHECK_STATUS(peat_detect(&sig, NULL, &det), PEAT_STATUS_OK);
  CHECK(det.verdicts[0].model == PEAT_ERROR_MODEL_DROPPED_WRITES);
  peat_spatial_map_release(&map);
}

static void test_nondeterminism(void) {
  float g[64], c[64], c2[64];
  peat_signature_t sig, sig2;
  peat_detect_context_t ctx;
  peat_detection_t det;
  fill(g);
  memcpy(c, g, sizeof g);
  memcpy(c2, g, sizeof g);
  flip(&c2[5], 0);
  analyze(g, c, &sig, NULL);
  analyze(g, c2, &sig2, NULL);
  peat_detect_context_init(&ctx);
  ctx.rerun = &sig2;
  peat_detection_init(&det);
  CHECK_STATUS(peat_detect(&sig, &ctx, &det), PEAT_STATUS_OK);
  CHECK(det.verdict_count == 2);
  CHECK(det.verdicts[0].model == PEAT_ERROR_MODEL_NONDETERMINISM);
  CHECK(det.verdicts[1].model == PEAT_ERROR_MODEL_EXACT);
  /* the same run twice: no NONDETERMINISM */
  ctx.rerun = &sig;
  CHECK_STATUS(peat_detect(&sig, &ctx, &det), PEAT_STATUS_OK);
  CHECK(det.verdict_count == 1 && det.verdicts[0].model == PEAT_ERROR_MODEL_EXACT);
}

static void test_render(void) {
  float g[64], c[64];
  peat_signature_t sig;
  peat_detection_t det;
  char small[8];
  char* buf;
  size_t len = 0, len2 = 0;
  fill(g);
  memcpy(c, g, sizeof g);
  flip(&c[3], 31);
  analyze(g, c, &sig, NULL);
  peat_detection_init(&det);
  CHECK_STATUS(peat_detect(&sig, NULL, &det), PEAT_STATUS_OK);
  CHECK(det.verdicts[0].model == PEAT_ERROR_MODEL_BITFLIP_SINGLE && det.verdicts[0].bit == 31);
  CHECK_STATUS(peat_detection_render(&det, PEAT_RENDER_JSON, NULL, 0, &len), PEAT_STATUS_BUFFER_TOO_SMALL);
  CHECK(len > 0);
  CHECK_STATUS(peat_detection_render(&det, PEAT_RENDER_JSON, small, sizeof small, &len2), PEAT_STATUS_BUFFER_TOO_SMALL);
  CHECK(len2 == len);
  buf = (char*)malloc(len + 1);
  CHECK_STATUS(peat_detection_render(&det, PEAT_RENDER_JSON, buf, len + 1, &len2), PEAT_STATUS_OK);
  CHECK(len2 == len && strlen(buf) == len);
  CHECK(strstr(buf, "\"schema_version\": 1") != NULL);
  CHECK(strstr(buf, "\"model\": \"BITFLIP_SINGLE\"") != NULL);
  free(buf);
  CHECK_STATUS(peat_detection_render(&det, PEAT_RENDER_TEXT, NULL, 0, &len), PEAT_STATUS_BUFFER_TOO_SMALL);
  buf = (char*)malloc(len + 1);
  CHECK_STATUS(peat_detection_render(&det, PEAT_RENDER_TEXT, buf, len + 1, NULL), PEAT_STATUS_OK);
  CHECK(strstr(buf, "BITFLIP_SINGLE") != NULL && strstr(buf, "rank") != NULL);
  free(buf);
  CHECK_STATUS(peat_detection_render(&det, PEAT_RENDER_CSV, NULL, 0, &len), PEAT_STATUS_BUFFER_TOO_SMALL);
  buf = (char*)malloc(len + 1);
  CHECK_STATUS(peat_detection_render(&det, PEAT_RENDER_CSV, buf, len + 1, NULL), PEAT_STATUS_OK);
  CHECK(strncmp(buf, "rank,model,confidence,bit", 25) == 0);
  CHECK(strstr(buf, "\n1,BITFLIP_SINGLE,") != NULL);
  free(buf);
  /* misuse */
  CHECK_STATUS(peat_detection_render(NULL, PEAT_RENDER_TEXT, NULL, 0, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_detection_render(&det, 9, NULL, 0, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  det.verdict_count = PEAT_DETECT_MAX_VERDICTS + 1;
  CHECK_STATUS(peat_detection_render(&det, PEAT_RENDER_TEXT, NULL, 0, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  det.verdict_count = 1;
  det.struct_size = 3;
  CHECK_STATUS(peat_detection_render(&det, PEAT_RENDER_TEXT, NULL, 0, NULL), PEAT_STATUS_VERSION_MISMATCH);
}

static void test_bad_input(void) {
  float g[64], c[64];
  peat_signature_t sig, bad, other;
  peat_detect_context_t ctx;
  peat_detection_t det;
  peat_spatial_map_t map;
  fill(g);
  memcpy(c, g, sizeof g);
  flip(&c[1], 20);
  analyze(g, c, &sig, &map);
  peat_detection_init(&det);
  CHECK_STATUS(peat_detect(NULL, NULL, &det), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_detect(&sig, NULL, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  det.struct_size = 1;
  CHECK_STATUS(peat_detect(&sig, NULL, &det), PEAT_STATUS_VERSION_MISMATCH);
  peat_detection_init(&det);
  bad = sig;
  bad.struct_size = 16;
  CHECK_STATUS(peat_detect(&bad, NULL, &det), PEAT_STATUS_VERSION_MISMATCH);
  /* inconsistent counts */
  bad = sig;
  bad.bitwise_mismatch_count = bad.count + 1;
  CHECK_STATUS(peat_detect(&bad, NULL, &det), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(strstr(peat_last_error_message(), "bitwise_mismatch_count") != NULL);
  CHECK(det.verdict_count == 0);
  bad = sig;
  bad.ulp_hist[3] += 1;
  CHECK_STATUS(peat_detect(&bad, NULL, &det), PEAT_STATUS_INVALID_ARGUMENT);
  bad = sig;
  bad.new_nonfinite_count = 60;
  CHECK_STATUS(peat_detect(&bad, NULL, &det), PEAT_STATUS_INVALID_ARGUMENT);
  peat_signature_init(&bad);
  CHECK_STATUS(peat_detect(&bad, NULL, &det), PEAT_STATUS_INVALID_ARGUMENT); /* empty */
  bad = sig;
  bad.golden_dtype.code = kDLInt;
  CHECK_STATUS(peat_detect(&bad, NULL, &det), PEAT_STATUS_UNSUPPORTED);
  /* context misuse */
  peat_detect_context_init(&ctx);
  ctx.op_kind = PEAT_OP_KIND_GEMM; /* K = 0 */
  CHECK_STATUS(peat_detect(&sig, &ctx, &det), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(strstr(peat_last_error_message(), "reduction_length") != NULL);
  ctx.reduction_length = 64;
  CHECK_STATUS(peat_detect(&sig, &ctx, &det), PEAT_STATUS_OK);
  ctx.op_kind = 42;
  CHECK_STATUS(peat_detect(&sig, &ctx, &det), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(strstr(peat_last_error_message(), "op_kind") != NULL);
  peat_detect_context_init(&ctx);
  ctx.reduction_length = -1;
  CHECK_STATUS(peat_detect(&sig, &ctx, &det), PEAT_STATUS_INVALID_ARGUMENT);
  peat_detect_context_init(&ctx);
  ctx.rounding_slack = 0;
  CHECK_STATUS(peat_detect(&sig, &ctx, &det), PEAT_STATUS_INVALID_ARGUMENT);
  peat_detect_context_init(&ctx);
  ctx.unit_roundoff = -1;
  CHECK_STATUS(peat_detect(&sig, &ctx, &det), PEAT_STATUS_INVALID_ARGUMENT);
  peat_detect_context_init(&ctx);
  ctx.struct_size = sizeof(ctx) + 8;
  CHECK_STATUS(peat_detect(&sig, &ctx, &det), PEAT_STATUS_VERSION_MISMATCH);
  peat_detect_context_init(&ctx);
  ctx.golden_dtype.code = kDLFloat;
  ctx.golden_dtype.bits = 16;
  ctx.golden_dtype.lanes = 1;
  CHECK_STATUS(peat_detect(&sig, &ctx, &det), PEAT_STATUS_INVALID_ARGUMENT);
  peat_detect_context_init(&ctx);
  ctx.map = &map;
  map.mismatch_count = sig.count + 5;
  CHECK_STATUS(peat_detect(&sig, &ctx, &det), PEAT_STATUS_INVALID_ARGUMENT);
  map.mismatch_count = 1;
  map.struct_size = 4;
  CHECK_STATUS(peat_detect(&sig, &ctx, &det), PEAT_STATUS_VERSION_MISMATCH);
  map.struct_size = sizeof(map);
  peat_detect_context_init(&ctx);
  other = sig;
  other.count = 10; /* a rerun of another size */
  ctx.rerun = &other;
  CHECK_STATUS(peat_detect(&sig, &ctx, &det), PEAT_STATUS_INVALID_ARGUMENT);
  other = sig;
  other.struct_size = 8;
  ctx.rerun = NULL;
  ctx.reference = &other;
  CHECK_STATUS(peat_detect(&sig, &ctx, &det), PEAT_STATUS_VERSION_MISMATCH);
  peat_spatial_map_release(&map);
}

int main(void) {
  test_init_and_names();
  test_exact_and_flip();
  test_scaling_and_region();
  test_nondeterminism();
  test_render();
  test_bad_input();
  return check_report("detector");
}
