// The quantities the Detector's rules read off one signature (Features) and
// the spatial map (Spatial), the verdict list they fill (Builder, evidence),
// and the small helpers several rules share. Internal to lib/detector: the
// rules are split over rules*.cpp by the table of docs/error-models.md, and
// every one of those files reads these.
#pragma once

#include "lib/analyzer/sums.hpp"
#include "lib/core/dtype.hpp"
#include "lib/core/error.hpp"
#include "backends/common/float_bits.h"

#include <peat/detector.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

namespace peat::impl::detector::rules {

constexpr int kUndefined = PEAT_SIGNATURE_REL_UNDEFINED_BUCKET;
constexpr int kLarge = PEAT_SIGNATURE_REL_LARGE_BUCKET;

// The relative-error bucket holding 2^e (e in -64..-1); e = 0 is the r >= 1 bucket.
constexpr int rel_bucket(int e) { return e + 66; }

inline double sum_of(const peat_exact_sum_t& s) { return analyzer::sum_value(s); }

// Storage bits of a finite double rounded to the golden dtype (RNE).
inline uint64_t bits_of(double v, Float f) {
  switch (f) {
    case Float::F64: return peat::hd::bit_cast<uint64_t>(v);
    case Float::F32: return peat::hd::bit_cast<uint32_t>(static_cast<float>(v));
    case Float::BF16: return peat::hd::float_to_bf16(static_cast<float>(v));
    case Float::F16: return peat::hd::float_to_f16(static_cast<float>(v));
  }
  return 0;
}

struct Features {
  const peat_signature_t& s;
  const peat_detect_context_t& ctx;
  Float f;
  int p = 0;        // stored mantissa bits of the golden dtype
  int width = 0;    // storage bits
  double u_store = 0;
  double u_op = 0;
  int64_t K = 0;
  bool k_bound = false;  // GEMM / CONV / REDUCTION with K known
  uint64_t n = 0;        // value mismatches
  uint64_t nb = 0;       // bitwise mismatches
  uint64_t nf = 0;       // new non-finite

  Features(const peat_signature_t& sig, const peat_detect_context_t& c) : s(sig), ctx(c), f(require_float(sig.golden_dtype, "signature.golden_dtype")) {
    p = mantissa_bits(f);
    width = static_cast<int>(float_size(f) * 8);
    u_store = unit_roundoff(f);
    u_op = c.unit_roundoff > 0 ? c.unit_roundoff : (s.unit_roundoff > 0 ? s.unit_roundoff : u_store);
    K = c.reduction_length > 0 ? c.reduction_length : s.reduction_length;
    k_bound = K > 0 && (c.op_kind == PEAT_OP_KIND_GEMM || c.op_kind == PEAT_OP_KIND_CONV ||
                        c.op_kind == PEAT_OP_KIND_REDUCTION);
    // bf16 / f16 reductions accumulate in f32 on every current kernel library:
    // unless the context says otherwise, u is f32's, not the storage's (the
    // signature's u is the storage's when its config left it at the default).
    if (k_bound && c.unit_roundoff == 0 && p <= 10 && (s.unit_roundoff == 0 || s.unit_roundoff == u_store))
      u_op = unit_roundoff(Float::F32);
    n = s.value_mismatch_count;
    nb = s.bitwise_mismatch_count;
    nf = s.new_nonfinite_count;
  }

