// The definitions of inject_plan.hpp (host only, C++17).
#pragma once

namespace peat::inject_plan {

inline Problem validate(const peat_inject_spec_t& s, std::string_view name) {
  const auto bad = [&](std::string_view field, const auto& value, std::string_view why) {
    return problem(PEAT_STATUS_INVALID_ARGUMENT, "{}.{} = {}: {}", name, field, value, why);
  };
  if (s.kind < PEAT_INJECT_BITFLIP || s.kind > PEAT_INJECT_ULP_NOISE)
    return bad("kind", s.kind, "not a peat_inject_kind_code value (0..8)");
  if (uses_selection(s.kind)) {
    if (s.elements == nullptr && !(s.probability > 0.0) && s.count < 1) return bad("count", s.count, "must be >= 1");
    if (s.elements != nullptr && s.count < 1) return bad("count", s.count, "must be >= 1 (the length of elements)");
    if (!(s.probability >= 0.0 && s.probability <= 1.0))
      return bad("probability", s.probability, "must be in [0, 1]");
  }
  switch (s.kind) {
    case PEAT_INJECT_BITFLIP:
      if (s.bits < 1 || s.bits > 64) return bad("bits", s.bits, "must be in [1, 64]");
      if (s.bit < -1 || s.bit > 63) return bad("bit", s.bit, "must be -1 (random) or a bit index in [0, 63]");
      if (s.field < PEAT_BIT_FIELD_ANY || s.field > PEAT_BIT_FIELD_MANTISSA)
        return bad("field", s.field, "not a peat_bit_field_code value (0..3)");
      if (s.adjacent != 0 && s.adjacent != 1) return bad("adjacent", s.adjacent, "must be 0 or 1");
      break;
    case PEAT_INJECT_STUCK_AT:
      if (s.bit < 0 || s.bit > 63) return bad("bit", s.bit, "stuck-at needs a bit index in [0, 63]");
      if (s.stuck_value != 0 && s.stuck_value != 1) return bad("stuck_value", s.stuck_value, "must be 0 or 1");
      if (s.scope < PEAT_STUCK_ALL || s.scope > PEAT_STUCK_REGION)
        return bad("scope", s.scope, "not a peat_stuck_scope_code value (0..2)");
      if (s.scope == PEAT_STUCK_LANE) {
        if (s.lane_period < 1 || s.lane_period > 1024) return bad("lane_period", s.lane_period, "must be in [1, 1024]");
        if (s.lane < 0 || s.lane >= s.lane_period) return bad("lane", s.lane, "must be in [0, lane_period)");
      }
      break;
    case PEAT_INJECT_VALUE:
      if (s.value_kind < PEAT_VALUE_ZERO || s.value_kind > PEAT_VALUE_CONSTANT)
        return bad("value_kind", s.value_kind, "not a peat_value_kind_code value (0..5)");
      if (s.value_kind == PEAT_VALUE_RANDOM && !(std::isfinite(s.range) && s.range > 0.0))
        return bad("range", s.range, "must be finite and > 0");
      break;
    case PEAT_INJECT_REGION:
      if (s.fill < PEAT_FILL_ZEROS || s.fill > PEAT_FILL_STALE)
        return bad("fill", s.fill, "a region is filled with ZEROS, GARBAGE or STALE (0..2)");
      break;
    case PEAT_INJECT_SCALE:
      if (!std::isfinite(s.alpha)) return bad("alpha", s.alpha, "must be finite");
      break;
    case PEAT_INJECT_SHIFT:
      if (s.fill < PEAT_FILL_ZEROS || s.fill > PEAT_FILL_KEEP)
        return bad("fill", s.fill, "not a peat_fill_code value (0..3)");
      break;
    case PEAT_INJECT_PRECISION:
      if (s.format < PEAT_FORMAT_BF16 || s.format > PEAT_FORMAT_FP8_E5M2)
        return bad("format", s.format, "not a peat_float_format_code value (0..4)");
      if (s.rounding != PEAT_ROUND_NEAREST_EVEN && s.rounding != PEAT_ROUND_TRUNCATE)
        return bad("rounding", s.rounding, "not a peat_rounding_code value (0..1)");
      if (s.saturate != 0 && s.saturate != 1) return bad("saturate", s.saturate, "must be 0 or 1");
      break;
    case PEAT_INJECT_ULP_NOISE:
      if (s.ulp < 1 || s.ulp > (1 << 20)) return bad("ulp", s.ulp, "must be in [1, 2^20]");
      if (s.distribution < PEAT_ULP_UNIFORM || s.distribution > PEAT_ULP_NORMAL)
        return bad("distribution", s.distribution, "not a peat_ulp_distribution_code value (0..2)");
      break;
    default: break;
  }
  if (uses_region(s)) {
    if (s.region < PEAT_REGION_ROWS || s.region > PEAT_REGION_REMAINDER)
      return bad("region", s.region, "not a peat_region_shape_code value (0..4)");
    if (s.extent < 1) return bad("extent", s.extent, "must be >= 1");
    if (s.first < 0) return bad("first", s.first, "must be >= 0");
    if (s.tile_rows < 1) return bad("tile_rows", s.tile_rows, "must be >= 1");
    if (s.tile_cols < 1) return bad("tile_cols", s.tile_cols, "must be >= 1");
  }
  // The 2-D view (used by regions, lanes, TRANSPOSE and the truth's bounding box).
  if (s.rows < 0) return bad("rows", s.rows, "must be >= 0");
  if (s.cols < 0) return bad("cols", s.cols, "must be >= 0");
  if ((s.rows == 0) != (s.cols == 0)) return bad("rows", s.rows, "rows and cols are both 0 (derive) or both set");
  return {};
}

inline peat_error_model_t model_of(const peat_inject_spec_t& s) noexcept {
  switch (s.kind) {
    case PEAT_INJECT_BITFLIP:
      return (s.bits == 1 && s.elements == nullptr && !(s.probability > 0.0) && s.count == 1) ||
                     (s.bits == 1 && s.elements != nullptr && s.count == 1)
                 ? PEAT_ERROR_MODEL_BITFLIP_SINGLE
                 : PEAT_ERROR_MODEL_BITFLIP_MULTI;
    case PEAT_INJECT_STUCK_AT: return PEAT_ERROR_MODEL_STUCK_AT;
    case PEAT_INJECT_VALUE:
      switch (s.value_kind) {
        case PEAT_VALUE_ZERO: return PEAT_ERROR_MODEL_DROPPED_WRITES;
        case PEAT_VALUE_NAN: case PEAT_VALUE_POS_INF: case PEAT_VALUE_NEG_INF: return PEAT_ERROR_MODEL_NONFINITE;
        default: return PEAT_ERROR_MODEL_GARBAGE;
      }
    case PEAT_INJECT_REGION: return PEAT_ERROR_MODEL_REGION;
    case PEAT_INJECT_SCALE: return PEAT_ERROR_MODEL_SCALING;
    case PEAT_INJECT_TRANSPOSE: case PEAT_INJECT_SHIFT: return PEAT_ERROR_MODEL_GARBAGE;
    case PEAT_INJECT_PRECISION: return PEAT_ERROR_MODEL_REDUCED_PRECISION;
    case PEAT_INJECT_ULP_NOISE: return PEAT_ERROR_MODEL_ROUNDING;
    default: return PEAT_ERROR_MODEL_UNKNOWN;
  }
}

inline Problem view_2d(const peat_inject_spec_t& s, int64_t last_dim, int64_t numel, int64_t& rows, int64_t& cols) {
  if (s.rows == 0 && s.cols == 0) {
    cols = last_dim;
    rows = cols > 0 ? numel / cols : 0;
    return {};
  }
  rows = s.rows;
  cols = s.cols;
  if (s.cols != 0 && (s.rows > numel / s.cols || s.rows * s.cols != numel))
    return problem(PEAT_STATUS_INVALID_ARGUMENT, "spec.rows x spec.cols = {} x {} does not cover the tensor's {} elements",
                   s.rows, s.cols, numel);
  return {};
}

inline Problem tensor_checks(const peat_inject_spec_t& s, const hd::ElementLayout& layout, std::string_view dtype,
                             int64_t numel, uint64_t& fixed_mask, hd::FloatFormat& format) {
  const int32_t width = layout.width;
  switch (s.kind) {
    case PEAT_INJECT_BITFLIP:
      if (s.bit >= 0) {
        if (s.bit + s.bits > width)
          return problem(PEAT_STATUS_INVALID_ARGUMENT,
                         "spec.bit = {} with spec.bits = {}: bits [{}, {}) lie beyond the {}-bit {}", s.bit, s.bits,
                         s.bit, s.bit + s.bits, width, dtype);
        fixed_mask = hd::fixed_bit_mask(s.bit, s.bits);
      } else {
        int32_t lo = 0, count = 0;
        hd::field_range(layout, s.field, lo, count);
        if (s.bits > count)
          return problem(PEAT_STATUS_INVALID_ARGUMENT, "spec.bits = {}: the {} field of {} has only {} bits", s.bits,
                         s.field == PEAT_BIT_FIELD_ANY ? "whole" : "chosen", dtype, count);
      }
      break;
    case PEAT_INJECT_STUCK_AT:
      if (s.bit >= width)
        return problem(PEAT_STATUS_INVALID_ARGUMENT, "spec.bit = {} lies beyond the {}-bit {}", s.bit, width, dtype);
      break;
    case PEAT_INJECT_SHIFT:
      if (s.offset <= -numel || s.offset >= numel)
        return problem(PEAT_STATUS_INVALID_ARGUMENT, "spec.offset = {} moves every element out of the {}-element tensor",
                       s.offset, numel);
      break;
    case PEAT_INJECT_PRECISION: hd::format_by_code(s.format, format); break;
    default: break;
  }
  return {};
}

inline std::vector<int64_t> random_distinct(int64_t count, int64_t n, uint64_t seed, uint32_t op, uint32_t call) {
  std::unordered_set<int64_t> chosen;
  chosen.reserve(static_cast<std::size_t>(count) * 2);
  for (int64_t j = n - count; j < n; ++j) {
    const hd::Philox4x32 w = hd::philox_random(seed, op, call, hd::tagged(static_cast<uint64_t>(j), hd::kTagSelect));
    const auto t = static_cast<int64_t>(
        hd::uniform_index(hd::philox_uniform(w.v[0], w.v[1]), static_cast<uint64_t>(j) + 1));
    if (!chosen.insert(t).second) chosen.insert(j);
  }
  std::vector<int64_t> out(chosen.begin(), chosen.end());
  std::sort(out.begin(), out.end());
  return out;
}

inline Problem region_bands(const peat_inject_spec_t& s, int64_t R, int64_t C, std::vector<kernels::Band>& bands) {
  const auto add = [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    if (r0 < r1 && c0 < c1) bands.push_back(kernels::Band{r0, r1, c0, c1});
  };
  const auto outside = [&](const std::string& what) {
    return problem(PEAT_STATUS_INVALID_ARGUMENT, "spec: region {} lies outside the {} x {} view", what, R, C);
  };
  // ceil(R / tile) without overflow for any tile >= 1.
  const int64_t tgr = R / s.tile_rows + (R % s.tile_rows != 0), tgc = C / s.tile_cols + (C % s.tile_cols != 0);
  switch (s.region) {
    case PEAT_REGION_ROWS:
      if (s.first >= R || s.extent > R - s.first)
        return outside(fmt::format("of {} rows from row {} (extent, first)", s.extent, s.first));
      add(s.first, s.first + s.extent, 0, C);
      break;
    case PEAT_REGION_COLUMNS:
      if (s.first >= C || s.extent > C - s.first)
        return outside(fmt::format("of {} columns from column {} (extent, first)", s.extent, s.first));
      add(0, R, s.first, s.first + s.extent);
      break;
    case PEAT_REGION_TILES: {
      const int64_t ntiles = tgr * tgc;
      if (s.first >= ntiles || s.extent > ntiles - s.first)
        return outside(fmt::format("of {} tiles from tile {} (extent, first; the view has {} tiles of {} x {})",
                                   s.extent, s.first, ntiles, s.tile_rows, s.tile_cols));
      const int64_t last = s.first + s.extent - 1;
      for (int64_t tr = s.first / tgc; tr <= last / tgc; ++tr) {
        const int64_t t0 = std::max(s.first, tr * tgc), t1 = std::min(last, tr * tgc + tgc - 1);
        add(tr * s.tile_rows, std::min(R, (tr + 1) * s.tile_rows), (t0 % tgc) * s.tile_cols,
            std::min(C, (t1 % tgc + 1) * s.tile_cols));
      }
      break;
    }
    case PEAT_REGION_LAST_TILE:
      if (R == 0 || C == 0) return outside("last tile");
      add((tgr - 1) * s.tile_rows, R, (tgc - 1) * s.tile_cols, C);
      break;
    case PEAT_REGION_REMAINDER: {
      const int64_t R0 = (R / s.tile_rows) * s.tile_rows, C0 = (C / s.tile_cols) * s.tile_cols;
      if (R0 == R && C0 == C)
        return problem(PEAT_STATUS_INVALID_ARGUMENT,
                       "spec: the {} x {} view has no partial tile: both are multiples of the {} x {} tile "
                       "(tile_rows, tile_cols)", R, C, s.tile_rows, s.tile_cols);
      add(0, R0, C0, C);
      add(R0, R, 0, C);
      break;
    }
    default: break;
  }
  return {};
}

inline Problem select(const peat_inject_spec_t& s, int64_t numel, int64_t rows, int64_t cols, uint64_t seed,
                      uint32_t op, uint32_t call, Selection& out) {
  if (uses_selection(s.kind)) {
    if (s.elements != nullptr) {
      out.kind = kernels::kSelectList;
      out.list.assign(s.elements, s.elements + s.count);
      for (int64_t i = 0; i < s.count; ++i) {
        const int64_t e = out.list[static_cast<std::size_t>(i)];
        if (e < 0 || e >= numel)
          return problem(PEAT_STATUS_INVALID_ARGUMENT, "spec.elements[{}] = {} is outside [0, {})", i, e, numel);
      }
      std::sort(out.list.begin(), out.list.end());
      out.list.erase(std::unique(out.list.begin(), out.list.end()), out.list.end());
    } else if (s.probability > 0.0) {
      out.kind = kernels::kSelectBernoulli;
    } else {
      if (s.count > numel)
        return problem(PEAT_STATUS_INVALID_ARGUMENT, "spec.count = {} exceeds the tensor's {} elements", s.count, numel);
      out.kind = kernels::kSelectList;
      out.list = random_distinct(s.count, numel, seed, op, call);
    }
  } else if (uses_region(s)) {
    out.kind = kernels::kSelectBands;
    PEAT_PROBLEM_TRY(region_bands(s, rows, cols, out.bands));
  } else if (s.kind == PEAT_INJECT_STUCK_AT && s.scope == PEAT_STUCK_LANE) {
    out.kind = kernels::kSelectLanes;
  } else {
    out.kind = kernels::kSelectAll;
  }
  return {};
}

inline bool draws_random(const peat_inject_spec_t& s, int32_t selection) {
  return selection == kernels::kSelectBernoulli || (s.kind == PEAT_INJECT_BITFLIP && s.bit < 0) ||
         (s.kind == PEAT_INJECT_VALUE && s.value_kind == PEAT_VALUE_RANDOM) ||
         ((s.kind == PEAT_INJECT_REGION || s.kind == PEAT_INJECT_SHIFT) && s.fill == PEAT_FILL_GARBAGE) ||
         s.kind == PEAT_INJECT_ULP_NOISE;
}

inline void Truth::add(const Truth& b) {
  selected += b.selected;
  changed += b.changed;
  new_nonfinite += b.new_nonfinite;
  if (b.first >= 0 && (first < 0 || b.first < first)) first = b.first;
  if (b.last > last) last = b.last;
  if (b.row_min >= 0) {
    row_min = row_min < 0 ? b.row_min : std::min(row_min, b.row_min);
    col_min = col_min < 0 ? b.col_min : std::min(col_min, b.col_min);
    row_max = std::max(row_max, b.row_max);
    col_max = std::max(col_max, b.col_max);
  }
  for (int i = 0; i < 64; ++i) bit_flips[i] += b.bit_flips[i];
  for (int32_t i = 0; i < b.recorded && recorded < PEAT_INJECT_TRUTH_CAPACITY; ++i) changes[recorded++] = b.changes[i];
}

inline peat_inject_truth_t Truth::finish(const peat_inject_spec_t& s, int32_t element_bits, int64_t numel,
                                         int64_t rows, int64_t cols, uint64_t seed, uint32_t op, uint32_t call) const {
  peat_inject_truth_t t;
  std::memset(static_cast<void*>(&t), 0, sizeof t);
  t.struct_size = sizeof(peat_inject_truth_t);
  t.kind = s.kind;
  t.model = model_of(s);
  t.element_bits = element_bits;
  t.numel = numel;
  // What changed, where (index range and bounding box in the rows x cols view).
  t.selected = selected, t.changed = changed, t.new_nonfinite = new_nonfinite;
  t.first_index = first, t.last_index = last;
  t.rows = rows, t.cols = cols;
  t.row_min = row_min, t.row_max = row_max, t.col_min = col_min, t.col_max = col_max;
  std::copy(std::begin(bit_flips), std::end(bit_flips), std::begin(t.bit_flips));
  // The key the Philox words came from, and the first changes.
  t.seed = seed, t.op = op, t.call = call;
  t.recorded = recorded;
  std::copy(changes, changes + recorded, t.changes);
  return t;
}

inline Truth from_block(const kernels::BlockTruth& b) {
  Truth t;
  t.selected = static_cast<int64_t>(b.selected);
  t.new_nonfinite = static_cast<int64_t>(b.new_nonfinite);
  std::copy(std::begin(b.bit_flips), std::end(b.bit_flips), std::begin(t.bit_flips));
  if (b.changed == 0) return t;
  t.changed = static_cast<int64_t>(b.changed);
  t.first = static_cast<int64_t>(b.first);
  t.last = static_cast<int64_t>(b.last_plus1) - 1;
  t.row_min = static_cast<int64_t>(b.row_min);
  t.row_max = static_cast<int64_t>(b.row_max_plus1) - 1;
  t.col_min = static_cast<int64_t>(b.col_min);
  t.col_max = static_cast<int64_t>(b.col_max_plus1) - 1;
  t.recorded = static_cast<int32_t>(std::min<int64_t>(b.recorded, PEAT_INJECT_TRUTH_CAPACITY));
  std::copy(b.changes, b.changes + t.recorded, t.changes);
  return t;
}

}  // namespace peat::inject_plan
