// C entry points of peat/analyzer.h: check, convert, forward.
#include <peat/analyzer.h>

#include "barrier.hpp"
#include "options.hpp"
#include "analyzer/aggregator.hpp"
#include "analyzer/analyze.hpp"
#include "analyzer/map.hpp"
#include "analyzer/metrics.hpp"
#include "analyzer/outcome.hpp"
#include "core/dtype.hpp"
#include "core/tensor_view.hpp"

#include <cstring>
#include <memory>
#include <string>

namespace {

// A signature given to the library must be of this library's size (the first
// version of the struct: there is no older, smaller one yet).
void check_signature(const peat_signature_t* signature, const char* name) {
  peat::require_arg(signature, name);
  if (signature->struct_size != sizeof(peat_signature_t))
    peat::fail(PEAT_STATUS_VERSION_MISMATCH, "{}: struct_size {} is not {} (call peat_signature_init)", name,
               signature->struct_size, sizeof(peat_signature_t));
}

peat_signature_config_t read_config(const peat_signature_config_t* config) {
  return peat::read_options(config, "config", peat_signature_config_init);
}

template <typename F>
peat_status_t metric(const char* function, const peat_signature_t* signature, double* out, F&& compute) {
  return peat::c_call(function, [&] {
    check_signature(signature, "signature");
    peat::require_arg(out, "out");
    *out = compute(*signature);
  });
}

}  // namespace