  // Pairs with a defined relative error r >= 2^e (e <= 0).
  uint64_t rel_at_least(int e) const {
    uint64_t total = 0;
    for (int b = std::max(2, rel_bucket(e)); b <= kLarge; ++b) total += s.rel_hist[b];
    return total;
  }
  // The bit when every bitwise mismatch differs in exactly that one bit, else -1.
  int single_bit() const {
    if (nb == 0 || s.xor_popcount_hist[1] != nb) return -1;
    for (int b = 0; b < width; ++b)
      if (s.xor_bit_hist[b] == nb) return b;
    return -1;
  }
  // Mismatching pairs at least `d` ULP apart (d a power of two), NaN pairs included.
  uint64_t ulp_at_least(uint64_t d) const {
    int first = 1;
    while ((uint64_t{1} << (first - 1)) < d) ++first;
    uint64_t t = 0;
    for (int b = first; b < PEAT_SIGNATURE_ULP_BUCKETS; ++b) t += s.ulp_hist[b];
    return std::min(t, n);
  }
  uint64_t popcount_at_most(int k) const {
    uint64_t t = 0;
    for (int i = 1; i <= k && i < PEAT_SIGNATURE_POPCOUNT_BUCKETS; ++i) t += s.xor_popcount_hist[i];
    return t;
  }
  // Effective mantissa bits of the mismatching pairs with a defined relative
  // error, at quantile q, ignoring the `skip_top` largest ones.
  double effective_bits(double q, uint64_t skip_top) const {
    uint64_t total = 0;
    for (int b = 1; b <= kLarge; ++b) total += s.rel_hist[b];
    if (total <= skip_top) return p;
    total -= skip_top;
    const double target = std::ceil(q * static_cast<double>(total));
    uint64_t cum = 0;
    for (int b = 1; b <= kLarge; ++b) {
      cum += s.rel_hist[b];
      if (static_cast<double>(cum) >= target) {
        if (b == 1) return p;
        if (b == kLarge) return 0;
        const int e = b - 66;  // lower edge 2^e
        return std::clamp(static_cast<double>(-e - 2), 0.0, static_cast<double>(p));
      }
    }
    return 0;
  }
  double relative_l2(double drop_sq = 0) const {
    const double e2 = std::max(0.0, sum_of(s.sum_sq_error) - drop_sq);
    const double g2 = sum_of(s.sum_sq_golden);
    if (e2 == 0) return 0;
    return g2 > 0 ? std::sqrt(e2 / g2) : INFINITY;
  }
  double cosine() const {
    const double g2 = sum_of(s.sum_sq_golden), c2 = sum_of(s.sum_sq_candidate);
    if (g2 == 0 && c2 == 0) return 1;
    if (g2 == 0 || c2 == 0) return 0;
    return sum_of(s.sum_golden_candidate) / std::sqrt(g2 * c2);
  }
  double rms_golden() const {
    return s.finite_count > 0 ? std::sqrt(std::max(0.0, sum_of(s.sum_sq_golden)) / static_cast<double>(s.finite_count)) : 0;
  }
  // The mantissa bits of the grid the candidate's mismatching values lie on:
  // p - (their lowest set bit), from candidate_low_bit_hist; -1 when that
  // histogram is empty (a signature from before it, or no non-zero candidate
  // among the mismatches). A candidate stored in a format with m <= p bits
  // gives at most m; one at the golden's precision gives p (or p - 1 in a
  // 2^-n chance over n mismatches).
  int grid_bits() const {
    for (int b = 0; b < width; ++b)
      if (s.candidate_low_bit_hist[b] > 0) return std::max(0, p - b);
    return -1;
  }
  // The top-bit histograms are present (a 0.2 signature with mismatches).
  bool has_top() const {
    uint64_t t = 0;
    for (uint64_t v : s.xor_top_bit_hist) t += v;
    return t > 0;
  }
  // Mismatching pairs at least 2^(bucket-1) ULP apart (ULP buckets >= bucket, NaN pairs included).
  uint64_t ulp_bucket_at_least(int bucket) const {
    uint64_t t = 0;
    for (int b = std::max(1, bucket); b < PEAT_SIGNATURE_ULP_BUCKETS; ++b) t += s.ulp_hist[b];
    return t;
  }
  // The ULP bucket holding the median of the mismatches once the `skip_top`
  // farthest ones are set aside: the rest lie below 2^bucket ULP (half of them).
  int median_ulp_bucket(uint64_t skip_top) const {
    uint64_t total = 0;
    for (int b = 1; b < PEAT_SIGNATURE_ULP_BUCKETS; ++b) total += s.ulp_hist[b];
    if (total <= skip_top) return 0;
    const uint64_t want = (total - skip_top + 1) / 2;
    uint64_t cum = 0;
    for (int b = 1; b < PEAT_SIGNATURE_ULP_BUCKETS; ++b) {
      cum += s.ulp_hist[b];
      if (cum >= want) return b;
    }
    return PEAT_SIGNATURE_ULP_BUCKETS - 1;
  }
  bool is_sign(int b) const { return b == width - 1; }
  bool is_exponent(int b) const { return b >= p && b < width - 1; }
  const char* field(int b) const { return is_sign(b) ? "sign" : is_exponent(b) ? "exponent" : "mantissa"; }
};

struct Spatial {
  bool present = false;
  int64_t rows = 0, cols = 0, rows_touched = 0, cols_touched = 0, tiles_touched = 0, tiles_total = 0;
  double touched_tile_area = 0;
  // Rows (columns) at least 3/4 mismatching, and whether the other rows and
  // columns fit inside them: each other row has at most band_cols mismatches
  // and each other column at most band_rows -- what a union of whole rows and
  // whole columns (an L or a cross: both trailing partial tiles dropped) shows.
  int64_t band_rows = 0, band_cols = 0;
  bool band_fit = false;
  uint64_t m = 0;
  int lane_period = -1, lane = -1;
  int64_t first = -1;
};

// The map summed up: rows, columns and tiles touched, the one lane mod 32 or 64.
Spatial read_map(const peat_spatial_map_t* map);

class Builder {
 public:
  explicit Builder(peat_detection_t& out) : out_(out) {}
  peat_verdict_t& add(peat_error_model_t model, double confidence, int64_t elements) {
    if (out_.verdict_count >= PEAT_DETECT_MAX_VERDICTS) return scratch_;
    peat_verdict_t& v = out_.verdicts[out_.verdict_count++];
    std::memset(&v, 0, sizeof v);
    v.model = model;
    v.confidence = std::clamp(confidence, 0.0, 1.0);
    v.bit = v.polarity = v.lane_period = v.lane = -1;
    v.nearest_format = -1;
    v.rows_affected = v.cols_affected = v.tiles_affected = -1;
    v.elements = elements;
    v.first_index = -1;
    return v;
  }
  bool has(peat_error_model_t model) const {
    for (int i = 0; i < out_.verdict_count; ++i)
      if (out_.verdicts[i].model == model) return true;
    return false;
  }
  int count() const { return out_.verdict_count; }

