// The helpers of features.hpp that are no one-liners: the spatial map summed
// up, the map's figures on a verdict, the comparison of two runs' signatures,
// narrow formats and the fair-coin tail the one-direction tests use.
#include "lib/detector/features.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace peat::impl::detector::rules {

Spatial read_map(const peat_spatial_map_t* map) {
  Spatial sp;
  if (map == nullptr || map->rows <= 0 || map->cols <= 0) return sp;
  sp.present = true;
  sp.rows = map->rows;
  sp.cols = map->cols;
  sp.m = map->mismatch_count;
  sp.first = map->first_mismatch;
  if (map->row_counts)
    for (int64_t r = 0; r < map->rows; ++r) sp.rows_touched += map->row_counts[r] > 0;
  if (map->col_counts)
    for (int64_t c = 0; c < map->cols; ++c) sp.cols_touched += map->col_counts[c] > 0;
  if (map->row_counts && map->col_counts) {
    // A row (column) of `extent` elements is in the band when >= 3/4 of it mismatch.
    const auto full = [](uint64_t count, int64_t extent) { return 4 * count >= 3 * static_cast<uint64_t>(extent); };
    for (int64_t r = 0; r < map->rows; ++r) sp.band_rows += full(map->row_counts[r], map->cols);
    for (int64_t c = 0; c < map->cols; ++c) sp.band_cols += full(map->col_counts[c], map->rows);
    sp.band_fit = true;
    for (int64_t r = 0; r < map->rows && sp.band_fit; ++r)
      sp.band_fit = full(map->row_counts[r], map->cols) || map->row_counts[r] <= static_cast<uint64_t>(sp.band_cols);
    for (int64_t c = 0; c < map->cols && sp.band_fit; ++c)
      sp.band_fit = full(map->col_counts[c], map->rows) || map->col_counts[c] <= static_cast<uint64_t>(sp.band_rows);
  }
  sp.tiles_total = map->tile_grid_rows * map->tile_grid_cols;
  if (map->tile_counts)
    for (int64_t t = 0; t < sp.tiles_total; ++t)
      if (map->tile_counts[t] > 0) {
        ++sp.tiles_touched;
        const int64_t tr = t / map->tile_grid_cols, tc = t % map->tile_grid_cols;
        const int64_t h = std::min(map->tile_rows, map->rows - tr * map->tile_rows);
        const int64_t w = std::min(map->tile_cols, map->cols - tc * map->tile_cols);
        sp.touched_tile_area += static_cast<double>(h) * static_cast<double>(w);
      }
  auto one_lane = [](const uint64_t* lanes, int period, int& lane) {
    int used = 0;
    for (int l = 0; l < period; ++l)
      if (lanes[l] > 0) { ++used; lane = l; }
    return used == 1;
  };
  int lane = -1;
  if (sp.m >= 2 && one_lane(map->lane32_counts, 32, lane)) {
    sp.lane_period = 32; sp.lane = lane;
  } else if (sp.m >= 2 && one_lane(map->lane64_counts, 64, lane)) {
    sp.lane_period = 64; sp.lane = lane;
  }
  return sp;
}

void set_spatial(peat_verdict_t& v, const Spatial& sp) {
  if (!sp.present) return;
  v.rows_affected = sp.rows_touched;
  v.cols_affected = sp.cols_touched;
  v.tiles_affected = sp.tiles_touched;
  v.first_index = sp.first;
}

bool same_numbers(const peat_signature_t& a, const peat_signature_t& b) {
  if (a.count != b.count || a.bitwise_mismatch_count != b.bitwise_mismatch_count ||
      a.value_mismatch_count != b.value_mismatch_count || a.new_nonfinite_count != b.new_nonfinite_count ||
      a.max_abs_error != b.max_abs_error || a.max_abs_error_index != b.max_abs_error_index)
    return false;
  if (std::memcmp(a.ulp_hist, b.ulp_hist, sizeof a.ulp_hist) != 0 ||
      std::memcmp(a.xor_bit_hist, b.xor_bit_hist, sizeof a.xor_bit_hist) != 0 ||
      std::memcmp(a.rel_hist, b.rel_hist, sizeof a.rel_hist) != 0)
    return false;
  auto close = [](double x, double y) { return std::fabs(x - y) <= 1e-12 * std::max(std::fabs(x), std::fabs(y)); };
  return close(sum_of(a.sum_sq_error), sum_of(b.sum_sq_error)) && close(sum_of(a.sum_error), sum_of(b.sum_error));
}

int format_mantissa_bits(peat_float_format_t f) {
  switch (f) {
    case PEAT_FORMAT_TF32: case PEAT_FORMAT_FP16: return 10;
    case PEAT_FORMAT_BF16: return 7;
    case PEAT_FORMAT_FP8_E4M3: return 3;
    case PEAT_FORMAT_FP8_E5M2: return 2;
    default: return 0;
  }
}

// P(|up - down| >= d) for n fair coin flips (up + down = n): the chance that
// noise, moving values up and down alike, shows a one-way excess of d.
double coin_tail(uint64_t n, uint64_t d) {
  if (d == 0) return 1;
  if (n > 4000) return std::erfc((static_cast<double>(d) - 1) / std::sqrt(2.0 * static_cast<double>(n)));
  const uint64_t k0 = (n + d + 1) / 2;  // up >= k0 gives up - down >= d
  double p = 0;
  const double ln2n = static_cast<double>(n) * std::log(2.0);
  for (uint64_t k = k0; k <= n; ++k)
    p += std::exp(std::lgamma(static_cast<double>(n) + 1) - std::lgamma(static_cast<double>(k) + 1) -
                  std::lgamma(static_cast<double>(n - k) + 1) - ln2n);
  return std::min(1.0, 2 * p);
}

// Nearest narrow format to `bits` effective mantissa bits.
peat_float_format_t nearest_format(double bits) {
  struct Cand { peat_float_format_t f; double m; };
  const Cand c[] = {{PEAT_FORMAT_FP8_E5M2, 2}, {PEAT_FORMAT_FP8_E4M3, 3}, {PEAT_FORMAT_BF16, 7}, {PEAT_FORMAT_TF32, 10}};
  peat_float_format_t best = c[0].f;
  double d = 1e9;
  for (const Cand& x : c)
    if (std::fabs(bits - x.m) < d) { d = std::fabs(bits - x.m); best = x.f; }
  return best;
}

}  // namespace peat::impl::detector::rules
