// The error-model library on the CPU: validation of a spec against a tensor,
// element selection, and the per-element loop over oneTBB. The per-element
// arithmetic is backends/common/inject_element.h (shared with GPU kernels).
//
// Determinism: every random word is Philox(seed, op, call, element index),
// the work is split by tbb::parallel_deterministic_reduce over fixed-size
// chunks, and partial truths are merged in index order, so the tensor and the
// truth are the same for every thread count.
#include "injector/inject.hpp"

#include "backend/backend.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/versioned_struct.hpp"

#include "inject_element.h"
#include "philox.h"
#include "precision.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_reduce.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <unordered_set>
#include <vector>

namespace peat::injector {

namespace hd = peat::hd;

peat_inject_spec_t default_spec(peat_inject_kind_t kind) noexcept {
  peat_inject_spec_t s{};
  s.struct_size = sizeof(peat_inject_spec_t);
  s.kind = kind;
  s.count = 1;
  s.elements = nullptr;
  s.probability = 0.0;
  s.bits = 1;
  s.bit = -1;
  s.adjacent = 0;
  s.field = PEAT_BIT_FIELD_ANY;
  s.stuck_value = 0;
  s.scope = PEAT_STUCK_ALL;
  s.lane_period = 32;
  s.lane = 0;
  s.value_kind = PEAT_VALUE_ZERO;
  s.value = 0.0;
  s.range = 1.0;
  s.rows = 0;
  s.cols = 0;
  s.region = PEAT_REGION_ROWS;
  s.first = 0;
  s.extent = 1;
  s.tile_rows = 16;
  s.tile_cols = 16;
  s.fill = PEAT_FILL_ZEROS;
  s.stale = nullptr;
  s.alpha = 2.0;
  s.offset = 1;
  s.format = PEAT_FORMAT_BF16;
  s.rounding = PEAT_ROUND_NEAREST_EVEN;
  s.saturate = 0;
  s.ulp = 1;
  s.distribution = PEAT_ULP_UNIFORM;
  return s;
}

peat_inject_spec_t read_spec(const peat_inject_spec_t* spec, std::string_view name) {
  if (spec == nullptr) fail(PEAT_STATUS_INVALID_ARGUMENT, "argument '{}' is NULL", name);
  // Older (smaller) specs keep the defaults of their own kind for missing fields.
  const peat_inject_kind_t kind = spec->struct_size >= offsetof(peat_inject_spec_t, kind) + sizeof(int32_t)
                                      ? spec->kind
                                      : PEAT_INJECT_BITFLIP;
  return read_options(spec, name, [kind](peat_inject_spec_t* s) { *s = default_spec(kind); });
}

namespace {

bool uses_selection(peat_inject_kind_t kind) {
  return kind == PEAT_INJECT_BITFLIP || kind == PEAT_INJECT_VALUE || kind == PEAT_INJECT_ULP_NOISE;
}
bool uses_region(const peat_inject_spec_t& s) {
  return s.kind == PEAT_INJECT_REGION || (s.kind == PEAT_INJECT_STUCK_AT && s.scope == PEAT_STUCK_REGION);
}

}  // namespace

void validate_spec(const peat_inject_spec_t& s, std::string_view name) {
  const auto bad = [&](std::string_view field, const auto& value, std::string_view why) {
    fail(PEAT_STATUS_INVALID_ARGUMENT, "{}.{} = {}: {}", name, field, value, why);
  };
  if (s.kind < PEAT_INJECT_BITFLIP || s.kind > PEAT_INJECT_ULP_NOISE)
    bad("kind", s.kind, "not a peat_inject_kind_code value (0..8)");
  if (uses_selection(s.kind)) {
    if (s.elements == nullptr && !(s.probability > 0.0) && s.count < 1) bad("count", s.count, "must be >= 1");
    if (s.elements != nullptr && s.count < 1) bad("count", s.count, "must be >= 1 (the length of elements)");
    if (!(s.probability >= 0.0 && s.probability <= 1.0)) bad("probability", s.probability, "must be in [0, 1]");
  }
  switch (s.kind) {
    case PEAT_INJECT_BITFLIP:
      if (s.bits < 1 || s.bits > 64) bad("bits", s.bits, "must be in [1, 64]");
      if (s.bit < -1 || s.bit > 63) bad("bit", s.bit, "must be -1 (random) or a bit index in [0, 63]");
      if (s.field < PEAT_BIT_FIELD_ANY || s.field > PEAT_BIT_FIELD_MANTISSA)
        bad("field", s.field, "not a peat_bit_field_code value (0..3)");
      if (s.adjacent != 0 && s.adjacent != 1) bad("adjacent", s.adjacent, "must be 0 or 1");
      break;
    case PEAT_INJECT_STUCK_AT:
      if (s.bit < 0 || s.bit > 63) bad("bit", s.bit, "stuck-at needs a bit index in [0, 63]");
      if (s.stuck_value != 0 && s.stuck_value != 1) bad("stuck_value", s.stuck_value, "must be 0 or 1");
      if (s.scope < PEAT_STUCK_ALL || s.scope > PEAT_STUCK_REGION)
        bad("scope", s.scope, "not a peat_stuck_scope_code value (0..2)");
      if (s.scope == PEAT_STUCK_LANE) {
        if (s.lane_period < 1 || s.lane_period > 1024) bad("lane_period", s.lane_period, "must be in [1, 1024]");
        if (s.lane < 0 || s.lane >= s.lane_period) bad("lane", s.lane, "must be in [0, lane_period)");
      }
      break;
    case PEAT_INJECT_VALUE:
      if (s.value_kind < PEAT_VALUE_ZERO || s.value_kind > PEAT_VALUE_CONSTANT)
        bad("value_kind", s.value_kind, "not a peat_value_kind_code value (0..5)");
      if (s.value_kind == PEAT_VALUE_RANDOM && !(std::isfinite(s.range) && s.range > 0.0))
        bad("range", s.range, "must be finite and > 0");
      break;
    case PEAT_INJECT_REGION:
      if (s.fill < PEAT_FILL_ZEROS || s.fill > PEAT_FILL_STALE)
        bad("fill", s.fill, "a region is filled with ZEROS, GARBAGE or STALE (0..2)");
      break;
    case PEAT_INJECT_SCALE:
      if (!std::isfinite(s.alpha)) bad("alpha", s.alpha, "must be finite");
      break;
    case PEAT_INJECT_SHIFT:
      if (s.fill < PEAT_FILL_ZEROS || s.fill > PEAT_FILL_KEEP) bad("fill", s.fill, "not a peat_fill_code value (0..3)");
      break;
    case PEAT_INJECT_PRECISION:
      if (s.format < PEAT_FORMAT_BF16 || s.format > PEAT_FORMAT_FP8_E5M2)
        bad("format", s.format, "not a peat_float_format_code value (0..4)");
      if (s.rounding != PEAT_ROUND_NEAREST_EVEN && s.rounding != PEAT_ROUND_TRUNCATE)
        bad("rounding", s.rounding, "not a peat_rounding_code value (0..1)");
      if (s.saturate != 0 && s.saturate != 1) bad("saturate", s.saturate, "must be 0 or 1");
      break;
    case PEAT_INJECT_ULP_NOISE:
      if (s.ulp < 1 || s.ulp > (1 << 20)) bad("ulp", s.ulp, "must be in [1, 2^20]");
      if (s.distribution < PEAT_ULP_UNIFORM || s.distribution > PEAT_ULP_NORMAL)
        bad("distribution", s.distribution, "not a peat_ulp_distribution_code value (0..2)");
      break;
    default: break;
  }
  if (uses_region(s)) {
    if (s.region < PEAT_REGION_ROWS || s.region > PEAT_REGION_REMAINDER)
      bad("region", s.region, "not a peat_region_shape_code value (0..4)");
    if (s.extent < 1) bad("extent", s.extent, "must be >= 1");
    if (s.first < 0) bad("first", s.first, "must be >= 0");
    if (s.tile_rows < 1) bad("tile_rows", s.tile_rows, "must be >= 1");
    if (s.tile_cols < 1) bad("tile_cols", s.tile_cols, "must be >= 1");
  }
  // The 2-D view (used by regions, lanes, TRANSPOSE and the truth's bounding box).
  if (s.rows < 0) bad("rows", s.rows, "must be >= 0");
  if (s.cols < 0) bad("cols", s.cols, "must be >= 0");
  if ((s.rows == 0) != (s.cols == 0)) bad("rows", s.rows, "rows and cols are both 0 (derive) or both set");
}

peat_error_model_t model_of(const peat_inject_spec_t& s) noexcept {
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

namespace {

// A band of rows [r0, r1) that each cover columns [c0, c1) of the 2-D view.
// Bands are sorted by rows and do not share rows, so walking them in order
// visits elements in increasing index order.
struct Band {
  int64_t r0, r1, c0, c1;
};

enum class Selection { All, List, Bernoulli, Lanes, Bands };

struct Plan {
  peat_inject_spec_t spec;
  hd::ElementLayout layout;
  std::size_t elem_size;
  int64_t numel;
  int64_t rows, cols;
  Selection selection;
  std::vector<int64_t> list;   // Selection::List: sorted, unique
  std::vector<Band> bands;     // Selection::Bands
  std::vector<int64_t> band_row_start;  // prefix sums of band rows
  uint64_t fixed_mask = 0;     // BITFLIP with a chosen bit
  hd::FloatFormat format{};
  std::vector<uint64_t> snapshot;  // TRANSPOSE / SHIFT: old words in index order
  bool random = true;              // the model draws per-element random words
  uint64_t seed;
  uint32_t op, call;
};

int32_t store_code(Float f) {
  switch (f) {
    case Float::F16: return hd::kStoreF16;
    case Float::BF16: return hd::kStoreBF16;
    case Float::F32: return hd::kStoreF32;
    case Float::F64: return hd::kStoreF64;
  }
  return hd::kStoreF64;
}

uint64_t load_word(const std::byte* p, std::size_t size) {
  switch (size) {
    case 2: { uint16_t v; std::memcpy(&v, p, 2); return v; }
    case 4: { uint32_t v; std::memcpy(&v, p, 4); return v; }
    default: { uint64_t v; std::memcpy(&v, p, 8); return v; }
  }
}
void store_word(std::byte* p, std::size_t size, uint64_t w) {
  switch (size) {
    case 2: { const uint16_t v = static_cast<uint16_t>(w); std::memcpy(p, &v, 2); return; }
    case 4: { const uint32_t v = static_cast<uint32_t>(w); std::memcpy(p, &v, 4); return; }
    default: std::memcpy(p, &w, 8); return;
  }
}

void add_band(std::vector<Band>& bands, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  if (r0 < r1 && c0 < c1) bands.push_back(Band{r0, r1, c0, c1});
}

void resolve_region(Plan& plan, std::string_view name) {
  const auto& s = plan.spec;
  const int64_t R = plan.rows, C = plan.cols;
  const auto outside = [&](std::string_view what) {
    fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: region {} lies outside the {} x {} view", name, what, R, C);
  };
  // ceil(R / tile) without overflow for any tile >= 1.
  const int64_t tile_grid_rows = R / s.tile_rows + (R % s.tile_rows != 0);
  const int64_t tile_grid_cols = C / s.tile_cols + (C % s.tile_cols != 0);
  switch (s.region) {
    case PEAT_REGION_ROWS:
      if (s.first >= R || s.extent > R - s.first)
        outside(fmt::format("of {} rows from row {} (extent, first)", s.extent, s.first));
      add_band(plan.bands, s.first, s.first + s.extent, 0, C);
      break;
    case PEAT_REGION_COLUMNS:
      if (s.first >= C || s.extent > C - s.first)
        outside(fmt::format("of {} columns from column {} (extent, first)", s.extent, s.first));
      add_band(plan.bands, 0, R, s.first, s.first + s.extent);
      break;
    case PEAT_REGION_TILES: {
      const int64_t ntiles = tile_grid_rows * tile_grid_cols;
      if (s.first >= ntiles || s.extent > ntiles - s.first)
        outside(fmt::format("of {} tiles from tile {} (extent, first; the view has {} tiles of {} x {})", s.extent,
                            s.first, ntiles, s.tile_rows, s.tile_cols));
      const int64_t last = s.first + s.extent - 1;
      for (int64_t tr = s.first / tile_grid_cols; tr <= last / tile_grid_cols; ++tr) {
        const int64_t t0 = std::max(s.first, tr * tile_grid_cols);
        const int64_t t1 = std::min(last, tr * tile_grid_cols + tile_grid_cols - 1);
        add_band(plan.bands, tr * s.tile_rows, std::min(R, (tr + 1) * s.tile_rows), (t0 % tile_grid_cols) * s.tile_cols,
                 std::min(C, (t1 % tile_grid_cols + 1) * s.tile_cols));
      }
      break;
    }
    case PEAT_REGION_LAST_TILE:
      if (R == 0 || C == 0) outside("last tile");
      add_band(plan.bands, (tile_grid_rows - 1) * s.tile_rows, R, (tile_grid_cols - 1) * s.tile_cols, C);
      break;
    case PEAT_REGION_REMAINDER: {
      const int64_t R0 = (R / s.tile_rows) * s.tile_rows, C0 = (C / s.tile_cols) * s.tile_cols;
      if (R0 == R && C0 == C)
        fail(PEAT_STATUS_INVALID_ARGUMENT,
             "{}: the {} x {} view has no partial tile: both are multiples of the {} x {} tile (tile_rows, tile_cols)",
             name, R, C, s.tile_rows, s.tile_cols);
      add_band(plan.bands, 0, R0, C0, C);
      add_band(plan.bands, R0, R, 0, C);
      break;
    }
    default: break;
  }
  int64_t total = 0;
  plan.band_row_start.clear();
  for (const Band& b : plan.bands) {
    plan.band_row_start.push_back(total);
    total += b.r1 - b.r0;
  }
  plan.band_row_start.push_back(total);
}

// `count` distinct indices in [0, n), sorted: Floyd's algorithm with Philox
// draws keyed by the iteration (tag kTagSelect).
std::vector<int64_t> random_distinct(int64_t count, int64_t n, uint64_t seed, uint32_t op, uint32_t call) {
  std::unordered_set<int64_t> chosen;
  chosen.reserve(static_cast<std::size_t>(count) * 2);
  for (int64_t j = n - count; j < n; ++j) {
    const hd::Philox4x32 w = hd::philox_random(seed, op, call, hd::tagged(static_cast<uint64_t>(j), hd::kTagSelect));
    const int64_t t = static_cast<int64_t>(hd::uniform_index(hd::philox_uniform(w.v[0], w.v[1]), static_cast<uint64_t>(j) + 1));
    if (!chosen.insert(t).second) chosen.insert(j);
  }
  std::vector<int64_t> out(chosen.begin(), chosen.end());
  std::sort(out.begin(), out.end());
  return out;
}

// What one chunk of work found: the partial ground truth.
struct Partial {
  int64_t selected = 0, changed = 0, new_nonfinite = 0;
  int64_t first = -1, last = -1;
  int64_t row_min = -1, row_max = -1, col_min = -1, col_max = -1;
  uint64_t bit_flips[64] = {};
  int32_t recorded = 0;
  peat_inject_change_t changes[PEAT_INJECT_TRUTH_CAPACITY];

  // `b` covers indices after ours.
  void merge(const Partial& b) {
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
};

class Runner {
 public:
  Runner(const Plan& plan, const TensorView& tensor, const TensorView* stale)
      : plan_(plan), tensor_(tensor), stale_(stale) {}

  // Applies the model to element `k` (row-major index), recording the change.
  void element(int64_t k, Partial& p) const {
    // Models without randomness skip the Philox block (10 rounds per element).
    const hd::Philox4x32 w = plan_.random ? hd::philox_random(plan_.seed, plan_.op, plan_.call, static_cast<uint64_t>(k))
                                          : hd::Philox4x32{{0, 0, 0, 0}};
    const auto& s = plan_.spec;
    if (plan_.selection == Selection::Bernoulli && !hd::bernoulli(s.probability, w)) return;
    std::byte* ptr = tensor_.base + tensor_.offset_of(k) * static_cast<int64_t>(plan_.elem_size);
    const uint64_t old_bits = load_word(ptr, plan_.elem_size);
    ++p.selected;
    const hd::ElementLayout& l = plan_.layout;
    uint64_t new_bits = old_bits;
    switch (s.kind) {
      case PEAT_INJECT_BITFLIP: {
        const uint64_t mask = s.bit >= 0 ? plan_.fixed_mask
                                         : hd::random_bit_mask(l, s.field, s.bits, s.adjacent != 0, w, plan_.seed,
                                                               plan_.op, plan_.call, static_cast<uint64_t>(k));
        new_bits = old_bits ^ mask;
        break;
      }
      case PEAT_INJECT_STUCK_AT: new_bits = hd::stuck_at(old_bits, s.bit, s.stuck_value); break;
      case PEAT_INJECT_VALUE: new_bits = hd::value_bits(l, s.value_kind, s.value, s.range, w); break;
      case PEAT_INJECT_REGION: new_bits = fill_bits(k, w); break;
      case PEAT_INJECT_SCALE: new_bits = hd::scale_bits(old_bits, l, s.alpha); break;
      case PEAT_INJECT_TRANSPOSE: {
        const int64_t R = plan_.rows;
        new_bits = plan_.snapshot[static_cast<std::size_t>((k % R) * plan_.cols + k / R)];
        break;
      }
      case PEAT_INJECT_SHIFT: {
        const int64_t from = k - s.offset;
        if (from >= 0 && from < plan_.numel) new_bits = plan_.snapshot[static_cast<std::size_t>(from)];
        else if (s.fill != PEAT_FILL_KEEP) new_bits = fill_bits(k, w);
        break;
      }
      case PEAT_INJECT_PRECISION:
        new_bits = hd::precision_bits(old_bits, l, plan_.format, s.rounding, s.saturate != 0);
        break;
      case PEAT_INJECT_ULP_NOISE:
        new_bits = hd::ulp_step(old_bits, l, hd::ulp_delta(s.distribution, s.ulp, w));
        break;
      default: break;
    }
    new_bits &= hd::width_mask(l);
    if (new_bits == old_bits) return;
    store_word(ptr, plan_.elem_size, new_bits);
    record(k, old_bits, new_bits, p);
  }

  void record(int64_t k, uint64_t old_bits, uint64_t new_bits, Partial& p) const {
    const hd::ElementLayout& l = plan_.layout;
    ++p.changed;
    if (hd::is_finite_bits(old_bits, l) && !hd::is_finite_bits(new_bits, l)) ++p.new_nonfinite;
    if (p.first < 0) p.first = k;
    p.last = k;
    const int64_t r = plan_.cols > 0 ? k / plan_.cols : 0, c = plan_.cols > 0 ? k % plan_.cols : 0;
    if (p.row_min < 0) {
      p.row_min = p.row_max = r;
      p.col_min = p.col_max = c;
    } else {
      p.row_min = std::min(p.row_min, r);
      p.row_max = std::max(p.row_max, r);
      p.col_min = std::min(p.col_min, c);
      p.col_max = std::max(p.col_max, c);
    }
    uint64_t x = old_bits ^ new_bits;
    while (x != 0) {
      const int b = __builtin_ctzll(x);
      ++p.bit_flips[b];
      x &= x - 1;
    }
    if (p.recorded < PEAT_INJECT_TRUTH_CAPACITY) {
      peat_inject_change_t& ch = p.changes[p.recorded++];
      ch.index = k;
      ch.old_bits = old_bits;
      ch.new_bits = new_bits;
      ch.old_value = hd::load_as_double(old_bits, l.store);
      ch.new_value = hd::load_as_double(new_bits, l.store);
    }
  }

 private:
  uint64_t fill_bits(int64_t k, const hd::Philox4x32& w) const {
    switch (plan_.spec.fill) {
      case PEAT_FILL_GARBAGE: return hd::garbage_bits(plan_.layout, w);
      case PEAT_FILL_STALE:
        return load_word(stale_->base + stale_->offset_of(k) * static_cast<int64_t>(plan_.elem_size), plan_.elem_size);
      default: return 0;
    }
  }

  const Plan& plan_;
  const TensorView& tensor_;
  const TensorView* stale_;
};

// Under ThreadSanitizer, oneTBB's runtime (a Debian library, not
// instrumented) hides the happens-before edges of its task queues, so every
// parallel loop reports false races. The TSan build runs the same chunks
// serially: the results are identical, since neither the chunks nor the
// (associative) merge order depend on the threads.
#if defined(__SANITIZE_THREAD__)
constexpr bool kSerialLoops = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr bool kSerialLoops = true;
#else
constexpr bool kSerialLoops = false;
#endif
#else
constexpr bool kSerialLoops = false;
#endif

// Calls fn(begin, end) over [0, n) in chunks of `grain`, in parallel.
template <typename Fn>
void for_chunks(int64_t n, int64_t grain, const Fn& fn) {
  if (n <= 0) return;
  if (kSerialLoops) {
    for (int64_t a = 0; a < n; a += grain) fn(a, std::min(n, a + grain));
    return;
  }
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, grain),
                    [&](const tbb::blocked_range<int64_t>& r) { fn(r.begin(), r.end()); });
}

// Runs `body(first_unit, end_unit, partial)` over [0, units) in chunks of
// `grain`, deterministically, and merges the partials in order.
template <typename Body>
Partial run_chunks(int64_t units, int64_t grain, const Body& body) {
  if (units <= 0) return Partial{};
  if (kSerialLoops) {
    Partial total;
    for (int64_t a = 0; a < units; a += std::max<int64_t>(1, grain)) {
      Partial p;
      body(a, std::min(units, a + std::max<int64_t>(1, grain)), p);
      total.merge(p);
    }
    return total;
  }
  return tbb::parallel_deterministic_reduce(
      tbb::blocked_range<int64_t>(0, units, std::max<int64_t>(1, grain)), Partial{},
      [&](const tbb::blocked_range<int64_t>& range, Partial p) {
        body(range.begin(), range.end(), p);
        return p;
      },
      [](Partial a, const Partial& b) {
        a.merge(b);
        return a;
      });
}

constexpr int64_t kGrainElements = 1 << 14;

}  // namespace

void apply_cpu(const peat_inject_spec_t& spec, const TensorView& tensor, const TensorView* stale, uint64_t seed,
               uint32_t op, uint32_t call, peat_inject_truth_t& truth) {
  validate_spec(spec, "spec");
  const Float kind = require_float(tensor.dtype, "tensor");
  Plan plan;
  plan.spec = spec;
  plan.layout = hd::layout_of(store_code(kind));
  plan.elem_size = float_size(kind);
  plan.numel = tensor.numel;
  plan.seed = seed;
  plan.op = op;
  plan.call = call;
  const int32_t width = plan.layout.width;

  // The 2-D view.
  if (spec.rows == 0 && spec.cols == 0) {
    plan.cols = tensor.ndim == 0 ? 1 : tensor.shape[tensor.ndim - 1];
    plan.rows = plan.cols > 0 ? tensor.numel / plan.cols : 0;
  } else {
    plan.rows = spec.rows;
    plan.cols = spec.cols;
    if (spec.cols != 0 && (spec.rows > tensor.numel / spec.cols || spec.rows * spec.cols != tensor.numel))
      fail(PEAT_STATUS_INVALID_ARGUMENT, "spec.rows x spec.cols = {} x {} does not cover the tensor's {} elements",
           spec.rows, spec.cols, tensor.numel);
  }

  // Tensor-dependent checks.
  switch (spec.kind) {
    case PEAT_INJECT_BITFLIP: {
      if (spec.bit >= 0) {
        if (spec.bit + spec.bits > width)
          fail(PEAT_STATUS_INVALID_ARGUMENT, "spec.bit = {} with spec.bits = {}: bits [{}, {}) lie beyond the {}-bit {}",
               spec.bit, spec.bits, spec.bit, spec.bit + spec.bits, width, float_name(kind));
        plan.fixed_mask = hd::fixed_bit_mask(spec.bit, spec.bits);
      } else {
        int32_t lo = 0, count = 0;
        hd::field_range(plan.layout, spec.field, lo, count);
        if (spec.bits > count)
          fail(PEAT_STATUS_INVALID_ARGUMENT, "spec.bits = {}: the {} field of {} has only {} bits", spec.bits,
               peat_bit_field_t(spec.field) == PEAT_BIT_FIELD_ANY ? "whole" : "chosen", float_name(kind), count);
      }
      break;
    }
    case PEAT_INJECT_STUCK_AT:
      if (spec.bit >= width)
        fail(PEAT_STATUS_INVALID_ARGUMENT, "spec.bit = {} lies beyond the {}-bit {}", spec.bit, width, float_name(kind));
      break;
    case PEAT_INJECT_SHIFT:
      if (spec.offset <= -tensor.numel || spec.offset >= tensor.numel)
        fail(PEAT_STATUS_INVALID_ARGUMENT, "spec.offset = {} moves every element out of the {}-element tensor",
             spec.offset, tensor.numel);
      break;
    case PEAT_INJECT_PRECISION: hd::format_by_code(spec.format, plan.format); break;
    default: break;
  }
  const bool needs_stale = (spec.kind == PEAT_INJECT_REGION || spec.kind == PEAT_INJECT_SHIFT) && spec.fill == PEAT_FILL_STALE;
  if (needs_stale) {
    if (stale == nullptr) fail(PEAT_STATUS_INVALID_ARGUMENT, "spec.stale is NULL but spec.fill is STALE");
    if (!(stale->dtype == tensor.dtype))
      fail(PEAT_STATUS_SHAPE_MISMATCH, "spec.stale has dtype {} but the tensor has {}", dtype_name(stale->dtype),
           dtype_name(tensor.dtype));
    require_same_shape(*stale, "spec.stale", tensor, "the tensor");
  }

  // Element selection.
  if (uses_selection(spec.kind)) {
    if (spec.elements != nullptr) {
      plan.selection = Selection::List;
      plan.list.assign(spec.elements, spec.elements + spec.count);
      for (int64_t i = 0; i < spec.count; ++i)
        if (plan.list[static_cast<std::size_t>(i)] < 0 || plan.list[static_cast<std::size_t>(i)] >= tensor.numel)
          fail(PEAT_STATUS_INVALID_ARGUMENT, "spec.elements[{}] = {} is outside [0, {})", i,
               plan.list[static_cast<std::size_t>(i)], tensor.numel);
      std::sort(plan.list.begin(), plan.list.end());
      plan.list.erase(std::unique(plan.list.begin(), plan.list.end()), plan.list.end());
    } else if (spec.probability > 0.0) {
      plan.selection = Selection::Bernoulli;
    } else {
      if (spec.count > tensor.numel)
        fail(PEAT_STATUS_INVALID_ARGUMENT, "spec.count = {} exceeds the tensor's {} elements", spec.count, tensor.numel);
      plan.selection = Selection::List;
      plan.list = random_distinct(spec.count, tensor.numel, seed, op, call);
    }
  } else if (uses_region(spec)) {
    plan.selection = Selection::Bands;
    resolve_region(plan, "spec");
  } else if (spec.kind == PEAT_INJECT_STUCK_AT && spec.scope == PEAT_STUCK_LANE) {
    plan.selection = Selection::Lanes;
  } else {
    plan.selection = Selection::All;
  }

  // Which models draw per-element random words.
  plan.random = plan.selection == Selection::Bernoulli || (spec.kind == PEAT_INJECT_BITFLIP && spec.bit < 0) ||
                (spec.kind == PEAT_INJECT_VALUE && spec.value_kind == PEAT_VALUE_RANDOM) ||
                ((spec.kind == PEAT_INJECT_REGION || spec.kind == PEAT_INJECT_SHIFT) && spec.fill == PEAT_FILL_GARBAGE) ||
                spec.kind == PEAT_INJECT_ULP_NOISE;

  // Layout faults read the old contents first.
  if (spec.kind == PEAT_INJECT_TRANSPOSE || spec.kind == PEAT_INJECT_SHIFT) {
    plan.snapshot.resize(static_cast<std::size_t>(tensor.numel));
    for_chunks(tensor.numel, kGrainElements, [&](int64_t a, int64_t b) {
      for (int64_t k = a; k < b; ++k)
        plan.snapshot[static_cast<std::size_t>(k)] =
            load_word(tensor.base + tensor.offset_of(k) * static_cast<int64_t>(plan.elem_size), plan.elem_size);
    });
  }

  const Runner runner(plan, tensor, stale);
  Partial result;
  switch (plan.selection) {
    case Selection::All:
    case Selection::Bernoulli:
      result = run_chunks(tensor.numel, kGrainElements, [&](int64_t a, int64_t b, Partial& p) {
        for (int64_t k = a; k < b; ++k) runner.element(k, p);
      });
      break;
    case Selection::Lanes: {
      const int64_t P = spec.lane_period, L = spec.lane;
      result = run_chunks(tensor.numel, kGrainElements, [&](int64_t a, int64_t b, Partial& p) {
        int64_t k = a + ((L - a % P) % P + P) % P;
        for (; k < b; k += P) runner.element(k, p);
      });
      break;
    }
    case Selection::List:
      result = run_chunks(static_cast<int64_t>(plan.list.size()), 4096, [&](int64_t a, int64_t b, Partial& p) {
        for (int64_t i = a; i < b; ++i) runner.element(plan.list[static_cast<std::size_t>(i)], p);
      });
      break;
    case Selection::Bands: {
      const int64_t total_rows = plan.band_row_start.back();
      const int64_t grain = std::max<int64_t>(1, kGrainElements / std::max<int64_t>(1, plan.cols));
      result = run_chunks(total_rows, grain, [&](int64_t a, int64_t b, Partial& p) {
        for (int64_t u = a; u < b; ++u) {
          const auto it = std::upper_bound(plan.band_row_start.begin(), plan.band_row_start.end(), u);
          const std::size_t bi = static_cast<std::size_t>(it - plan.band_row_start.begin()) - 1;
          const Band& band = plan.bands[bi];
          const int64_t row = band.r0 + (u - plan.band_row_start[bi]);
          for (int64_t c = band.c0; c < band.c1; ++c) runner.element(row * plan.cols + c, p);
        }
      });
      break;
    }
  }

  truth = peat_inject_truth_t{};
  truth.struct_size = sizeof(peat_inject_truth_t);
  truth.kind = spec.kind;
  truth.model = model_of(spec);
  truth.element_bits = width;
  truth.numel = tensor.numel;
  truth.selected = result.selected;
  truth.changed = result.changed;
  truth.new_nonfinite = result.new_nonfinite;
  truth.first_index = result.first;
  truth.last_index = result.last;
  truth.rows = plan.rows;
  truth.cols = plan.cols;
  truth.row_min = result.row_min;
  truth.row_max = result.row_max;
  truth.col_min = result.col_min;
  truth.col_max = result.col_max;
  std::copy(std::begin(result.bit_flips), std::end(result.bit_flips), std::begin(truth.bit_flips));
  truth.seed = seed;
  truth.op = op;
  truth.call = call;
  truth.recorded = result.recorded;
  std::copy(result.changes, result.changes + result.recorded, truth.changes);
}

namespace {

bool is_host(DLDevice d) {
  return d.device_type == kDLCPU || d.device_type == kDLCUDAHost || d.device_type == kDLROCMHost;
}

// Element-wise copy between two host views of the same shape and dtype.
void copy_host(const TensorView& dst, const TensorView& src) {
  const std::size_t size = dtype_size(dst.dtype);
  for_chunks(dst.numel, kGrainElements, [&](int64_t a, int64_t b) {
    if (dst.contiguous && src.contiguous) {
      std::memmove(dst.base + a * static_cast<int64_t>(size), src.base + a * static_cast<int64_t>(size),
                   static_cast<std::size_t>(b - a) * size);
      return;
    }
    for (int64_t k = a; k < b; ++k)
      std::memmove(dst.base + dst.offset_of(k) * static_cast<int64_t>(size),
                   src.base + src.offset_of(k) * static_cast<int64_t>(size), size);
  });
}

}  // namespace

void apply(const peat_inject_spec_t& spec, DLTensor* tensor, const DLTensor* source, uint64_t seed, uint32_t op,
           uint32_t call, peat_inject_truth_t& truth) {
  validate_spec(spec, "spec");
  const TensorView view = make_view(tensor, "tensor");
  require_float(view.dtype, "tensor");
  TensorView stale_view;
  const bool has_stale = spec.stale != nullptr;
  if (has_stale) stale_view = make_view(spec.stale, "spec.stale");
  std::optional<TensorView> source_view;
  if (source != nullptr) {
    source_view = make_view(source, "source");
    if (!(source_view->dtype == view.dtype))
      fail(PEAT_STATUS_SHAPE_MISMATCH, "source has dtype {} but tensor has {}", dtype_name(source_view->dtype),
           dtype_name(view.dtype));
    require_same_shape(*source_view, "source", view, "tensor");
  }

  Backend& backend = Registry::instance().for_device(view.device.device_type);
  if (&backend.api() == cpu_backend_table()) {
    if (source_view) {
      if (!is_host(source_view->device))
        fail(PEAT_STATUS_UNSUPPORTED, "source is on device type {} but tensor is in host memory",
             static_cast<int>(source_view->device.device_type));
    }
    if (has_stale && !is_host(stale_view.device))
      fail(PEAT_STATUS_UNSUPPORTED, "spec.stale is not in host memory");
    if (source_view) {
      // Copy the source in, apply; on error restore what the tensor held, so
      // that a refused spec leaves it unchanged.
      std::vector<std::byte> keep(static_cast<std::size_t>(view.numel) * dtype_size(view.dtype));
      DLTensor saved{};
      saved.data = keep.data();
      saved.device = DLDevice{kDLCPU, 0};
      saved.ndim = view.ndim;
      saved.dtype = view.dtype;
      saved.shape = tensor->shape;
      const TensorView saved_view = make_view(&saved, "saved");
      copy_host(saved_view, view);
      copy_host(view, *source_view);
      try {
        apply_cpu(spec, view, has_stale ? &stale_view : nullptr, seed, op, call, truth);
      } catch (...) {
        copy_host(view, saved_view);
        throw;
      }
      return;
    }
    apply_cpu(spec, view, has_stale ? &stale_view : nullptr, seed, op, call, truth);
    return;
  }

  if (!PEAT_BACKEND_HAS(backend, inject))
    fail(PEAT_STATUS_UNSUPPORTED, "backend '{}' does not implement error-model injection", backend.name());
  if (source_view) {
    if (!view.contiguous || !source_view->contiguous)
      fail(PEAT_STATUS_UNSUPPORTED, "backend '{}': copying a strided source is only supported in host memory",
           backend.name());
    backend.check(backend.api().copy(view.base, view.device, source_view->base, source_view->device,
                                     static_cast<std::size_t>(view.numel) * dtype_size(view.dtype), nullptr),
                  "copy");
  }
  peat_inject_truth_t full{};
  full.struct_size = sizeof(full);
  backend.check(backend.api().inject(tensor, &spec, seed, op, call, &full, nullptr), "inject");
  truth = full;
}

peat_status_t cpu_inject(DLTensor* tensor, const peat_inject_spec_t* spec, uint64_t seed, uint32_t op, uint32_t call,
                         peat_inject_truth_t* out_truth, void* /*stream*/) noexcept {
  std::string message;
  peat_status_t status = PEAT_STATUS_INTERNAL;
  try {
    const peat_inject_spec_t s = read_spec(spec, "spec");
    const TensorView view = make_view(tensor, "tensor");
    if (!is_host(view.device))
      fail(PEAT_STATUS_UNSUPPORTED, "the CPU backend injects into host memory only (device type {})",
           static_cast<int>(view.device.device_type));
    TensorView stale_view;
    if (s.stale != nullptr) stale_view = make_view(s.stale, "spec.stale");
    peat_inject_truth_t full{};
    apply_cpu(s, view, s.stale ? &stale_view : nullptr, seed, op, call, full);
    if (out_truth != nullptr) copy_truth_out(full, out_truth, "out_truth");
    return PEAT_STATUS_OK;
  } catch (const Error& e) {
    status = e.status();
    try { message = e.what(); } catch (...) {}
  } catch (const std::bad_alloc&) {
    status = PEAT_STATUS_OUT_OF_MEMORY;
    try { message = "out of memory"; } catch (...) {}
  } catch (const std::exception& e) {
    try { message = std::string("internal error: ") + e.what(); } catch (...) {}
  } catch (...) {
    try { message = "internal error: unknown exception"; } catch (...) {}
  }
  cpu_backend_set_error(std::move(message));
  return status;
}

double round_value(double value, peat_float_format_t format, peat_rounding_t rounding, bool saturate) noexcept {
  hd::FloatFormat f{};
  if (!hd::format_by_code(format, f)) return value;
  return hd::round_to_format(value, f, rounding, saturate);
}

peat_inject_truth_t empty_truth() noexcept { return zeroed_struct<peat_inject_truth_t>(); }

void copy_truth_out(const peat_inject_truth_t& full, peat_inject_truth_t* dst, std::string_view name) {
  write_versioned(dst, full, name);
}

}  // namespace peat::injector
