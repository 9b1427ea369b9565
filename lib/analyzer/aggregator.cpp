#include "lib/analyzer/aggregator.hpp"

#include "lib/analyzer/analyze.hpp"
#include "lib/analyzer/metrics.hpp"
#include "lib/core/error.hpp"

#include <algorithm>

namespace peat::impl::analyzer {

Aggregator::Aggregator(const peat_aggregator_options_t& options) : options_(options) {
  if (options.max_ops < 1 || options.max_ops > (1u << 20))
    fail(PEAT_STATUS_INVALID_ARGUMENT, "options.max_ops {} is outside [1, 1048576]", options.max_ops);
  if (options.series_capacity < 2 || options.series_capacity > (1u << 20))
    fail(PEAT_STATUS_INVALID_ARGUMENT, "options.series_capacity {} is outside [2, 1048576]",
         options.series_capacity);
  ops_.resize(options.max_ops);
}

void Aggregator::check_op(uint32_t op) const {
  if (op >= options_.max_ops)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "op {} is not below max_ops {}", op, options_.max_ops);
}

void Aggregator::add(uint32_t op, int64_t step, uint64_t call, const peat_signature_t& signature) {
  check_op(op);
  peat_series_point_t point{};
  point.step = step;
  point.call = call;
  point.count = signature.count;
  point.tolerance_fail_count = signature.tolerance_fail_count;
  point.nonfinite_count = signature.new_nonfinite_count;
  point.max_abs_error = signature.max_abs_error;
  point.max_rel_error = signature.max_rel_error;
  point.relative_l2 = relative_l2(signature);
  std::lock_guard lock(mutex_);
  auto& state = ops_[op];
  if (!state) {
    state = std::make_unique<OpState>();
    state->total = empty_signature();
    state->points.reserve(std::min<uint32_t>(options_.series_capacity, 64));
  }
  peat_signature_t merged = state->total;
  merge(merged, signature);  // may throw: leave the state unchanged
  state->total = merged;
  const uint64_t index = state->calls++;
  if (index % state->stride != 0) return;
  if (state->points.size() == options_.series_capacity) {
    // Keep every second point; from now on keep every (2 * stride)-th call.
    std::size_t kept = 0;
    for (std::size_t i = 0; i < state->points.size(); i += 2) state->points[kept++] = state->points[i];
    state->points.resize(kept);
    state->stride *= 2;
    if (index % state->stride != 0) return;
  }
  state->points.push_back(point);
}

peat_signature_t Aggregator::signature(uint32_t op) const {
  check_op(op);
  std::lock_guard lock(mutex_);
  return ops_[op] ? ops_[op]->total : empty_signature();
}

std::size_t Aggregator::series(uint32_t op, peat_series_point_t* points, std::size_t capacity) const {
  check_op(op);
  std::lock_guard lock(mutex_);
  if (!ops_[op]) return 0;
  const auto& pts = ops_[op]->points;
  std::copy_n(pts.begin(), std::min(capacity, pts.size()), points);
  return pts.size();
}

uint64_t Aggregator::call_count(uint32_t op) const {
  check_op(op);
  std::lock_guard lock(mutex_);
  return ops_[op] ? ops_[op]->calls : 0;
}

}  // namespace peat::impl::analyzer
