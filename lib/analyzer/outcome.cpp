#include "lib/analyzer/outcome.hpp"

#include "lib/analyzer/analyze.hpp"
#include "lib/analyzer/defaults.hpp"
#include "lib/core/error.hpp"
#include "lib/core/versioned_struct.hpp"
#include "lib/core/tensor_view.hpp"

#include <cmath>
#include <limits>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace peat::impl::analyzer {

peat_loss_comparison_t compare_loss(const double* golden, const double* candidate, const int64_t* steps,
                                    std::size_t length, const peat_loss_compare_options_t* user_options) {
  if (length > 0) {
    require_arg(golden, "golden");
    require_arg(candidate, "candidate");
  }
  const peat_loss_compare_options_t options = read_options(
      user_options, "options", [](peat_loss_compare_options_t* o) { *o = default_loss_compare_options(); });
  if (length == 0) fail(PEAT_STATUS_INVALID_ARGUMENT, "length is 0: nothing to compare");
  if (!(options.band_abs >= 0) || std::isinf(options.band_abs))
    fail(PEAT_STATUS_INVALID_ARGUMENT, "options.band_abs must be finite and >= 0 (got {})", options.band_abs);
  if (!(options.band_rel >= 0) || std::isinf(options.band_rel))
    fail(PEAT_STATUS_INVALID_ARGUMENT, "options.band_rel must be finite and >= 0 (got {})", options.band_rel);
  if (options.window < 1) fail(PEAT_STATUS_INVALID_ARGUMENT, "options.window must be >= 1 (got {})", options.window);
  if (options.patience < 1)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "options.patience must be >= 1 (got {})", options.patience);
  const auto step_of = [&](std::size_t i) { return steps ? steps[i] : static_cast<int64_t>(i); };
  const auto window = static_cast<std::size_t>(options.window);

  peat_loss_comparison_t r{};
  r.struct_size = sizeof(r);
  r.steps = static_cast<int64_t>(length);
  r.final_golden = golden[length - 1];
  r.final_candidate = candidate[length - 1];
  r.final_delta = r.final_candidate - r.final_golden;
  r.max_divergence = 0;
  r.max_divergence_step = -1;
  r.first_beyond_step = -1;

  double sum_g = 0, sum_c = 0;  // trailing window sums (NaN/Inf propagate, as they should)
  int64_t run = 0;
  for (std::size_t i = 0; i < length; ++i) {
    const double g = golden[i], c = candidate[i];
    double divergence = std::fabs(c - g);
    if (std::isnan(divergence)) divergence = (std::isnan(g) && std::isnan(c)) ? 0.0 : std::numeric_limits<double>::infinity();
    if (r.max_divergence_step < 0 || divergence > r.max_divergence) {
      r.max_divergence = divergence;
      r.max_divergence_step = step_of(i);
    }
    sum_g += g;
    sum_c += c;
    if (i >= window) {
      sum_g -= golden[i - window];
      sum_c -= candidate[i - window];
    }
    const double n = static_cast<double>(std::min(i + 1, window));
    const double mg = sum_g / n, mc = sum_c / n;
    // Recompute exactly when a non-finite value is inside the window (the
    // running sums cannot recover from Inf - Inf).
    double sg = mg, sc = mc;
    if (!std::isfinite(sum_g) || !std::isfinite(sum_c)) {
      sg = 0;
      sc = 0;
      for (std::size_t j = i + 1 - static_cast<std::size_t>(n); j <= i; ++j) {
        sg += golden[j];
        sc += candidate[j];
      }
      sg /= n;
      sc /= n;
    }
    const double band = options.band_abs + options.band_rel * std::fabs(sg);
    double diff = std::fabs(sc - sg);
    if (std::isnan(diff)) diff = (std::isnan(sg) && std::isnan(sc)) ? 0.0 : std::numeric_limits<double>::infinity();
    const bool beyond = diff > band;
    if (beyond) {
      r.beyond_count += 1;
      run += 1;
      if (run == options.patience && r.first_beyond_step < 0)
        r.first_beyond_step = step_of(i + 1 - static_cast<std::size_t>(options.patience));
    } else {
      run = 0;
    }
  }
  return r;
}

