/* Pure-C test of peat/analyzer.h: every exported function, including misuse
 * (NULL pointers, wrong struct_size, unknown enum values, bad shapes).
 * Includes only <peat/peat.h>. */
#include <peat/peat.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static DLTensor make_f32(float* data, int64_t* shape, int32_t ndim) { return check_tensor_f32(data, ndim, shape); }

static int has_message(void) { return peat_last_error_message()[0] != '\0'; }

static void test_init_functions(void) {
  peat_signature_t s;
  peat_signature_config_t c;
  peat_spatial_map_t m;
  peat_aggregator_options_t a;
  peat_loss_compare_options_t l;
  peat_signature_init(&s);
  CHECK(s.struct_size == sizeof(peat_signature_t));
  CHECK(s.count == 0 && s.max_abs_error_index == -1);
  peat_signature_config_init(&c);
  CHECK(c.struct_size == sizeof(c) && c.rtol < 0 && c.tile_rows == 32 && c.map_mismatch == PEAT_MISMATCH_TOLERANCE);
  peat_spatial_map_init(&m);
  CHECK(m.struct_size == sizeof(m) && m.first_mismatch == -1 && m.row_counts == NULL);
  peat_aggregator_options_init(&a);
  CHECK(a.struct_size == sizeof(a) && a.max_ops == 4096);
  peat_loss_compare_options_init(&l);
  CHECK(l.struct_size == sizeof(l) && l.window == 1);
  /* NULL-safe. */
  peat_signature_init(NULL);
  peat_signature_config_init(NULL);
  peat_spatial_map_init(NULL);
  peat_spatial_map_release(NULL);
  peat_aggregator_options_init(NULL);
  peat_loss_compare_options_init(NULL);
}

static void test_tolerance(void) {
  double rtol = 0, atol = 0;
  DLDataType f16 = {kDLFloat, 16, 1}, bf16 = {kDLBfloat, 16, 1}, i32 = {kDLInt, 32, 1};
  CHECK_STATUS(peat_default_tolerance(f16, &rtol, &atol), PEAT_STATUS_OK);
  CHECK(rtol == 1e-3 && atol == 1e-5);
  CHECK_STATUS(peat_default_tolerance(bf16, &rtol, NULL), PEAT_STATUS_OK);
  CHECK(rtol == 1.6e-2);
  CHECK_STATUS(peat_default_tolerance(i32, &rtol, &atol), PEAT_STATUS_UNSUPPORTED);
  CHECK(has_message());
}

