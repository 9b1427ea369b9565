// C entry points of peat/analyzer.h: check, convert, forward.
#include <peat/analyzer.h>

#include "bindings/c/barrier.hpp"
#include "lib/analyzer/accumulate.hpp"
#include "lib/analyzer/aggregator.hpp"
#include "lib/analyzer/analyze.hpp"
#include "lib/analyzer/defaults.hpp"
#include "lib/analyzer/map.hpp"
#include "lib/analyzer/metrics.hpp"
#include "lib/analyzer/outcome.hpp"

#include <memory>
#include <string>

using namespace peat::impl;  // the C layer forwards to the core (lib/)

namespace {

// A signature handed in: the caller's prefix over the empty signature.
peat_signature_t signature_in(const peat_signature_t* signature, const char* name) {
  return read_versioned(signature, analyzer::empty_signature(), name);
}

template <typename T, typename F>
peat_status_t metric(const char* function, const peat_signature_t* signature, T* out, F&& compute) {
  return c_call(function, [&] {
    const peat_signature_t s = signature_in(signature, "signature");
    require_arg(out, "out");
    *out = compute(s);
  });
}

}  // namespace

extern "C" {

PEAT_API void peat_signature_init(peat_signature_t* p) { if (p) *p = analyzer::empty_signature(); }
PEAT_API void peat_signature_config_init(peat_signature_config_t* p) { if (p) *p = analyzer::default_config(); }
PEAT_API void peat_spatial_map_init(peat_spatial_map_t* p) { if (p) *p = analyzer::empty_map(); }
PEAT_API void peat_spatial_map_release(peat_spatial_map_t* map) { if (map) analyzer::release_map(*map); }

PEAT_API peat_status_t peat_default_tolerance(DLDataType dtype, double* out_rtol, double* out_atol) {
  return c_call(__func__, [&] { analyzer::default_tolerance(dtype, out_rtol, out_atol); });
}

PEAT_API peat_status_t peat_spatial_map_shape(const DLTensor* golden, const peat_signature_config_t* config,
                                              int64_t* out_rows, int64_t* out_cols, int64_t* out_tiles) {
  return c_call(__func__, [&] { analyzer::spatial_shape(golden, config, out_rows, out_cols, out_tiles); });
}

PEAT_API peat_status_t peat_analyze(const DLTensor* golden, const DLTensor* candidate,
                                    const peat_signature_config_t* config, peat_signature_t* out_signature,
                                    peat_spatial_map_t* out_map) {
  return c_call(__func__, [&] { analyzer::analyze_to(golden, candidate, config, out_signature, out_map); });
}

PEAT_API peat_status_t peat_analyze_accumulate(const DLTensor* golden, const DLTensor* candidate,
                                               const peat_signature_config_t* config,
                                               peat_signature_t* inout_signature, peat_spatial_map_t* inout_map) {
  return c_call(__func__, [&] { analyzer::accumulate(golden, candidate, config, inout_signature, inout_map); });
}

PEAT_API peat_status_t peat_signature_merge(peat_signature_t* inout_dst, const peat_signature_t* src) {
  return c_call(__func__, [&] {
    require_struct(inout_dst, "inout_dst");
    const peat_signature_t from = signature_in(src, "src");
    update_versioned(inout_dst, analyzer::empty_signature(), "inout_dst",
                           [&](peat_signature_t& s) { analyzer::merge(s, from); });
  });
}

PEAT_API peat_status_t peat_spatial_map_merge(peat_spatial_map_t* inout_dst, const peat_spatial_map_t* src) {
  return c_call(__func__, [&] {
    require_arg(inout_dst, "inout_dst");
    require_arg(src, "src");
    analyzer::merge_map(*inout_dst, *src);
  });
}

PEAT_API peat_status_t peat_exact_sum_value(const peat_exact_sum_t* sum, double* out) {
  return c_get(__func__, sum, "sum", out, "out", [](auto& s) { return analyzer::sum_value(s); });
}

PEAT_API peat_status_t peat_signature_read_sums(const peat_signature_t* signature, peat_signature_sums_t* out) {
  return c_call(__func__, [&] {
    const peat_signature_t s = signature_in(signature, "signature");
    require_struct(out, "out");
    write_versioned(out, analyzer::sums_of(s), "out");
  });
}

PEAT_API peat_status_t peat_signature_rmse(const peat_signature_t* signature, double* out) {
  return metric(__func__, signature, out, analyzer::rmse);
}
PEAT_API peat_status_t peat_signature_relative_l2(const peat_signature_t* signature, double* out) {
  return metric(__func__, signature, out, analyzer::relative_l2);
}
PEAT_API peat_status_t peat_signature_sqnr_db(const peat_signature_t* signature, double* out) {
  return metric(__func__, signature, out, analyzer::sqnr_db);
}
PEAT_API peat_status_t peat_signature_cosine(const peat_signature_t* signature, double* out) {
  return metric(__func__, signature, out, analyzer::cosine);
}
PEAT_API peat_status_t peat_signature_max_rel_error(const peat_signature_t* signature, double* out) {
  return metric(__func__, signature, out, [](const peat_signature_t& s) { return s.max_rel_error; });
}
PEAT_API peat_status_t peat_signature_allclose(const peat_signature_t* signature, int32_t* out_pass) {
  return metric(__func__, signature, out_pass, [](const peat_signature_t& s) { return analyzer::allclose(s) ? 1 : 0; });
}

PEAT_API peat_status_t peat_signature_effective_mantissa_bits(const peat_signature_t* signature, double quantile,
                                                              double* out_bits) {
  return metric(__func__, signature, out_bits,
                [&](const peat_signature_t& s) { return analyzer::effective_mantissa_bits(s, quantile); });
}

PEAT_API peat_status_t peat_signature_rounding_bound_ratio(const peat_signature_t* signature,
                                                           double* out_deterministic, double* out_probabilistic) {
  return c_call(__func__, [&] {
    const peat_signature_t s = signature_in(signature, "signature");
    require_arg(out_deterministic, "out_deterministic");
    require_arg(out_probabilistic, "out_probabilistic");
    analyzer::rounding_bound_ratio(s, *out_deterministic, *out_probabilistic);
  });
}

PEAT_API void peat_aggregator_options_init(peat_aggregator_options_t* options) {
  if (options) *options = analyzer::default_aggregator_options();
}

PEAT_API peat_status_t peat_aggregator_create(const peat_aggregator_options_t* options,
                                              peat_aggregator_t** out_aggregator) {
  return c_call(__func__, [&] {
    require_arg(out_aggregator, "out_aggregator");
    const auto opts = read_options(options, "options", peat_aggregator_options_init);
    *out_aggregator = std::make_unique<peat_aggregator>(opts).release();
  });
}

PEAT_API void peat_aggregator_destroy(peat_aggregator_t* aggregator) { delete aggregator; }

PEAT_API peat_status_t peat_aggregator_add(peat_aggregator_t* aggregator, uint32_t op, int64_t step, uint64_t call,
                                           const peat_signature_t* signature) {
  return c_with(__func__, aggregator, "aggregator", [&](auto& a) {
    a.add(op, step, call, signature_in(signature, "signature"));
  });
}

PEAT_API peat_status_t peat_aggregator_signature(const peat_aggregator_t* aggregator, uint32_t op,
                                                 peat_signature_t* out) {
  return c_get_struct(__func__, aggregator, "aggregator", out, [&](auto& a) { return a.signature(op); });
}

PEAT_API peat_status_t peat_aggregator_series(const peat_aggregator_t* aggregator, uint32_t op,
                                              peat_series_point_t* points, size_t capacity, size_t* out_count) {
  return c_with(__func__, aggregator, "aggregator", [&](auto& a) {
    require_buffer(points, capacity, "points");
    set_optional(out_count, a.series(op, points, capacity));
  });
}

PEAT_API peat_status_t peat_aggregator_call_count(const peat_aggregator_t* aggregator, uint32_t op,
                                                  uint64_t* out_count) {
  return c_get(__func__, aggregator, "aggregator", out_count, "out_count", [&](auto& a) { return a.call_count(op); });
}

PEAT_API void peat_loss_compare_options_init(peat_loss_compare_options_t* options) {
  if (options) *options = analyzer::default_loss_compare_options();
}

PEAT_API peat_status_t peat_compare_loss(const double* golden, const double* candidate, const int64_t* steps,
                                         size_t length, const peat_loss_compare_options_t* options,
                                         peat_loss_comparison_t* out) {
  return c_call(__func__, [&] {
    require_struct(out, "out");
    write_versioned(out, analyzer::compare_loss(golden, candidate, steps, length, options), "out");
  });
}

PEAT_API peat_status_t peat_compare_checkpoints(const peat_named_tensor_t* golden, size_t n_golden,
                                                const peat_named_tensor_t* candidate, size_t n_candidate,
                                                const peat_signature_config_t* config, peat_tensor_drift_t* out,
                                                peat_signature_t* out_signatures, size_t capacity, size_t* out_count) {
  return c_call(__func__, [&] {
    const std::string problem = analyzer::compare_checkpoints(golden, n_golden, candidate, n_candidate, config, out,
                                                              out_signatures, capacity, out_count);
    if (!problem.empty()) set_last_error(std::string("peat_compare_checkpoints: ") + problem);
  });
}

}  // extern "C"