 private:
  peat_detection_t& out_;
  peat_verdict_t scratch_{};
};

template <typename... Args>
void evidence(peat_verdict_t& v, fmt::format_string<Args...> format, Args&&... args) {
  if (v.evidence_count >= PEAT_DETECT_EVIDENCE_LINES) return;
  std::string line = fmt::format(format, std::forward<Args>(args)...);
  char* dst = v.evidence[v.evidence_count++];
  const size_t n = std::min(line.size(), static_cast<size_t>(PEAT_DETECT_EVIDENCE_CHARS - 1));
  std::memcpy(dst, line.data(), n);
  dst[n] = '\0';
}

// The map's rows, columns and tiles affected and first index on a verdict.
void set_spatial(peat_verdict_t& v, const Spatial& sp);
// Two signatures with the same counts, histograms and sums (1e-12 relative).
bool same_numbers(const peat_signature_t& a, const peat_signature_t& b);
// The stored mantissa bits of a narrow format (0 for none).
int format_mantissa_bits(peat_float_format_t f);
// P(|up - down| >= d) for n fair coin flips (up + down = n).
double coin_tail(uint64_t n, uint64_t d);
// Nearest narrow format to `bits` effective mantissa bits.
peat_float_format_t nearest_format(double bits);

}  // namespace peat::impl::detector::rules
