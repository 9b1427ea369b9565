// The spatial map of mismatches (peat_spatial_map_t): building it during the
// signature pass, and merging maps of adjacent pieces.
//
// During the pass each chunk keeps a MapPartial (lanes, first/last, runs) for
// its index range; per-row, per-column and per-tile counts go straight into
// the map's buffers with relaxed atomic increments (integer sums, so the
// result is the same in any order). Partials of adjacent ranges merge in
// index order.
#pragma once

#include <peat/analyzer.h>

#include "lib/analyzer/analyze.hpp"

#include <cstddef>
#include <cstdint>

namespace peat::impl::analyzer {

struct MapPartial {
  uint64_t lane32[PEAT_SPATIAL_LANES_32] = {};
  uint64_t lane64[PEAT_SPATIAL_LANES_64] = {};
  uint64_t count = 0;
  int64_t first = -1, last = -1;
  int64_t longest = 0, longest_start = -1;
  int64_t begin = 0, end = 0;        // covered [begin, end)
  int64_t leading = 0, trailing = 0; // runs touching begin / end - 1
  // While recording:
  int64_t run_start = -1, run_len = 0, first_run_len = 0;
  bool first_run_closed = false;
};

// Where per-row/column/tile counts go.
struct MapTarget {
  uint64_t* rows = nullptr;
  uint64_t* cols = nullptr;
  uint64_t* tiles = nullptr;
  int64_t n_cols = 1, tile_rows = 1, tile_cols = 1, tile_grid_cols = 1;
};

MapTarget map_target(const peat_spatial_map_t& map) noexcept;

void map_partial_begin(MapPartial& part, int64_t begin, int64_t end) noexcept;
void map_partial_end(MapPartial& part) noexcept;  // closes the open run, computes leading/trailing

// Records a mismatch at element index `index` (increasing within a partial).
inline void record_mismatch(MapPartial& part, const MapTarget& target, int64_t index) noexcept {
  const int64_t row = index / target.n_cols, col = index - row * target.n_cols;
  __atomic_fetch_add(&target.rows[row], uint64_t{1}, __ATOMIC_RELAXED);
  __atomic_fetch_add(&target.cols[col], uint64_t{1}, __ATOMIC_RELAXED);
  __atomic_fetch_add(&target.tiles[(row / target.tile_rows) * target.tile_grid_cols + col / target.tile_cols],
                     uint64_t{1}, __ATOMIC_RELAXED);
  part.lane32[index & 31] += 1;
  part.lane64[index & 63] += 1;
  if (part.count > 0 && index == part.last + 1) {
    part.run_len += 1;
  } else {
    if (part.count > 0 && !part.first_run_closed) {
      part.first_run_len = part.run_len;
      part.first_run_closed = true;
    }
    part.run_start = index;
    part.run_len = 1;
  }
  if (part.run_len > part.longest) {
    part.longest = part.run_len;
    part.longest_start = part.run_start;
  }
  if (part.count == 0) part.first = index;
  part.last = index;
  part.count += 1;
}

// a = a (+) b where b's range follows a's (b.begin == a.end), or either is empty.
void map_partial_merge(MapPartial& a, const MapPartial& b) noexcept;

// Writes the partial's scalars and lanes into the map (buffers untouched).
void map_partial_store(const MapPartial& part, peat_spatial_map_t& map) noexcept;

// Reads the map's scalars and lanes as a partial.
MapPartial map_partial_load(const peat_spatial_map_t& map) noexcept;

// Checks struct_size, sets the geometry from `cfg`, provides the buffers
// (library-owned where NULL, capacity-checked where caller-provided), checks
// that the buffers overlap neither each other, the map, nor [avoid, avoid +
// avoid_size), and clears all counts. Throws peat::impl::Error.
void prepare_map(peat_spatial_map_t& map, const ResolvedConfig& cfg, const void* avoid, std::size_t avoid_size);

// Throws INVALID_ARGUMENT when the map's current buffers (for its current
// geometry) overlap each other, the map, or [avoid, avoid + avoid_size).
void check_map_overlap(const peat_spatial_map_t& map, const void* avoid, std::size_t avoid_size);

// Throws VERSION_MISMATCH unless map.struct_size is this library's size.
void check_map_size(const peat_spatial_map_t& map, const char* what);

}  // namespace peat::impl::analyzer
