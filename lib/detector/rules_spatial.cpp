// The rules on where and what the mismatches are (docs/error-models.md rules
// 7-9): a block of rows, columns or tiles (REGION, from the spatial map), new
// NaN/Inf (NONFINITE), zeros written for non-zero values (DROPPED_WRITES).
#include "lib/detector/rules.hpp"

#include <algorithm>
#include <cstdint>

namespace peat::impl::detector::rules {

// ---- 7 REGION: large errors filling a block of rows, columns or tiles -----------------
bool Rules::region() {
  const peat_signature_t& s = s_;
  // Most of the map's mismatches are far (>= 4 ULP): a noise floor elsewhere
  // (pairs the map does not count) does not hide the region.
  const double m_far = static_cast<double>(std::min<uint64_t>(sp.m, F.n));
  if (!(sp.present && sp.m >= 4 && static_cast<double>(sp.m) <= 0.6 * N && static_cast<double>(far) >= 0.5 * m_far))
    return false;
  // A candidate that is zero everywhere wrote nothing: its "region" is only
  // where the golden happens to be non-zero (a ReLU's dead units), so the
  // output is named by rule 9 (DROPPED_WRITES), not by the golden's zeros.
  if (s.dropped_count > 0 && sum_of(s.sum_sq_candidate) == 0) return false;
  const double m = static_cast<double>(sp.m);
  const double row_density = sp.rows_touched > 0 ? m / (static_cast<double>(sp.rows_touched) * sp.cols) : 0;
  const double col_density = sp.cols_touched > 0 ? m / (static_cast<double>(sp.cols_touched) * sp.rows) : 0;
  const double tile_density = sp.touched_tile_area > 0 ? m / sp.touched_tile_area : 0;
  // Whole rows and whole columns together (an L or a cross): their union's area.
  const double band_area = static_cast<double>(sp.band_rows) * sp.cols + static_cast<double>(sp.band_cols) * sp.rows -
                           static_cast<double>(sp.band_rows) * static_cast<double>(sp.band_cols);
  const double band_density = band_area > 0 ? m / band_area : 0;
  const char* shape = nullptr;
  double density = 0;
  bool bands = false;
  if (sp.cols >= 4 && sp.rows_touched < sp.rows && row_density >= 0.75) {
    shape = "rows"; density = row_density;
  } else if (sp.rows >= 4 && sp.cols_touched < sp.cols && col_density >= 0.75) {
    shape = "columns"; density = col_density;
  } else if (sp.tiles_total >= 2 && sp.tiles_touched < sp.tiles_total && tile_density >= 0.75) {
    shape = "tiles"; density = tile_density;
  } else if (sp.rows >= 4 && sp.cols >= 4 && sp.band_rows > 0 && sp.band_cols > 0 && sp.band_fit &&
             band_area < static_cast<double>(sp.rows) * static_cast<double>(sp.cols) && band_density >= 0.75) {
    shape = "rows and columns"; density = band_density; bands = true;
  }
  if (shape == nullptr) return false;
  auto& v = B.add(PEAT_ERROR_MODEL_REGION, std::min(1.0, density), static_cast<int64_t>(sp.m));
  set_spatial(v, sp);
  v.lane_period = sp.lane_period;
  v.lane = sp.lane;
  if (bands) {
    v.rows_affected = sp.band_rows;  // the band, not every row its columns cross
    v.cols_affected = sp.band_cols;
    evidence(v, "{} map mismatches confined to {} whole rows and {} whole columns of {} x {} (each other row has "
             "<= {} mismatches, each other column <= {})", sp.m, sp.band_rows, sp.band_cols, sp.rows, sp.cols,
             sp.band_cols, sp.band_rows);
  } else {
    evidence(v, "{} map mismatches confined to {} of {} rows, {} of {} columns, {} of {} tiles", sp.m,
             sp.rows_touched, sp.rows, sp.cols_touched, sp.cols, sp.tiles_touched, sp.tiles_total);
  }
  evidence(v, "the touched {} are {:.1f} % filled (>= 75 %); {} mismatches >= 4 ULP apart (>= 50 % of {})", shape,
           100 * density, far, static_cast<uint64_t>(m_far));
  if (static_cast<double>(s.dropped_count) >= 0.9 * std::min(n, static_cast<double>(sp.m)))
    evidence(v, "fill: zeros ({} of {} mismatches are c = 0)", s.dropped_count, F.n);
  else
    evidence(v, "fill: other values (cosine {:.4f}, relative L2 {:.3g})", F.cosine(), rel_l2);
  // The pairs outside the map's count are a noise floor beneath the region.
  if (F.n > sp.m) floor_beneath(sp.m, "the region");
  return true;
}

// ---- 8 NONFINITE -----------------------------------------------------------------------
bool Rules::nonfinite() {
  const peat_signature_t& s = s_;
  if (!(F.nf > 0 && static_cast<double>(F.nf) >= 0.5 * n)) return false;
  auto& v = B.add(PEAT_ERROR_MODEL_NONFINITE, static_cast<double>(F.nf) / n, static_cast<int64_t>(F.nf));
  evidence(v, "{} of {} mismatches are new NaN/Inf (candidate NaN {}, Inf {}; golden finite)", F.nf, F.n,
           s.candidate_nan_count, s.candidate_inf_count);
  set_spatial(v, sp);
  return true;
}

// ---- 9 DROPPED_WRITES --------------------------------------------------------------------
bool Rules::dropped_writes() {
  const peat_signature_t& s = s_;
  if (!(static_cast<double>(s.dropped_count) >= 0.9 * n)) return false;
  auto& v = B.add(PEAT_ERROR_MODEL_DROPPED_WRITES, static_cast<double>(s.dropped_count) / n,
                  static_cast<int64_t>(s.dropped_count));
  evidence(v, "{} of {} mismatches are c = 0 where g != 0 (>= 90 %)", s.dropped_count, F.n);
  set_spatial(v, sp);
  return true;
}

}  // namespace peat::impl::detector::rules