extern "C" {

PEAT_API void peat_signature_init(peat_signature_t* signature) {
  if (signature == nullptr) return;
  *signature = peat::analyzer::empty_signature();
}

PEAT_API void peat_signature_config_init(peat_signature_config_t* config) {
  if (config == nullptr) return;
  std::memset(config, 0, sizeof(*config));
  config->struct_size = sizeof(peat_signature_config_t);
  config->rtol = -1;
  config->atol = -1;
  config->reduction_length = 0;
  config->unit_roundoff = 0;
  config->ratio_min_abs = -1;
  config->index_base = 0;
  config->spatial_rows = 0;
  config->spatial_cols = 0;
  config->tile_rows = 32;
  config->tile_cols = 32;
  config->map_mismatch = PEAT_MISMATCH_TOLERANCE;
  config->num_threads = 0;
}

PEAT_API void peat_spatial_map_init(peat_spatial_map_t* map) {
  if (map == nullptr) return;
  std::memset(map, 0, sizeof(*map));
  map->struct_size = sizeof(peat_spatial_map_t);
  map->first_mismatch = -1;
  map->last_mismatch = -1;
  map->longest_run_start = -1;
}

PEAT_API void peat_spatial_map_release(peat_spatial_map_t* map) {
  if (map == nullptr) return;
  peat::analyzer::release_map(*map);
}

PEAT_API peat_status_t peat_default_tolerance(DLDataType dtype, double* out_rtol, double* out_atol) {
  return peat::c_call(__func__, [&] {
    double rtol = 0, atol = 0;
    peat::analyzer::default_tolerance(peat::require_float(dtype, "dtype"), rtol, atol);
    if (out_rtol) *out_rtol = rtol;
    if (out_atol) *out_atol = atol;
  });
}

PEAT_API peat_status_t peat_spatial_map_shape(const DLTensor* golden, const peat_signature_config_t* config,
                                              int64_t* out_rows, int64_t* out_cols, int64_t* out_tiles) {
  return peat::c_call(__func__, [&] {
    const auto cfg = read_config(config);
    const peat::TensorView g = peat::make_view(golden, "golden");
    auto resolved = peat::analyzer::resolve_config(g, cfg);
    peat::analyzer::resolve_spatial(g, cfg, resolved);
    if (out_rows) *out_rows = resolved.rows;
    if (out_cols) *out_cols = resolved.cols;
    if (out_tiles) *out_tiles = resolved.tile_grid_rows * resolved.tile_grid_cols;
  });
}

PEAT_API peat_status_t peat_analyze(const DLTensor* golden, const DLTensor* candidate,
                                    const peat_signature_config_t* config, peat_signature_t* out_signature,
                                    peat_spatial_map_t* out_map) {
  return peat::c_call(__func__, [&] {
    check_signature(out_signature, "out_signature");
    const auto cfg = read_config(config);
    const peat::TensorView g = peat::make_view(golden, "golden");
    const peat::TensorView c = peat::make_view(candidate, "candidate");
    if (out_map) peat::analyzer::check_map_size(*out_map, "out_map");
    // analyze() writes *out_signature only once it has succeeded.
    peat::analyzer::analyze(g, c, cfg, *out_signature, out_map);
  });
}

PEAT_API peat_status_t peat_analyze_accumulate(const DLTensor* golden, const DLTensor* candidate,
                                               const peat_signature_config_t* config,
                                               peat_signature_t* inout_signature, peat_spatial_map_t* inout_map) {
  return peat::c_call(__func__, [&] {
    check_signature(inout_signature, "inout_signature");
    const auto cfg = read_config(config);
    const peat::TensorView g = peat::make_view(golden, "golden");
    const peat::TensorView c = peat::make_view(candidate, "candidate");
    if (inout_map) {
      peat::analyzer::check_map_size(*inout_map, "inout_map");
      peat::analyzer::check_map_overlap(*inout_map, inout_signature, sizeof(*inout_signature));
    }
    peat_signature_t piece = peat::analyzer::empty_signature();
    peat_signature_t merged = *inout_signature;
    if (inout_map == nullptr) {
      peat::analyzer::analyze(g, c, cfg, piece, nullptr);
      peat::analyzer::merge(merged, piece);
      *inout_signature = merged;
      return;
    }
    peat_spatial_map_t map_piece;
    peat_spatial_map_init(&map_piece);
    struct Release {
      peat_spatial_map_t* map;
      ~Release() { peat::analyzer::release_map(*map); }
    } release{&map_piece};
    peat::analyzer::analyze_piece(g, c, cfg, piece, &map_piece);
    peat::analyzer::merge(merged, piece);
    peat::analyzer::merge_map(*inout_map, map_piece);
    *inout_signature = merged;
  });
}

PEAT_API peat_status_t peat_signature_merge(peat_signature_t* inout_dst, const peat_signature_t* src) {
  return peat::c_call(__func__, [&] {
    check_signature(inout_dst, "inout_dst");
    check_signature(src, "src");
    peat_signature_t merged = *inout_dst;
    peat::analyzer::merge(merged, *src);
    *inout_dst = merged;
  });
}

PEAT_API peat_status_t peat_spatial_map_merge(peat_spatial_map_t* inout_dst, const peat_spatial_map_t* src) {
  return peat::c_call(__func__, [&] {
    peat::require_arg(inout_dst, "inout_dst");
    peat::require_arg(src, "src");
    if (inout_dst == src) peat::fail(PEAT_STATUS_INVALID_ARGUMENT, "inout_dst and src are the same map");
    peat::analyzer::merge_map(*inout_dst, *src);
  });
}

PEAT_API peat_status_t peat_exact_sum_value(const peat_exact_sum_t* sum, double* out) {
  return peat::c_call(__func__, [&] {
    peat::require_arg(sum, "sum");
    peat::require_arg(out, "out");
    *out = peat::analyzer::sum_value(*sum);
  });
}

PEAT_API peat_status_t peat_signature_read_sums(const peat_signature_t* signature, peat_signature_sums_t* out) {
  return peat::c_call(__func__, [&] {
    check_signature(signature, "signature");
    peat::require_arg(out, "out");
    if (out->struct_size != sizeof(peat_signature_sums_t))
      peat::fail(PEAT_STATUS_VERSION_MISMATCH, "out: struct_size {} is not {}", out->struct_size,
                 sizeof(peat_signature_sums_t));
    *out = peat::analyzer::sums_of(*signature);
  });
}

PEAT_API peat_status_t peat_signature_rmse(const peat_signature_t* signature, double* out) {
  return metric(__func__, signature, out, [](const peat_signature_t& s) { return peat::analyzer::rmse(s); });
}
PEAT_API peat_status_t peat_signature_relative_l2(const peat_signature_t* signature, double* out) {
  return metric(__func__, signature, out, [](const peat_signature_t& s) { return peat::analyzer::relative_l2(s); });
}
PEAT_API peat_status_t peat_signature_sqnr_db(const peat_signature_t* signature, double* out) {
  return metric(__func__, signature, out, [](const peat_signature_t& s) { return peat::analyzer::sqnr_db(s); });
}
PEAT_API peat_status_t peat_signature_cosine(const peat_signature_t* signature, double* out) {
  return metric(__func__, signature, out, [](const peat_signature_t& s) { return peat::analyzer::cosine(s); });
}
PEAT_API peat_status_t peat_signature_max_rel_error(const peat_signature_t* signature, double* out) {
  return metric(__func__, signature, out, [](const peat_signature_t& s) { return s.max_rel_error; });
}

PEAT_API peat_status_t peat_signature_allclose(const peat_signature_t* signature, int32_t* out_pass) {
  return peat::c_call(__func__, [&] {
    check_signature(signature, "signature");
    peat::require_arg(out_pass, "out_pass");
    *out_pass = peat::analyzer::allclose(*signature) ? 1 : 0;
  });
}

PEAT_API peat_status_t peat_signature_effective_mantissa_bits(const peat_signature_t* signature, double quantile,
                                                              double* out_bits) {
  return peat::c_call(__func__, [&] {
    check_signature(signature, "signature");
    peat::require_arg(out_bits, "out_bits");
    *out_bits = peat::analyzer::effective_mantissa_bits(*signature, quantile);
  });
}

PEAT_API peat_status_t peat_signature_rounding_bound_ratio(const peat_signature_t* signature,
                                                           double* out_deterministic, double* out_probabilistic) {
  return peat::c_call(__func__, [&] {
    check_signature(signature, "signature");
    peat::require_arg(out_deterministic, "out_deterministic");
    peat::require_arg(out_probabilistic, "out_probabilistic");
    double det = 0, prob = 0;
    peat::analyzer::rounding_bound_ratio(*signature, det, prob);
    *out_deterministic = det;
    *out_probabilistic = prob;
  });
}

PEAT_API void peat_aggregator_options_init(peat_aggregator_options_t* options) {
  if (options == nullptr) return;
  std::memset(options, 0, sizeof(*options));
  options->struct_size = sizeof(peat_aggregator_options_t);
  options->max_ops = 4096;
  options->series_capacity = 4096;
}

PEAT_API peat_status_t peat_aggregator_create(const peat_aggregator_options_t* options,
                                              peat_aggregator_t** out_aggregator) {
  return peat::c_call(__func__, [&] {
    peat::require_arg(out_aggregator, "out_aggregator");
    const auto opts = peat::read_options(options, "options", peat_aggregator_options_init);
    *out_aggregator = std::make_unique<peat_aggregator>(opts).release();
  });
}

PEAT_API void peat_aggregator_destroy(peat_aggregator_t* aggregator) { delete aggregator; }

PEAT_API peat_status_t peat_aggregator_add(peat_aggregator_t* aggregator, uint32_t op, int64_t step, uint64_t call,
                                           const peat_signature_t* signature) {
  return peat::c_call(__func__, [&] {
    peat::require_arg(aggregator, "aggregator");
    check_signature(signature, "signature");
    aggregator->add(op, step, call, *signature);
  });
}

PEAT_API peat_status_t peat_aggregator_signature(const peat_aggregator_t* aggregator, uint32_t op,
                                                 peat_signature_t* out) {
  return peat::c_call(__func__, [&] {
    peat::require_arg(aggregator, "aggregator");
    check_signature(out, "out");
    *out = aggregator->signature(op);
  });
}

PEAT_API peat_status_t peat_aggregator_series(const peat_aggregator_t* aggregator, uint32_t op,
                                              peat_series_point_t* points, size_t capacity, size_t* out_count) {
  return peat::c_call(__func__, [&] {
    peat::require_arg(aggregator, "aggregator");
    if (points == nullptr && capacity > 0)
      peat::fail(PEAT_STATUS_INVALID_ARGUMENT, "argument 'points' is NULL but capacity is {}", capacity);
    const std::size_t n = aggregator->series(op, points, capacity);
    if (out_count) *out_count = n;
  });
}

PEAT_API peat_status_t peat_aggregator_call_count(const peat_aggregator_t* aggregator, uint32_t op,
                                                  uint64_t* out_count) {
  return peat::c_call(__func__, [&] {
    peat::require_arg(aggregator, "aggregator");
    peat::require_arg(out_count, "out_count");
    *out_count = aggregator->call_count(op);
  });
}

PEAT_API void peat_loss_compare_options_init(peat_loss_compare_options_t* options) {
  if (options == nullptr) return;
  std::memset(options, 0, sizeof(*options));
  options->struct_size = sizeof(peat_loss_compare_options_t);
  options->band_abs = 0;
  options->band_rel = 0.01;
  options->window = 1;
  options->patience = 1;
}

PEAT_API peat_status_t peat_compare_loss(const double* golden, const double* candidate, const int64_t* steps,
                                         size_t length, const peat_loss_compare_options_t* options,
                                         peat_loss_comparison_t* out) {
  return peat::c_call(__func__, [&] {
    peat::require_arg(out, "out");
    if (out->struct_size != sizeof(peat_loss_comparison_t))
      peat::fail(PEAT_STATUS_VERSION_MISMATCH, "out: struct_size {} is not {}", out->struct_size,
                 sizeof(peat_loss_comparison_t));
    if (length > 0) {
      peat::require_arg(golden, "golden");
      peat::require_arg(candidate, "candidate");
    }
    const auto opts = peat::read_options(options, "options", peat_loss_compare_options_init);
    *out = peat::analyzer::compare_loss(golden, candidate, steps, length, opts);
  });
}

PEAT_API peat_status_t peat_compare_checkpoints(const peat_named_tensor_t* golden, size_t n_golden,
                                                const peat_named_tensor_t* candidate, size_t n_candidate,
                                                const peat_signature_config_t* config, peat_tensor_drift_t* out,
                                                peat_signature_t* out_signatures, size_t capacity,
                                                size_t* out_count) {
  return peat::c_call(__func__, [&] {
    const auto cfg = read_config(config);
    std::string problem;
    const std::size_t n =
        peat::analyzer::compare_checkpoints(golden, n_golden, candidate, n_candidate, cfg, out, out_signatures,
                                            capacity, problem);
    if (out_count) *out_count = n;
    if (capacity < n)
      peat::fail(PEAT_STATUS_BUFFER_TOO_SMALL, "capacity {} is smaller than the {} results", capacity, n);
    if (!problem.empty()) peat::set_last_error(std::string("peat_compare_checkpoints: ") + problem);
  });
}

}  // extern "C"