static void test_analyze_and_metrics(void) {
  float g[6] = {1, 2, 3, 4, 5, 6};
  float c[6] = {1, 2, 3, 4, 5, 7};
  int64_t shape[2] = {2, 3};
  DLTensor tg = make_f32(g, shape, 2), tc = make_f32(c, shape, 2);
  peat_signature_t s;
  peat_signature_config_t cfg;
  peat_spatial_map_t map;
  double v = 0;
  int32_t pass = -1;
  int64_t rows = 0, cols = 0, tiles = 0;

  peat_signature_init(&s);
  peat_signature_config_init(&cfg);
  CHECK_STATUS(peat_analyze(&tg, &tc, NULL, &s, NULL), PEAT_STATUS_OK);
  CHECK(s.count == 6 && s.value_mismatch_count == 1 && s.max_abs_error == 1.0 && s.max_abs_error_index == 5);
  CHECK(s.ulp_hist[0] == 5);
  CHECK_STATUS(peat_signature_rmse(&s, &v), PEAT_STATUS_OK);
  CHECK(fabs(v - sqrt(1.0 / 6)) < 1e-15);
  CHECK_STATUS(peat_signature_relative_l2(&s, &v), PEAT_STATUS_OK);
  CHECK(fabs(v - sqrt(1.0 / 91)) < 1e-15);
  CHECK_STATUS(peat_signature_sqnr_db(&s, &v), PEAT_STATUS_OK);
  CHECK(fabs(v - 10 * log10(91.0)) < 1e-12);
  CHECK_STATUS(peat_signature_cosine(&s, &v), PEAT_STATUS_OK);
  CHECK(v > 0.99 && v < 1);
  CHECK_STATUS(peat_signature_max_rel_error(&s, &v), PEAT_STATUS_OK);
  CHECK(fabs(v - 1.0 / 6) < 1e-15);
  CHECK_STATUS(peat_signature_allclose(&s, &pass), PEAT_STATUS_OK);
  CHECK(pass == 0);
  CHECK_STATUS(peat_signature_effective_mantissa_bits(&s, 0.5, &v), PEAT_STATUS_OK);
  CHECK(v == 23);
  CHECK_STATUS(peat_signature_rounding_bound_ratio(&s, &v, &v), PEAT_STATUS_BAD_STATE); /* K unknown */
  CHECK(has_message());
  cfg.reduction_length = 16;
  CHECK_STATUS(peat_analyze(&tg, &tc, &cfg, &s, NULL), PEAT_STATUS_OK);
  {
    double det = 0, prob = 0;
    CHECK_STATUS(peat_signature_rounding_bound_ratio(&s, &det, &prob), PEAT_STATUS_OK);
    CHECK(det > 1 && prob > 1); /* an error of 1 in 6 is far beyond rounding */
    CHECK_STATUS(peat_signature_rounding_bound_ratio(&s, NULL, &prob), PEAT_STATUS_INVALID_ARGUMENT);
  }

  /* Spatial map, library-owned buffers. */
  peat_signature_config_init(&cfg);
  cfg.tile_rows = 1;
  cfg.tile_cols = 2;
  CHECK_STATUS(peat_spatial_map_shape(&tg, &cfg, &rows, &cols, &tiles), PEAT_STATUS_OK);
  CHECK(rows == 2 && cols == 3 && tiles == 4);
  peat_spatial_map_init(&map);
  CHECK_STATUS(peat_analyze(&tg, &tc, &cfg, &s, &map), PEAT_STATUS_OK);
  CHECK(map.mismatch_count == 1 && map.row_counts[1] == 1 && map.row_counts[0] == 0 && map.col_counts[2] == 1);
  CHECK(map.tile_counts[3] == 1 && map.lane32_counts[5] == 1 && map.first_mismatch == 5 && map.longest_run == 1);
  {
    /* Merge a map with an empty one: unchanged. */
    peat_spatial_map_t other;
    peat_spatial_map_init(&other);
    CHECK_STATUS(peat_spatial_map_merge(&other, &map), PEAT_STATUS_OK);
    CHECK(other.mismatch_count == 1 && other.row_counts[1] == 1);
    CHECK_STATUS(peat_spatial_map_merge(&other, &map), PEAT_STATUS_INVALID_ARGUMENT); /* same range twice */
    CHECK(has_message());
    CHECK_STATUS(peat_spatial_map_merge(&other, &other), PEAT_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(peat_spatial_map_merge(NULL, &other), PEAT_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(peat_spatial_map_merge(&other, NULL), PEAT_STATUS_INVALID_ARGUMENT);
    peat_spatial_map_release(&other);
  }
  peat_spatial_map_release(&map);
  CHECK(map.row_counts == NULL);

  /* Accumulate: two calls double the counts. */
  {
    peat_signature_t acc;
    peat_signature_init(&acc);
    CHECK_STATUS(peat_analyze_accumulate(&tg, &tc, NULL, &acc, NULL), PEAT_STATUS_OK);
    CHECK_STATUS(peat_analyze_accumulate(&tg, &tc, NULL, &acc, NULL), PEAT_STATUS_OK);
    CHECK(acc.count == 12 && acc.value_mismatch_count == 2);
    CHECK_STATUS(peat_signature_merge(&acc, &s), PEAT_STATUS_OK);
    CHECK(acc.count == 18);
    CHECK_STATUS(peat_analyze_accumulate(&tg, &tc, NULL, NULL, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  }
}

static void test_misuse(void) {
  float g[4] = {1, 2, 3, 4}, c[4] = {1, 2, 3, 4};
  int64_t shape[1] = {4}, other_shape[1] = {3};
  DLTensor tg = make_f32(g, shape, 1), tc = make_f32(c, shape, 1), bad = make_f32(c, other_shape, 1);
  peat_signature_t s, wrong;
  peat_signature_config_t cfg;
  peat_spatial_map_t map;
  double v;
  int32_t pass;
  peat_signature_init(&s);

  CHECK_STATUS(peat_analyze(NULL, &tc, NULL, &s, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(strstr(peat_last_error_message(), "golden") != NULL);
  CHECK_STATUS(peat_analyze(&tg, NULL, NULL, &s, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_analyze(&tg, &tc, NULL, NULL, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_analyze(&tg, &bad, NULL, &s, NULL), PEAT_STATUS_SHAPE_MISMATCH);
  CHECK(strstr(peat_last_error_message(), "candidate") != NULL);
  bad = tc;
  bad.dtype.code = kDLInt;
  CHECK_STATUS(peat_analyze(&tg, &bad, NULL, &s, NULL), PEAT_STATUS_UNSUPPORTED);
  bad = tc;
  bad.data = NULL;
  CHECK_STATUS(peat_analyze(&tg, &bad, NULL, &s, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  bad = tc;
  bad.byte_offset = 2; /* not a multiple of the element size */
  CHECK_STATUS(peat_analyze(&tg, &bad, NULL, &s, NULL), PEAT_STATUS_INVALID_ARGUMENT);

  wrong = s;
  wrong.struct_size = 0;
  CHECK_STATUS(peat_analyze(&tg, &tc, NULL, &wrong, NULL), PEAT_STATUS_VERSION_MISMATCH);
  CHECK_STATUS(peat_signature_merge(&s, &wrong), PEAT_STATUS_VERSION_MISMATCH);
  CHECK_STATUS(peat_signature_merge(NULL, &s), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_signature_rmse(&wrong, &v), PEAT_STATUS_VERSION_MISMATCH);
  CHECK_STATUS(peat_signature_rmse(NULL, &v), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_signature_rmse(&s, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_signature_relative_l2(NULL, &v), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_signature_sqnr_db(NULL, &v), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_signature_cosine(NULL, &v), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_signature_max_rel_error(NULL, &v), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_signature_allclose(NULL, &pass), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_signature_allclose(&s, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_signature_effective_mantissa_bits(&s, 0.5, &v), PEAT_STATUS_BAD_STATE); /* empty */
  CHECK_STATUS(peat_signature_effective_mantissa_bits(NULL, 0.5, &v), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_signature_rounding_bound_ratio(NULL, &v, &v), PEAT_STATUS_INVALID_ARGUMENT);

  peat_signature_config_init(&cfg);
  cfg.struct_size = 2;
  CHECK_STATUS(peat_analyze(&tg, &tc, &cfg, &s, NULL), PEAT_STATUS_VERSION_MISMATCH);
  peat_signature_config_init(&cfg);
  cfg.struct_size = sizeof(cfg) + 16;
  CHECK_STATUS(peat_analyze(&tg, &tc, &cfg, &s, NULL), PEAT_STATUS_VERSION_MISMATCH);
  peat_signature_config_init(&cfg);
  cfg.map_mismatch = 42; /* unknown enum value */
  CHECK_STATUS(peat_analyze(&tg, &tc, &cfg, &s, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(strstr(peat_last_error_message(), "map_mismatch") != NULL);
  peat_signature_config_init(&cfg);
  cfg.num_threads = -1;
  CHECK_STATUS(peat_analyze(&tg, &tc, &cfg, &s, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  peat_signature_config_init(&cfg);
  cfg.spatial_rows = 3; /* does not divide 4 elements */
  peat_spatial_map_init(&map);
  CHECK_STATUS(peat_analyze(&tg, &tc, &cfg, &s, &map), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(strstr(peat_last_error_message(), "spatial view") != NULL);
  CHECK_STATUS(peat_spatial_map_shape(&tg, &cfg, NULL, NULL, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_spatial_map_shape(NULL, NULL, NULL, NULL, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  map.struct_size = 1;
  peat_signature_config_init(&cfg);
  CHECK_STATUS(peat_analyze(&tg, &tc, &cfg, &s, &map), PEAT_STATUS_VERSION_MISMATCH);
  peat_spatial_map_init(&map);
  {
    uint64_t small[1];
    map.row_counts = small;
    map.row_capacity = 0; /* 1 row needed */
    CHECK_STATUS(peat_analyze(&tg, &tc, NULL, &s, &map), PEAT_STATUS_BUFFER_TOO_SMALL);
    CHECK(has_message());
  }
  peat_spatial_map_release(&map);
}

static void test_aggregator(void) {
  peat_aggregator_options_t opts;
  peat_aggregator_t* agg = NULL;
  peat_signature_t s, total;
  peat_series_point_t points[4];
  size_t count = 0;
  uint64_t calls = 0;
  float g[2] = {1, 2}, c[2] = {1, 3};
  int64_t shape[1] = {2};
  DLTensor tg = make_f32(g, shape, 1), tc = make_f32(c, shape, 1);
  peat_signature_init(&s);
  CHECK_STATUS(peat_analyze(&tg, &tc, NULL, &s, NULL), PEAT_STATUS_OK);

  peat_aggregator_options_init(&opts);
  opts.max_ops = 2;
  CHECK_STATUS(peat_aggregator_create(&opts, &agg), PEAT_STATUS_OK);
  CHECK_STATUS(peat_aggregator_add(agg, 1, 0, 0, &s), PEAT_STATUS_OK);
  CHECK_STATUS(peat_aggregator_add(agg, 1, 1, 1, &s), PEAT_STATUS_OK);
  peat_signature_init(&total);
  CHECK_STATUS(peat_aggregator_signature(agg, 1, &total), PEAT_STATUS_OK);
  CHECK(total.count == 4 && total.value_mismatch_count == 2);
  CHECK_STATUS(peat_aggregator_series(agg, 1, points, 4, &count), PEAT_STATUS_OK);
  CHECK(count == 2 && points[1].step == 1 && points[1].max_abs_error == 1.0);
  CHECK_STATUS(peat_aggregator_call_count(agg, 1, &calls), PEAT_STATUS_OK);
  CHECK(calls == 2);

  CHECK_STATUS(peat_aggregator_add(agg, 2, 0, 0, &s), PEAT_STATUS_INVALID_ARGUMENT); /* op out of range */
  CHECK_STATUS(peat_aggregator_add(NULL, 0, 0, 0, &s), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_aggregator_add(agg, 0, 0, 0, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_aggregator_signature(NULL, 0, &total), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_aggregator_signature(agg, 0, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_aggregator_series(agg, 1, NULL, 4, &count), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_aggregator_series(NULL, 1, points, 4, &count), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_aggregator_call_count(agg, 1, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_aggregator_call_count(agg, 9, &calls), PEAT_STATUS_INVALID_ARGUMENT);
  peat_aggregator_destroy(agg);
  peat_aggregator_destroy(NULL);

  CHECK_STATUS(peat_aggregator_create(&opts, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  opts.struct_size = 1000;
  CHECK_STATUS(peat_aggregator_create(&opts, &agg), PEAT_STATUS_VERSION_MISMATCH);
  peat_aggregator_options_init(&opts);
  opts.max_ops = 0;
  CHECK_STATUS(peat_aggregator_create(&opts, &agg), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_aggregator_create(NULL, &agg), PEAT_STATUS_OK);
  peat_aggregator_destroy(agg);
}

static void test_outcomes(void) {
  double golden[4] = {3, 2, 1.5, 1.2}, fi[4] = {3, 2.1, 1.5, 1.3};
  peat_loss_compare_options_t opts;
  peat_loss_comparison_t out;
  float w[3] = {1, 2, 3}, wc[3] = {1, 2, 4};
  int64_t shape[1] = {3};
  DLTensor tw = make_f32(w, shape, 1), twc = make_f32(wc, shape, 1);
  peat_named_tensor_t gset[1], cset[1];
  peat_tensor_drift_t drift[1];
  peat_signature_t drift_sig[1];
  size_t count = 0;

  peat_loss_compare_options_init(&opts);
  out.struct_size = sizeof(out);
  CHECK_STATUS(peat_compare_loss(golden, fi, NULL, 4, &opts, &out), PEAT_STATUS_OK);
  CHECK(out.steps == 4 && out.first_beyond_step == 1 && fabs(out.final_delta - 0.1) < 1e-12);
  CHECK_STATUS(peat_compare_loss(golden, fi, NULL, 4, NULL, &out), PEAT_STATUS_OK);
  CHECK_STATUS(peat_compare_loss(NULL, fi, NULL, 4, &opts, &out), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_compare_loss(golden, fi, NULL, 4, &opts, NULL), PEAT_STATUS_INVALID_ARGUMENT);
  opts.band_rel = -1;
  CHECK_STATUS(peat_compare_loss(golden, fi, NULL, 4, &opts, &out), PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(strstr(peat_last_error_message(), "band_rel") != NULL);
  peat_loss_compare_options_init(&opts);
  out.struct_size = 4;
  CHECK_STATUS(peat_compare_loss(golden, fi, NULL, 4, &opts, &out), PEAT_STATUS_VERSION_MISMATCH);

  peat_signature_init(&drift_sig[0]);
  gset[0].name = "w";
  gset[0].tensor = &tw;
  cset[0].name = "w";
  cset[0].tensor = &twc;
  CHECK_STATUS(peat_compare_checkpoints(gset, 1, cset, 1, NULL, drift, drift_sig, 1, &count), PEAT_STATUS_OK);
  CHECK(count == 1 && drift[0].status == PEAT_STATUS_OK && drift_sig[0].max_abs_error == 1.0);
  CHECK(strcmp(drift[0].name, "w") == 0);
  CHECK_STATUS(peat_compare_checkpoints(gset, 1, cset, 1, NULL, NULL, NULL, 0, &count), PEAT_STATUS_BUFFER_TOO_SMALL);
  CHECK(count == 1);
  CHECK_STATUS(peat_compare_checkpoints(NULL, 1, cset, 1, NULL, drift, drift_sig, 1, &count),
               PEAT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(peat_compare_checkpoints(gset, 1, cset, 1, NULL, drift, NULL, 1, &count), PEAT_STATUS_INVALID_ARGUMENT);
  cset[0].tensor = NULL;
  CHECK_STATUS(peat_compare_checkpoints(gset, 1, cset, 1, NULL, drift, drift_sig, 1, &count),
               PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(has_message());
}

static void test_backend_slot(void) {
  peat_backend_t* cpu = NULL;
  const peat_backend_api_t* api;
  float g[2] = {1, 2}, c[2] = {1, 2};
  int64_t shape[1] = {2};
  DLTensor tg = make_f32(g, shape, 1), tc = make_f32(c, shape, 1);
  peat_signature_t s;
  CHECK_STATUS(peat_backend_get("cpu", &cpu), PEAT_STATUS_OK);
  api = peat_backend_table(cpu);
  CHECK(api != NULL && api->signature_accumulate != NULL);
  if (api == NULL || api->signature_accumulate == NULL) return;
  peat_signature_init(&s);
  CHECK(api->signature_accumulate(&tg, &tc, NULL, &s, NULL, NULL) == PEAT_STATUS_OK);
  CHECK(s.count == 2 && s.bitwise_mismatch_count == 0);
  CHECK(api->signature_accumulate(&tg, &tc, NULL, NULL, NULL, NULL) == PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(api->last_error()[0] != '\0');
}

int main(void) {
  test_init_functions();
  test_tolerance();
  test_analyze_and_metrics();
  test_misuse();
  test_aggregator();
  test_outcomes();
  test_backend_slot();
  return check_report("analyzer");
}