std::string compare_checkpoints(const peat_named_tensor_t* golden, std::size_t n_golden,
                                const peat_named_tensor_t* candidate, std::size_t n_candidate,
                                const peat_signature_config_t* user_config, peat_tensor_drift_t* out,
                                peat_signature_t* out_signatures, std::size_t capacity, std::size_t* out_count) {
  const peat_signature_config_t config = read_config(user_config);
  if (golden == nullptr && n_golden > 0) fail(PEAT_STATUS_INVALID_ARGUMENT, "golden is NULL but n_golden is {}", n_golden);
  if (candidate == nullptr && n_candidate > 0)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "candidate is NULL but n_candidate is {}", n_candidate);
  std::unordered_map<std::string_view, std::size_t> g_index, c_index;
  for (std::size_t i = 0; i < n_golden; ++i) {
    if (golden[i].name == nullptr) fail(PEAT_STATUS_INVALID_ARGUMENT, "golden[{}].name is NULL", i);
    if (golden[i].tensor == nullptr) fail(PEAT_STATUS_INVALID_ARGUMENT, "golden[{}].tensor is NULL", i);
    if (!g_index.emplace(golden[i].name, i).second)
      fail(PEAT_STATUS_INVALID_ARGUMENT, "golden[{}]: name '{}' appears twice", i, golden[i].name);
  }
  for (std::size_t i = 0; i < n_candidate; ++i) {
    if (candidate[i].name == nullptr) fail(PEAT_STATUS_INVALID_ARGUMENT, "candidate[{}].name is NULL", i);
    if (candidate[i].tensor == nullptr) fail(PEAT_STATUS_INVALID_ARGUMENT, "candidate[{}].tensor is NULL", i);
    if (!c_index.emplace(candidate[i].name, i).second)
      fail(PEAT_STATUS_INVALID_ARGUMENT, "candidate[{}]: name '{}' appears twice", i, candidate[i].name);
  }
  std::size_t total = n_golden;
  for (std::size_t i = 0; i < n_candidate; ++i)
    if (!g_index.count(candidate[i].name)) ++total;
  if (out == nullptr && capacity > 0) fail(PEAT_STATUS_INVALID_ARGUMENT, "out is NULL but capacity is {}", capacity);
  if (out_signatures == nullptr && capacity > 0)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "out_signatures is NULL but capacity is {}", capacity);
  if (capacity < total) {
    set_optional(out_count, total);
    fail(PEAT_STATUS_BUFFER_TOO_SMALL, "capacity {} is smaller than the {} results", capacity, total);
  }
  // The signature array's stride is its first element's struct_size (this
  // library's size today; a larger, newer one is refused).
  const uint32_t stride = total > 0 ? out_signatures[0].struct_size : 0;
  if (total > 0 && stride != sizeof(peat_signature_t))
    fail(PEAT_STATUS_VERSION_MISMATCH, "out_signatures[0].struct_size {} is not {} (call peat_signature_init)",
         stride, sizeof(peat_signature_t));

  std::string first_problem;
  std::size_t k = 0;
  auto emit = [&](const char* name, peat_status_t status, const peat_signature_t& sig) {
    peat_tensor_drift_t& d = out[k];
    d.name = name;
    d.status = status;
    d.reserved = 0;
    out_signatures[k] = sig;
    ++k;
  };
  for (std::size_t i = 0; i < n_golden; ++i) {
    const auto it = c_index.find(golden[i].name);
    if (it == c_index.end()) {
      if (first_problem.empty()) first_problem = fmt::format("'{}' is missing from the candidate checkpoint", golden[i].name);
      emit(golden[i].name, PEAT_STATUS_NOT_FOUND, empty_signature());
      continue;
    }
    peat_signature_t sig = empty_signature();
    try {
      const TensorView g = make_view(golden[i].tensor, "golden tensor");
      const TensorView c = make_view(candidate[it->second].tensor, "candidate tensor");
      analyze(g, c, config, sig, nullptr);
      emit(golden[i].name, PEAT_STATUS_OK, sig);
    } catch (const Error& e) {
      if (first_problem.empty()) first_problem = fmt::format("'{}': {}", golden[i].name, e.what());
      emit(golden[i].name, e.status(), empty_signature());
    }
  }
  for (std::size_t i = 0; i < n_candidate; ++i) {
    if (g_index.count(candidate[i].name)) continue;
    if (first_problem.empty()) first_problem = fmt::format("'{}' is missing from the golden checkpoint", candidate[i].name);
    emit(candidate[i].name, PEAT_STATUS_NOT_FOUND, empty_signature());
  }
  set_optional(out_count, total);
  return first_problem;
}

}  // namespace peat::impl::analyzer
