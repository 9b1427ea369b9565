// signature_plan.hpp — the host-side parts of a signature that the CPU
// analyzer (lib/analyzer/analyze.cpp) and the GPU plugins
// (gpu_signature_entry.hpp) resolve alike: the smallest normal of the golden
// dtype (the default ratio_min_abs) and the 2-D spatial view of the map.
// Host only, C++17, status-returning (host_problem.hpp).
#pragma once

#include "backends/common/host_problem.hpp"
#include "backends/common/inject_element.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace peat::signature_plan {

// 2^(1 - bias) of the storage format `store` (hd::kStoreF16 ...).
inline double smallest_normal(int32_t store) {
  const hd::ElementLayout l = hd::layout_of(store);
  return std::ldexp(1.0, 2 - (1 << (l.exp_bits - 1)));
}

// The rows x cols view of a tensor of `numel` elements (last dimension
// `last_dim`, 0 for a scalar) at `index_base`, from the config's
// spatial_rows/spatial_cols (0 = derive). `whole` (a whole tensor at index 0)
// needs the view to hold exactly numel cells; a piece of a larger view needs
// it to cover index_base + numel.
inline Problem spatial_view(int64_t spatial_rows, int64_t spatial_cols, int64_t last_dim, int64_t numel,
                            int64_t index_base, bool whole, int64_t& rows, int64_t& cols) {
  if (spatial_rows < 0 || spatial_cols < 0)
    return problem(PEAT_STATUS_INVALID_ARGUMENT, "config.spatial_rows/spatial_cols are negative ({} x {})",
                   spatial_rows, spatial_cols);
  const int64_t needed = index_base + numel;
  rows = spatial_rows;
  cols = spatial_cols;
  if (rows == 0 && cols == 0) {
    cols = std::max<int64_t>(last_dim, 1);
    rows = needed / cols;
  } else if (rows == 0) {
    rows = needed / cols;
  } else if (cols == 0) {
    cols = needed / rows;
  }
  if (cols == 0 || rows > std::numeric_limits<int64_t>::max() / cols)
    return problem(PEAT_STATUS_INVALID_ARGUMENT, "config: spatial view {} x {} is empty or too large", rows, cols);
  const int64_t cells = rows * cols;
  if (whole ? cells != numel : cells < needed)
    return problem(PEAT_STATUS_INVALID_ARGUMENT,
                   "config: spatial view {} x {} ({} elements) does not divide the tensor of {} elements "
                   "(index_base {})", rows, cols, cells, numel, index_base);
  return {};
}

}  // namespace peat::signature_plan
