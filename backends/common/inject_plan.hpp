// inject_plan.hpp — the host side of error-model injection, written once for
// the CPU backend (lib/injector) and the GPU plugins (gpu_inject_entry.hpp):
// the spec's defaults and its reading by the versioned rule, the field checks
// and those against the tensor, the 2-D view, the element selection (an
// explicit list, `count` distinct elements by Floyd's algorithm with Philox
// draws, Bernoulli, lanes, region bands), the spec -> error-model mapping and
// the ground truth's merge of partial truths in index order. Host only, C++17
// (the plugins' host code is C++17), no exceptions: every check returns a
// Problem (host_problem.hpp), which the CPU side throws and the plugins
// return as a status.
#pragma once

#include <peat/injector.h>

#include "backends/common/host_problem.hpp"
#include "backends/common/inject_element.h"
#include "backends/common/kernels/kernel_launch.h"
#include "backends/common/philox.h"
#include "backends/common/precision.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace peat::inject_plan {

// The defaults of peat_inject_spec_init for `kind`.
inline peat_inject_spec_t default_spec(peat_inject_kind_t kind) noexcept {
  peat_inject_spec_t s;
  std::memset(static_cast<void*>(&s), 0, sizeof s);
  s.struct_size = sizeof(peat_inject_spec_t);
  s.kind = kind;
  s.count = 1;
  s.bits = 1;
  s.bit = -1;
  s.field = PEAT_BIT_FIELD_ANY;
  s.scope = PEAT_STUCK_ALL;
  s.lane_period = 32;
  s.value_kind = PEAT_VALUE_ZERO;
  s.range = 1.0;
  s.region = PEAT_REGION_ROWS;
  s.extent = 1;
  s.tile_rows = 16;
  s.tile_cols = 16;
  s.fill = PEAT_FILL_ZEROS;
  s.alpha = 2.0;
  s.offset = 1;
  s.format = PEAT_FORMAT_BF16;
  s.rounding = PEAT_ROUND_NEAREST_EVEN;
  s.ulp = 1;
  s.distribution = PEAT_ULP_UNIFORM;
  return s;
}

// Reads a caller's spec: an older (smaller) one keeps the defaults of its own
// kind for the fields it lacks; sizes follow the options rule of
// lib/core/versioned_struct.hpp (struct_size alone up to sizeof, aligned).
inline Problem read_spec(const peat_inject_spec_t* in, std::string_view name, peat_inject_spec_t& out) {
  if (in == nullptr) return problem(PEAT_STATUS_INVALID_ARGUMENT, "argument '{}' is NULL", name);
  const uint32_t size = in->struct_size;
  if (size < sizeof(uint32_t))
    return problem(PEAT_STATUS_VERSION_MISMATCH, "{}: struct_size {} is smaller than {}, the first version's (set it "
                   "with the init function or to sizeof)", name, size, sizeof(uint32_t));
  if (size > sizeof(peat_inject_spec_t))
    return problem(PEAT_STATUS_VERSION_MISMATCH,
                   "{}: struct_size {} is larger than this library's {} bytes (built against a newer header?)", name,
                   size, sizeof(peat_inject_spec_t));
  if (size % alignof(peat_inject_spec_t) != 0)
    return problem(PEAT_STATUS_VERSION_MISMATCH,
                   "{}: struct_size {} is not a multiple of {} and so no version's size (set it with the init "
                   "function)", name, size, alignof(peat_inject_spec_t));
  const bool has_kind = size >= offsetof(peat_inject_spec_t, kind) + sizeof(int32_t);
  out = default_spec(has_kind ? in->kind : PEAT_INJECT_BITFLIP);
  std::memcpy(static_cast<void*>(&out), in, size);
  out.struct_size = sizeof(peat_inject_spec_t);
  return {};
}

inline bool uses_selection(int32_t kind) {
  return kind == PEAT_INJECT_BITFLIP || kind == PEAT_INJECT_VALUE || kind == PEAT_INJECT_ULP_NOISE;
}
inline bool uses_region(const peat_inject_spec_t& s) {
  return s.kind == PEAT_INJECT_REGION || (s.kind == PEAT_INJECT_STUCK_AT && s.scope == PEAT_STUCK_REGION);
}
inline bool needs_stale(const peat_inject_spec_t& s) {
  return (s.kind == PEAT_INJECT_REGION || s.kind == PEAT_INJECT_SHIFT) && s.fill == PEAT_FILL_STALE;
}

// Every check that does not depend on a tensor (enums, ranges); `name` names
// the spec in messages ("spec.bits = 0: must be in [1, 64]").
inline Problem validate(const peat_inject_spec_t& s, std::string_view name);

// The error-model class an injection with this spec produces.
inline peat_error_model_t model_of(const peat_inject_spec_t& s) noexcept;

// The 2-D view (rows x cols) of a tensor of `numel` elements whose last
// dimension is `last_dim` (1 for a scalar), or the spec's own.
inline Problem view_2d(const peat_inject_spec_t& s, int64_t last_dim, int64_t numel, int64_t& rows, int64_t& cols);

// The checks against the tensor's element layout and size; fills the fixed
// mask of a BITFLIP at a chosen bit and the PRECISION format.
inline Problem tensor_checks(const peat_inject_spec_t& s, const hd::ElementLayout& layout, std::string_view dtype,
                      int64_t numel, uint64_t& fixed_mask, hd::FloatFormat& format);

// `count` distinct indices in [0, n), sorted: Floyd's algorithm with Philox
// draws keyed by the iteration (tag kTagSelect).
inline std::vector<int64_t> random_distinct(int64_t count, int64_t n, uint64_t seed, uint32_t op, uint32_t call);

// The region of the spec as bands of whole rows (sorted, disjoint rows), so
// that walking them in order visits elements in increasing index order.
inline Problem region_bands(const peat_inject_spec_t& s, int64_t rows, int64_t cols, std::vector<kernels::Band>& bands);

// Which elements the model visits.
struct Selection {
  int32_t kind = kernels::kSelectAll;   // kernels::kSelect*
  std::vector<int64_t> list;            // kSelectList: sorted, unique
  std::vector<kernels::Band> bands;     // kSelectBands
};
inline Problem select(const peat_inject_spec_t& s, int64_t numel, int64_t rows, int64_t cols, uint64_t seed, uint32_t op,
               uint32_t call, Selection& out);

// Whether the model draws per-element Philox words (others skip them).
inline bool draws_random(const peat_inject_spec_t& s, int32_t selection);

// A partial ground truth of a contiguous range of elements; add() takes the
// partial of the range that follows, so merging in order keeps the first
// changes and the bounding box, as one pass would.
struct Truth {
  int64_t selected = 0, changed = 0, new_nonfinite = 0;
  int64_t first = -1, last = -1;
  int64_t row_min = -1, row_max = -1, col_min = -1, col_max = -1;
  uint64_t bit_flips[64] = {};
  int32_t recorded = 0;
  peat_inject_change_t changes[PEAT_INJECT_TRUTH_CAPACITY];

  void add(const Truth& b);
  // The ground truth struct of the whole injection.
  peat_inject_truth_t finish(const peat_inject_spec_t& s, int32_t element_bits, int64_t numel, int64_t rows,
                             int64_t cols, uint64_t seed, uint32_t op, uint32_t call) const;
};

// A GPU block's partial (atomics-friendly encoding) as a Truth.
inline Truth from_block(const kernels::BlockTruth& b);

}  // namespace peat::inject_plan

#include "backends/common/inject_plan_impl.hpp"
