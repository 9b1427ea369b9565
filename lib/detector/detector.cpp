// The Detector's rules. Each rule is a sufficient condition on the signature
// (and the spatial map when given); docs/error-models.md lists them with the
// source of every threshold. Rules run from the most specific model to the
// least, and the first primary model that holds is ranked first; secondary
// models that also hold (NONFINITE produced by a flip, the rounding noise a
// flip sits on) follow it.
#include "lib/detector/detector.hpp"
#include "lib/detector/features.hpp"

#include "lib/analyzer/sums.hpp"
#include "lib/core/dtype.hpp"
#include "lib/core/error.hpp"
#include "backends/common/float_bits.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace peat::impl::detector {

void validate_signature(const peat_signature_t& s, const char* name) {
  if (s.count == 0) fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: count is 0 (an empty signature names no error)", name);
  auto more = [&](uint64_t v, uint64_t limit, const char* field, const char* than) {
    if (v > limit)
      fail(PEAT_STATUS_INVALID_ARGUMENT, "{}.{} = {} is larger than {} = {} (inconsistent counts)", name, field, v,
           than, limit);
  };
  more(s.bitwise_mismatch_count, s.count, "bitwise_mismatch_count", "count");
  more(s.value_mismatch_count, s.bitwise_mismatch_count, "value_mismatch_count", "bitwise_mismatch_count");
  more(s.finite_count, s.count, "finite_count", "count");
  more(s.new_nonfinite_count, s.value_mismatch_count, "new_nonfinite_count", "value_mismatch_count");
  more(s.dropped_count, s.value_mismatch_count, "dropped_count", "value_mismatch_count");
  more(s.spurious_count, s.value_mismatch_count, "spurious_count", "value_mismatch_count");
  more(s.sign_flip_count, s.value_mismatch_count, "sign_flip_count", "value_mismatch_count");
  more(s.ratio_count, s.finite_count, "ratio_count", "finite_count");
  more(s.tolerance_fail_count, s.count, "tolerance_fail_count", "count");
  uint64_t ulp = 0, rel = 0, pop = 0;
  for (uint64_t v : s.ulp_hist) ulp += v;
  for (uint64_t v : s.rel_hist) rel += v;
  for (uint64_t v : s.xor_popcount_hist) pop += v;
  if (ulp != s.count) fail(PEAT_STATUS_INVALID_ARGUMENT, "{}.ulp_hist adds up to {}, not count = {}", name, ulp, s.count);
  if (rel != s.count) fail(PEAT_STATUS_INVALID_ARGUMENT, "{}.rel_hist adds up to {}, not count = {}", name, rel, s.count);
  if (pop != s.count)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "{}.xor_popcount_hist adds up to {}, not count = {}", name, pop, s.count);
  if (s.count - s.xor_popcount_hist[0] != s.bitwise_mismatch_count)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "{}.xor_popcount_hist[0] = {} does not match count - bitwise_mismatch_count = {}",
         name, s.xor_popcount_hist[0], s.count - s.bitwise_mismatch_count);
  for (int b = 0; b < PEAT_SIGNATURE_XOR_BITS; ++b) {
    more(s.xor_bit_hist[b], s.bitwise_mismatch_count, "xor_bit_hist[b]", "bitwise_mismatch_count");
    more(s.xor_top_bit_set_hist[b], s.xor_top_bit_hist[b], "xor_top_bit_set_hist[b]", "xor_top_bit_hist[b]");
  }
  // The top-bit histograms are absent (all zero: a 0.1 signature) or count every bitwise mismatch once.
  uint64_t top = 0;
  for (uint64_t v : s.xor_top_bit_hist) top += v;
  if (top != 0 && top != s.bitwise_mismatch_count)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "{}.xor_top_bit_hist adds up to {}, not bitwise_mismatch_count = {}", name, top,
         s.bitwise_mismatch_count);
}
namespace {

// Checks the context and the signatures it refers to (throws naming the field).
void validate_inputs(const peat_signature_t& s, const peat_detect_context_t& ctx) {
  if (ctx.op_kind < PEAT_OP_KIND_UNKNOWN || ctx.op_kind > PEAT_OP_KIND_ELEMENTWISE)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "context.op_kind = {} is not a peat_op_kind_code value (0..4)", ctx.op_kind);
  if (ctx.reduction_length < 0)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "context.reduction_length = {} must be >= 0", ctx.reduction_length);
  if (!(ctx.unit_roundoff >= 0) || !std::isfinite(ctx.unit_roundoff) || ctx.unit_roundoff >= 1)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "context.unit_roundoff = {} must be in [0, 1)", ctx.unit_roundoff);
  if (!(ctx.rounding_slack > 0) || !std::isfinite(ctx.rounding_slack))
    fail(PEAT_STATUS_INVALID_ARGUMENT, "context.rounding_slack = {} must be finite and > 0", ctx.rounding_slack);
  validate_signature(s, "signature");
  const bool needs_k = ctx.op_kind == PEAT_OP_KIND_GEMM || ctx.op_kind == PEAT_OP_KIND_CONV ||
                       ctx.op_kind == PEAT_OP_KIND_REDUCTION;
  if (needs_k && ctx.reduction_length == 0 && s.reduction_length == 0)
    fail(PEAT_STATUS_INVALID_ARGUMENT,
         "context.reduction_length: op kind {} needs K >= 1 (neither the context nor the signature gives it)",
         op_kind_name(ctx.op_kind));
  if (ctx.golden_dtype.bits != 0 && !(ctx.golden_dtype == s.golden_dtype))
    fail(PEAT_STATUS_INVALID_ARGUMENT, "context.golden_dtype {} differs from the signature's {}",
         dtype_name(ctx.golden_dtype), dtype_name(s.golden_dtype));
  require_float(s.golden_dtype, "signature.golden_dtype");
  if (ctx.map != nullptr && ctx.map->mismatch_count > s.count)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "context.map.mismatch_count = {} is larger than signature.count = {}",
         ctx.map->mismatch_count, s.count);
  for (const auto& [other, name] : {std::pair{ctx.rerun, "context.rerun"}, std::pair{ctx.reference, "context.reference"},
                                    std::pair{ctx.rerun_diff, "context.rerun_diff"}}) {
    if (other == nullptr) continue;
    validate_signature(*other, name);
    if (!(other->golden_dtype == s.golden_dtype) && other == ctx.rerun)
      fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: golden dtype {} differs from the signature's {}", name,
           dtype_name(other->golden_dtype), dtype_name(s.golden_dtype));
    if (other->count != s.count)
      fail(PEAT_STATUS_INVALID_ARGUMENT, "{}.count = {} differs from signature.count = {}", name, other->count, s.count);
  }
}

}  // namespace

namespace rules {

// The rules of docs/error-models.md, one member function each, in the order
// of the table. Each returns true when it added the primary verdict; the
// quantities several rules share are computed once in the constructor.
class Rules {
 public:
  Rules(const peat_signature_t& s, const peat_detect_context_t& ctx, peat_detection_t& out)
      : s_(s), ctx_(ctx), F(s, ctx), B(out), sp(read_map(ctx.map)), N(static_cast<double>(s.count)),
        n(static_cast<double>(F.n)) {}

  void run() {
    nondeterminism();
    if (exact()) return;
    derive();
    bool done = bitflip_single() || stuck_at() || scaling() || bitflip_multi_one_bit() || within_gamma() || region() ||
                nonfinite() || dropped_writes() || stuck_over_floor() || bitflip_multi_sparse() ||
                dropped_over_floor() || noise_floor();
    if (!done) garbage_or_unknown();
    if (F.nf > 0 && !B.has(PEAT_ERROR_MODEL_NONFINITE)) {
      auto& v = B.add(PEAT_ERROR_MODEL_NONFINITE, 0.9, static_cast<int64_t>(F.nf));
      evidence(v, "{} new NaN/Inf where the golden is finite", F.nf);
    }
  }

 private:
  const peat_signature_t& s_;
  const peat_detect_context_t& ctx_;
  Features F;
  Builder B;
  const Spatial sp;
  const double N, n;
  // Shared quantities (derive()).
  double rel_l2 = 0;
  int sb = -1;             // the one bit every bitwise mismatch differs in, or -1
  uint64_t far = 0;        // mismatches 4 ULP or more apart (NaN included)
  uint64_t rel_big = 0;    // r >= 1/4, or undefined
  double abs_allow = 0;    // absolute rounding allowance A of a reduction
  bool rounding_sized = false;
  uint64_t max_pair_ulps = 0;  // ULP distance of the largest-error pair
  int polarity = -1;       // of a single-bit pattern: every change in one direction
  bool gamma_ok = false;   // every pair within the deterministic bound gamma_bound
  double gamma_bound = 0;

  void derive() {
    const peat_signature_t& s = s_;
    rel_l2 = F.relative_l2();
    sb = F.single_bit();
    far = F.ulp_at_least(4);
    rel_big = F.rel_at_least(-2) + s.spurious_count + F.nf;
    // Reductions whose accumulation is wider than the storage (u < u_s): the outputs of
    // two summation orders differ in few elements, by one storage ULP, or by more on
    // outputs that cancel (tiny |g|). Every error within this absolute allowance is
    // rounding-sized.
    abs_allow = F.k_bound ? ctx_.rounding_slack * std::sqrt(2.0 * static_cast<double>(F.K)) * F.u_op * F.rms_golden() +
                                (F.u_op < F.u_store ? 2 * F.u_store * std::fabs(s.max_abs_error_golden) : 0)
                          : 0;
    rounding_sized = F.k_bound && F.u_op < F.u_store && F.nf == 0 && s.spurious_count == 0 &&
                     s.max_abs_error <= abs_allow;
    // Within the deterministic bound 2 gamma_K + 2 u_s (relative to |g|), and
    // the bound small enough that no sign, exponent or top mantissa flip (>= 1/4
    // relative) fits in it.
    if (F.k_bound && F.nf == 0 && s.spurious_count == 0 && s.dropped_count == 0 && s.lost_nonfinite_count == 0) {
      const double Ku = static_cast<double>(F.K) * F.u_op;
      if (Ku < 0.5) {
        gamma_bound = 2 * Ku / (1 - Ku) + 2 * F.u_store;
        gamma_ok = gamma_bound < 0.125 && s.max_rel_error <= gamma_bound;
      }
    }
    max_pair_ulps = [&] {
      if (s.max_abs_error_index < 0) return uint64_t{0};
      const uint64_t a = bits_of(s.max_abs_error_golden, F.f), b = bits_of(s.max_abs_error_candidate, F.f);
      const uint64_t sign = uint64_t{1} << (F.width - 1);
      const uint64_t ma = a & (sign - 1), mb = b & (sign - 1);
      if ((a & sign) == (b & sign)) return ma > mb ? ma - mb : mb - ma;
      return ma + mb;
    }();
    if (sb >= 0) {
      if (F.is_sign(sb)) {
        const double se = sum_of(s.sum_error), sa = sum_of(s.sum_abs_error);
        if (sa > 0 && std::fabs(std::fabs(se) - sa) <= 1e-9 * sa) polarity = se < 0 ? 1 : 0;
      } else if (s.ratio_count > 0) {
        if (s.ratio_min >= 1) polarity = 1;
        else if (s.ratio_max <= 1) polarity = 0;
      }
    }
  }

  // ---- 1 NONDETERMINISM: the second run on the same input differs ----------------
  void nondeterminism() {
    const peat_signature_t& s = s_;
    if (const peat_signature_t* d = ctx_.rerun_diff; d != nullptr) {  // the two runs compared elementwise
      if (d->bitwise_mismatch_count == 0) return;
      auto& v = B.add(PEAT_ERROR_MODEL_NONDETERMINISM, 1.0, static_cast<int64_t>(d->bitwise_mismatch_count));
      evidence(v, "two candidate runs on the same input differ in {} of {} elements (bitwise), max |run1 - run2| = {:.3g}",
               d->bitwise_mismatch_count, d->count, d->max_abs_error);
      return;
    }
    if (ctx_.rerun == nullptr || same_numbers(s, *ctx_.rerun)) return;
    auto& v = B.add(PEAT_ERROR_MODEL_NONDETERMINISM, 1.0,
                    static_cast<int64_t>(std::max(s.bitwise_mismatch_count, ctx_.rerun->bitwise_mismatch_count)));
    evidence(v, "two candidate runs on the same input give different signatures: bitwise mismatches {} vs {}, "
                "sum e^2 {:.6g} vs {:.6g}", s.bitwise_mismatch_count, ctx_.rerun->bitwise_mismatch_count,
             sum_of(s.sum_sq_error), sum_of(ctx_.rerun->sum_sq_error));
  }

  // ---- 2 EXACT ---------------------------------------------------------------------
  bool exact() {
    const peat_signature_t& s = s_;
    if (!(F.n == 0 && F.nf == 0 && s.lost_nonfinite_count == 0)) return false;
    auto& v = B.add(PEAT_ERROR_MODEL_EXACT, F.nb == 0 ? 1.0 : 0.9, 0);
    if (F.nb == 0)
      evidence(v, "bitwise_mismatch_count = 0 of {} pairs", s.count);
    else
      evidence(v, "value_mismatch_count = 0; {} pairs differ only in the sign of zero or a NaN payload", F.nb);
    return true;
  }

  // ---- 3 BITFLIP_SINGLE: one pair, one bit ---------------------------------------------
  bool bitflip_single() {
    const peat_signature_t& s = s_;
    if (F.nb == 1 && sb < 0) return flip_over_reduction_noise();
    if (!(sb >= 0 && F.nb == 1)) return false;
    const bool low = !F.is_exponent(sb) && !F.is_sign(sb) && sb < 2;
    if (low) {
      auto& r = B.add(PEAT_ERROR_MODEL_ROUNDING, 0.6, 1);
      evidence(r, "one pair differs in mantissa bit {} only: a change of at most 2 ULP, within rounding", sb);
    } else if (rounding_sized) {
      auto& r = B.add(PEAT_ERROR_MODEL_ROUNDING, 0.6, 1);
      evidence(r, "|e| = {:.3g} <= {} sqrt(2K) u RMS(g) + 2 u_s |g| = {:.3g} (K = {}): rounding-sized", s.max_abs_error,
               ctx_.rounding_slack, abs_allow, F.K);
    } else if (gamma_ok) {
      auto& r = B.add(PEAT_ERROR_MODEL_ROUNDING, 0.6, 1);
      evidence(r, "relative error {:.3g} <= 2 gamma_K + 2 u_s = {:.3g} (K = {}): within the deterministic bound",
               s.max_rel_error, gamma_bound, F.K);
    }
    auto& v = B.add(PEAT_ERROR_MODEL_BITFLIP_SINGLE, low || rounding_sized || gamma_ok ? 0.5 : 1.0, 1);
    v.bit = sb;
    v.first_index = s.max_abs_error_index >= 0 ? s.max_abs_error_index : sp.first;
    if (s.max_abs_error_index >= 0 && s.max_abs_error > 0) {
      const uint64_t gb = bits_of(s.max_abs_error_golden, F.f), cb = bits_of(s.max_abs_error_candidate, F.f);
      if (((gb ^ cb) >> sb) & 1u) v.polarity = static_cast<int>((cb >> sb) & 1u);
    } else if (F.nf == 1 && F.is_exponent(sb)) {
      v.polarity = 1;  // a flip that made a value non-finite set an exponent bit
    }
    evidence(v, "exactly 1 of {} pairs differs, in exactly 1 bit: bit {} ({} field)", s.count, sb, F.field(sb));
    evidence(v, "|e| = {:.6g}, relative error {:.3g}", s.max_abs_error, s.max_rel_error);
    set_spatial(v, sp);
    return true;
  }

  // ---- 3b BITFLIP_SINGLE: the one differing pair of a reduction, one bit above its noise ----
  // A reduction's rounding moves a value by at most K u / u_s + 2 ULP (gamma_K
  // relative to |g|, and each side's rounding to storage): bits up to
  // ceil(log2 of that) are noise (a carry adds one). One bit above them, at
  // least the top mantissa bit, is a flip.
  bool flip_over_reduction_noise() {
    const peat_signature_t& s = s_;
    if (!F.k_bound || s.max_abs_error_index < 0 || F.nf > 0 || gamma_ok) return false;
    // K u / u_s ULP from the accumulation, plus one storage rounding of each side.
    const double lim = static_cast<double>(F.K) * F.u_op / F.u_store + 2;
    const int band = static_cast<int>(std::ceil(std::log2(lim))) + 1;
    const uint64_t x = bits_of(s.max_abs_error_golden, F.f) ^ bits_of(s.max_abs_error_candidate, F.f);
    if (band >= F.width || band > F.p - 1 || (x >> band) == 0 || __builtin_popcountll(x >> band) != 1) return false;
    const int bit = 63 - __builtin_clzll(x);
    if (bit < F.p - 1) return false;
    auto& v = B.add(PEAT_ERROR_MODEL_BITFLIP_SINGLE, 0.8, 1);
    v.bit = bit;
    v.polarity = static_cast<int>((bits_of(s.max_abs_error_candidate, F.f) >> bit) & 1u);
    v.first_index = s.max_abs_error_index;
    evidence(v, "the 1 differing pair (index {}) differs in bit {} ({} field) and otherwise only below bit {}",
             s.max_abs_error_index, bit, F.field(bit), band);
    evidence(v, "rounding of K = {} terms moves a value by <= K u / u_s + 2 = {:.3g} ULP: bits below {} (g = {:.6g}, c = {:.6g})",
             F.K, lim, band, s.max_abs_error_golden, s.max_abs_error_candidate);
    set_spatial(v, sp);
    return true;
  }

  // ---- 4 STUCK_AT: one bit, several pairs, one direction --------------------------------
  bool stuck_at() {
    const peat_signature_t& s = s_;
    if (!(sb >= 0 && polarity >= 0)) return false;
    // Mantissa bits 0 and 1 change a value by at most 3 ULP, as rounding does: one
    // direction only counts when a fair coin would rarely give it (<= 1e-3).
    const bool low = sb < 2 && !F.is_exponent(sb) && !F.is_sign(sb);
    if (low && coin_tail(F.nb, F.nb) > 1e-3) return false;
    auto& v = B.add(PEAT_ERROR_MODEL_STUCK_AT, 0.95, static_cast<int64_t>(F.nb));
    v.bit = sb;
    v.polarity = polarity;
    v.lane_period = sp.lane_period;
    v.lane = sp.lane;
    evidence(v, "all {} mismatching pairs differ in exactly bit {} ({} field), every change towards {}", F.nb, sb,
             F.field(sb), polarity);
    if (F.is_sign(sb))
      evidence(v, "all errors have one sign: |sum e| = sum |e| = {:.6g}", sum_of(s.sum_abs_error));
    else
      evidence(v, "c/g range [{:.6g}, {:.6g}] on one side of 1", s.ratio_min, s.ratio_max);
    if (sp.lane_period > 0)
      evidence(v, "every mismatch in lane {} of {} (element index mod {})", sp.lane, sp.lane_period, sp.lane_period);
    set_spatial(v, sp);
    return true;
  }

  // ---- 5 SCALING: c/g constant over the well-conditioned pairs -----------------------
  bool scaling() {
    const peat_signature_t& s = s_;
    // The ratio pairs cover half of the finite pairs, or (sparse outputs: a ReLU's
    // zeros) every pair outside them can be equal (c = g = 0 scales to itself).
    const bool covered = static_cast<double>(s.ratio_count) >= 0.5 * static_cast<double>(s.finite_count) ||
                         (F.n <= s.ratio_count && s.spurious_count == 0 &&
                          s.count - F.n >= s.finite_count - s.ratio_count);
    if (!(s.ratio_count >= 4 && covered && n >= 0.5 * static_cast<double>(s.ratio_count))) return false;
    const peat_signature_sums_t ratio = analyzer::sums_of(s);
    const double mean = ratio.ratio_mean;
    const double sd = std::sqrt(std::max(0.0, ratio.ratio_m2 / static_cast<double>(s.ratio_count)));
    const double rel_sd = mean != 0 ? sd / std::fabs(mean) : INFINITY;
    // c = fl(alpha g) keeps every c/g within alpha (1 +- u_s): the range too, not
    // only the spread (the moments alone can overflow or hide one outlier).
    // (The range bounds the spread exactly; the moments, read from rounded
    // squares, can lose that precision in f64.)
    const double range = s.ratio_max - s.ratio_min;
    if (!(std::fabs(mean - 1) >= 16 * F.u_store && std::isfinite(mean) && range <= 8 * F.u_store * std::fabs(mean)))
      return false;
    auto& v = B.add(PEAT_ERROR_MODEL_SCALING, 1.0 - 0.5 * std::min(1.0, range / (8 * F.u_store * std::fabs(mean))),
                    static_cast<int64_t>(F.n));
    v.alpha = mean;
    evidence(v, "c/g over {} well-conditioned pairs: mean {:.6g}, range {:.3g} <= 8u |mean| = {:.3g} (relative sd {:.3g})",
             s.ratio_count, mean, range, 8 * F.u_store * std::fabs(mean), rel_sd);
    evidence(v, "|mean - 1| = {:.3g} >= 16u = {:.3g}; range [{:.6g}, {:.6g}]", std::fabs(mean - 1),
             16 * F.u_store, s.ratio_min, s.ratio_max);
    if (static_cast<double>(s.ratio_count) < 0.5 * static_cast<double>(s.finite_count))
      evidence(v, "sparse: {} of {} finite pairs outside the ratios, {} pairs bitwise equal", s.finite_count - s.ratio_count,
               s.finite_count, s.count - F.nb);
    set_spatial(v, sp);
    return true;
  }

  // ---- 6 BITFLIP_MULTI: one bit, several pairs, both directions -------------------------
  // (Mantissa bits 0 and 1 flipping both ways are 1-3 ULP changes: rounding, below.)
  bool bitflip_multi_one_bit() {
    if (!(sb >= 0 && !(sb < 2 && !F.is_sign(sb) && !F.is_exponent(sb)))) return false;
    auto& v = B.add(PEAT_ERROR_MODEL_BITFLIP_MULTI, 0.9, static_cast<int64_t>(F.nb));
    v.bit = sb;
    evidence(v, "{} pairs differ, each in exactly bit {} ({} field), flips in both directions", F.nb, sb, F.field(sb));
    set_spatial(v, sp);
    return true;
  }

  // ---- 7 REGION: large errors filling a block of rows, columns or tiles -----------------
  bool region() {
    const peat_signature_t& s = s_;
    // Most of the map's mismatches are far (>= 4 ULP): a noise floor elsewhere
    // (pairs the map does not count) does not hide the region.
    const double m_far = static_cast<double>(std::min<uint64_t>(sp.m, F.n));
    if (!(sp.present && sp.m >= 4 && static_cast<double>(sp.m) <= 0.6 * N && static_cast<double>(far) >= 0.5 * m_far))
      return false;
    const double m = static_cast<double>(sp.m);
    const double row_density = sp.rows_touched > 0 ? m / (static_cast<double>(sp.rows_touched) * sp.cols) : 0;
    const double col_density = sp.cols_touched > 0 ? m / (static_cast<double>(sp.cols_touched) * sp.rows) : 0;
    const double tile_density = sp.touched_tile_area > 0 ? m / sp.touched_tile_area : 0;
    const char* shape = nullptr;
    double density = 0;
    if (sp.cols >= 4 && sp.rows_touched < sp.rows && row_density >= 0.75) {
      shape = "rows"; density = row_density;
    } else if (sp.rows >= 4 && sp.cols_touched < sp.cols && col_density >= 0.75) {
      shape = "columns"; density = col_density;
    } else if (sp.tiles_total >= 2 && sp.tiles_touched < sp.tiles_total && tile_density >= 0.75) {
      shape = "tiles"; density = tile_density;
    }
    if (shape == nullptr) return false;
    auto& v = B.add(PEAT_ERROR_MODEL_REGION, std::min(1.0, density), static_cast<int64_t>(sp.m));
    set_spatial(v, sp);
    v.lane_period = sp.lane_period;
    v.lane = sp.lane;
    evidence(v, "{} map mismatches confined to {} of {} rows, {} of {} columns, {} of {} tiles", sp.m,
             sp.rows_touched, sp.rows, sp.cols_touched, sp.cols, sp.tiles_touched, sp.tiles_total);
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
  bool nonfinite() {
    const peat_signature_t& s = s_;
    if (!(F.nf > 0 && static_cast<double>(F.nf) >= 0.5 * n)) return false;
    auto& v = B.add(PEAT_ERROR_MODEL_NONFINITE, static_cast<double>(F.nf) / n, static_cast<int64_t>(F.nf));
    evidence(v, "{} of {} mismatches are new NaN/Inf (candidate NaN {}, Inf {}; golden finite)", F.nf, F.n,
             s.candidate_nan_count, s.candidate_inf_count);
    set_spatial(v, sp);
    return true;
  }

  // ---- 9 DROPPED_WRITES --------------------------------------------------------------------
  bool dropped_writes() {
    const peat_signature_t& s = s_;
    if (!(static_cast<double>(s.dropped_count) >= 0.9 * n)) return false;
    auto& v = B.add(PEAT_ERROR_MODEL_DROPPED_WRITES, static_cast<double>(s.dropped_count) / n,
                    static_cast<int64_t>(s.dropped_count));
    evidence(v, "{} of {} mismatches are c = 0 where g != 0 (>= 90 %)", s.dropped_count, F.n);
    set_spatial(v, sp);
    return true;
  }

  // ---- 10 BITFLIP_MULTI: a few pairs, each off in at most 4 bits, mostly far apart -------------
  bool bitflip_multi_sparse() {
    const peat_signature_t& s = s_;
    // "Far" for a reduction: beyond what its rounding may move a value, K u / u_s
    // ULP (gamma_K relative to |g|, one ULP being >= u_s |g|), at least 4 ULP.
    uint64_t far = this->far;
    if (F.k_bound) {
      uint64_t d = 4;
      const double lim = static_cast<double>(F.K) * F.u_op / F.u_store;
      while (static_cast<double>(d) < lim && d < (uint64_t{1} << 62)) d <<= 1;
      far = F.ulp_at_least(d);
    }
    if (!(!rounding_sized && F.popcount_at_most(4) == F.nb &&
          ((far >= 2 && static_cast<double>(far) >= 0.5 * n) || (F.n == 1 && far == 1)) &&
          n <= std::max(16.0, 0.01 * N)))
      return false;
    auto& v = B.add(PEAT_ERROR_MODEL_BITFLIP_MULTI, 0.9, static_cast<int64_t>(F.nb));
    v.first_index = sp.present ? sp.first : s.max_abs_error_index;
    evidence(v, "{} of {} pairs differ, each in at most 4 bits ({} in 1, {} in 2)", F.nb, s.count,
             s.xor_popcount_hist[1], s.xor_popcount_hist[2]);
    evidence(v, "{} of them beyond rounding ({} ULP or more apart, >= 50 %)", far,
             F.k_bound ? std::max<uint64_t>(4, uint64_t{1} << static_cast<int>(std::ceil(std::log2(std::max(
                             4.0, static_cast<double>(F.K) * F.u_op / F.u_store)))))
                       : uint64_t{4});
    set_spatial(v, sp);
    return true;
  }

  // The narrow format nearest to `eff` effective mantissa bits (none when more
  // than 2 bits away). 10 bits is tf32 or fp16: fp16 when the golden values
  // fit fp16's range (max |g| <= 65504), tf32 otherwise.
  peat_float_format_t format_near(double eff) const {
    peat_float_format_t f = nearest_format(eff);
    if (f == PEAT_FORMAT_TF32 && s_.max_abs_golden <= 65504.0) f = PEAT_FORMAT_FP16;
    if (std::fabs(eff - format_mantissa_bits(f)) > 2) f = -1;
    return f;
  }

  // ---- 0 ROUNDING within the deterministic bound of a reduction ---------------------------
  // Every pair within 2 gamma_K (+ 2 u_s for the two roundings to storage) of
  // the golden, relative to |g|: both outputs lie within Higham's bound of the
  // exact sum (when |g| stands for sum |a_i b_i|, i.e. the sum does not
  // cancel). Runs before the flip rules: a long dot product tens of ULP off is
  // rounding, however few outputs it has.
  bool within_gamma() {
    const peat_signature_t& s = s_;
    if (!gamma_ok) return false;
    const double bound = gamma_bound;
    auto& v = B.add(PEAT_ERROR_MODEL_ROUNDING, 0.9, static_cast<int64_t>(F.n));
    v.effective_mantissa_bits = F.k_bound && rel_l2 > 0 ? std::clamp(-std::log2(rel_l2) - 1.8, 0.0, static_cast<double>(F.p))
                                                        : static_cast<double>(F.p);
    evidence(v, "max relative error {:.3g} <= 2 gamma_K + 2 u_s = {:.3g} (K = {}, u = {:.3g}): within the "
                "deterministic bound", s.max_rel_error, bound, F.K, F.u_op);
    evidence(v, "{} pairs differ, relative L2 {:.3g}, the largest {} ULP apart", F.n, rel_l2, max_pair_ulps);
    return true;
  }

  // The floor beneath an anomaly that accounts for the `skip` largest errors:
  // judged on the relative-error and ULP histograms of the other mismatches
  // (their sums are not separable from the anomaly's): ROUNDING when their
  // median relative error is within the op's probabilistic bound (reductions)
  // or half of them within 3 ULP (other ops); REDUCED_PRECISION when their
  // effective bits are below the golden's; none otherwise.
  struct Floor {
    peat_error_model_t model = PEAT_ERROR_MODEL_UNKNOWN;  // UNKNOWN: no floor
    double eff = 0;
    uint64_t rest = 0;
    std::string why;
  };
  Floor floor_of(uint64_t skip) const {
    const peat_signature_t& s = s_;
    Floor fl;
    if (F.n <= skip) return fl;
    fl.rest = F.n - skip;
    // Median relative error of the rest: below 2^-(eff + 1).
    fl.eff = F.effective_bits(0.5, skip + F.nf + s.spurious_count);
    const double median_rel = std::ldexp(1.0, -static_cast<int>(std::lround(fl.eff)) - 1);
    const int q = F.median_ulp_bucket(skip);  // half of the rest lie below 2^q ULP
    if (F.k_bound) {
      const double bound = ctx_.rounding_slack * std::sqrt(2.0 * static_cast<double>(F.K)) * F.u_op +
                           (F.u_op < F.u_store ? 2 * F.u_store : 0);
      if (median_rel <= bound) {
        fl.model = PEAT_ERROR_MODEL_ROUNDING;
        fl.why = fmt::format("the other {} mismatches: median relative error < {:.3g} <= {} sqrt(2K) u{} = {:.3g} (K = {})",
                             fl.rest, median_rel, ctx_.rounding_slack, F.u_op < F.u_store ? " + 2 u_storage" : "", bound, F.K);
        return fl;
      }
    } else if (q <= 2) {
      fl.model = PEAT_ERROR_MODEL_ROUNDING;
      fl.why = fmt::format("the other {} mismatches: half of them within {} ULP", fl.rest, (1 << q) - 1);
      return fl;
    }
    if (fl.eff >= 1 && fl.eff <= F.p - (F.k_bound ? 1 : 3)) {
      fl.model = PEAT_ERROR_MODEL_REDUCED_PRECISION;
      fl.why = fmt::format("the other {} mismatches: median relative error < {:.3g}, effective mantissa bits {:.0f} <= {}",
                           fl.rest, median_rel, fl.eff, F.p - (F.k_bound ? 1 : 3));
    }
    return fl;
  }
  bool floor_beneath(uint64_t skip, const char* anomaly) { return add_floor(floor_of(skip), anomaly); }
  bool add_floor(const Floor& fl, const char* anomaly) {
    if (fl.model == PEAT_ERROR_MODEL_UNKNOWN) return false;
    auto& v = B.add(fl.model, fl.model == PEAT_ERROR_MODEL_ROUNDING ? 0.8 : 0.75, static_cast<int64_t>(fl.rest));
    v.effective_mantissa_bits = fl.eff;
    if (fl.model == PEAT_ERROR_MODEL_REDUCED_PRECISION) v.nearest_format = format_near(fl.eff);
    evidence(v, "{}", fl.why);
    evidence(v, "a floor beneath {}: effective mantissa bits {:.0f} (median of the rest){}{}", anomaly, fl.eff,
             fl.model == PEAT_ERROR_MODEL_REDUCED_PRECISION ? ", nearest format " : "",
             fl.model == PEAT_ERROR_MODEL_REDUCED_PRECISION ? format_name(v.nearest_format) : "");
    return true;
  }

  // ---- 10b STUCK_AT over a noise floor ---------------------------------------------------------
  // A bit b whose pairs (those with b the highest differing bit) change one
  // way, stand above the floor, and are no carry tail:
  //  (a) one direction: T_b >= 8 pairs have b as their highest differing bit,
  //      S_b of them with b set in c (less the c = 0 and new NaN/Inf pairs),
  //      and a fair coin gives |up - down| that large with probability <= 1e-3
  //      -- noise moves values up and down alike;
  //  (b) alone: T_b >= 4 (X_b-1 - T_b-1), X the pairs differing in a bit: at
  //      most a quarter of the top-b pairs also differ in bit b-1 -- a stuck bit
  //      changes b and leaves the bits below it to the noise, a scale or a
  //      carry across a power of two changes the top bits below b too;
  //  (c) far: at least |2 S_b - T_b| pairs lie >= 2^(b-1) ULP apart (flipping
  //      a non-sign bit b moves a value by 2^b ULP), while half of the other
  //      mismatches lie below 2^(b-3) ULP;
  //  (d) the other mismatches form a floor (floor_of: ROUNDING or
  //      REDUCED_PRECISION), which is ranked after the stuck bit.
  bool stuck_over_floor() {
    const peat_signature_t& s = s_;
    if (!F.has_top()) return false;
    int best = -1;
    double best_d = 0;
    // Not the sign bit: noise flips the sign of values near zero, in a direction
    // set by the signs of those values (not a fair coin), and every such flip is
    // "far" on the ordered line; the exact-pattern rule 4 still names a stuck sign.
    for (int b = 2; b < F.width - 1; ++b) {
      const double T = static_cast<double>(s.xor_top_bit_hist[b]), S = static_cast<double>(s.xor_top_bit_set_hist[b]);
      // Pairs that clear every bit (c = 0: flushes, dropped writes) or set the
      // exponent (new NaN/Inf) are set aside: they are not a stuck bit.
      const double up = S - std::min(S, static_cast<double>(F.nf));
      const double down = (T - S) - std::min(T - S, static_cast<double>(s.dropped_count));
      const double D = std::fabs(up - down);
      if (T < 8 || coin_tail(static_cast<uint64_t>(up + down), static_cast<uint64_t>(D)) > 1e-3) continue;
      // Pairs above bit b-1 that differ in it: an upper bound on the top-b pairs touching b-1.
      const double touching = static_cast<double>(s.xor_bit_hist[b - 1] - s.xor_top_bit_hist[b - 1]);
      if (T < 4 * touching) continue;
      const int far_bucket = b;
      if (static_cast<double>(F.ulp_bucket_at_least(far_bucket)) < D) continue;
      if (F.median_ulp_bucket(s.xor_top_bit_hist[b]) > far_bucket - 3) continue;
      if (D > best_d) { best = b; best_d = D; }
    }
    if (best < 0) return false;
    const uint64_t T = s.xor_top_bit_hist[best], S = s.xor_top_bit_set_hist[best];
    const Floor fl = floor_of(T);
    if (fl.model == PEAT_ERROR_MODEL_UNKNOWN) return false;
    const int pol = 2 * S > T ? 1 : 0;
    auto& v = B.add(PEAT_ERROR_MODEL_STUCK_AT, 0.85, static_cast<int64_t>(T));
    v.bit = best;
    v.polarity = pol;
    evidence(v, "{} pairs have bit {} ({} field) as their highest differing bit, {} of them changed towards {}: "
                "|up - down| = {:.0f}, a fair coin's chance {:.2g} <= 1e-3", T, best, F.field(best), pol ? S : T - S, pol,
             best_d, coin_tail(T, static_cast<uint64_t>(best_d)));
    evidence(v, "alone: {} >= 4 x {} pairs above bit {} differing in it; {} pairs >= 2^{} ULP apart", T,
             s.xor_bit_hist[best - 1] - s.xor_top_bit_hist[best - 1], best - 1,
             F.ulp_bucket_at_least(best), best - 1);
    evidence(v, "half of the other mismatches lie below 2^{} ULP", F.median_ulp_bucket(T));
    add_floor(fl, "the stuck bit");
    return true;
  }

  // The mantissa bits of the widest narrow format below the golden's, + 2:
  // tf32/fp16 (10) for f32/f64, bf16 (7) for f16, fp8 e4m3 (3) for bf16.
  int narrow_limit() const { return (F.p > 10 ? 10 : F.p > 7 ? 7 : 3) + 2; }

  // Effective bits of an elementwise candidate: the 0.95 quantile of its
  // relative errors, unless the norm's estimate (-log2(relative L2) - 1.8) is
  // more than 2 bits higher: then the large relative errors sit on tiny values
  // (a format's subnormal range, where it keeps fewer bits) which the norm
  // weighs by their size, and the norm's estimate is the format's precision.
  double elementwise_bits(double eff_q, double l2) const {
    if (!(l2 > 0)) return eff_q;
    const double eff_l2 = std::clamp(-std::log2(l2) - 1.8, 0.0, static_cast<double>(F.p));
    return eff_l2 > eff_q + 2 ? eff_l2 : eff_q;
  }

  // ---- 10c DROPPED_WRITES over a rounding floor ---------------------------------------------
  // Rounding does not turn a non-zero value into zero (short of the underflow
  // threshold); a reduced-precision floor may (flush to zero), so only a
  // ROUNDING floor beneath the zeros is accepted.
  bool dropped_over_floor() {
    const peat_signature_t& s = s_;
    if (s.dropped_count == 0 || F.nf > 0) return false;
    const Floor fl = floor_of(s.dropped_count);
    if (fl.model != PEAT_ERROR_MODEL_ROUNDING) return false;
    auto& v = B.add(PEAT_ERROR_MODEL_DROPPED_WRITES, 0.85, static_cast<int64_t>(s.dropped_count));
    evidence(v, "{} pairs are c = 0 where g != 0, above a rounding floor (which never writes 0 for a non-zero value)",
             s.dropped_count);
    set_spatial(v, sp);
    add_floor(fl, "the zeros");
    return true;
  }

  // ---- 11/12 a noise floor (ROUNDING / REDUCED_PRECISION), possibly with outliers above it --------
  bool noise_floor() {
    const peat_signature_t& s = s_;
    const peat_detect_context_t& ctx = ctx_;
    // The largest error is an outlier when it stands 32x above the root mean
    // square of the other mismatches (noise has no such gap).
    const double max2 = s.max_abs_error * s.max_abs_error;
    // The gap an outlier needs: 32, well above the extreme value of n Gaussian
    // errors (max / RMS <= sqrt(2 ln n) <= 5.6 for n <= 4M), for the heavy tails
    // of ill-conditioned ops (a norm over few values, sums that cancel).
    const double gap = 32;
    const double rest_rms = F.n >= 2 ? std::sqrt(std::max(0.0, sum_of(s.sum_sq_error) - max2) / (n - 1)) : 0;
    // It must stand out in relative terms too: in a signature merged over
    // records of different magnitudes, the largest absolute error can be a
    // large value rounded like all the others (its c/g deviation no larger
    // than theirs). Compared with the RMS of the other c/g deviations when the
    // ratio statistics cover the pairs; a pair outside them (|g| small) keeps
    // the absolute test alone.
    const bool rel_outlier = [&] {
      if (s.ratio_count < 2 || s.max_abs_error_golden == 0 || !std::isfinite(s.max_abs_error_golden) ||
          !std::isfinite(s.max_abs_error_candidate))
        return true;
      const double d_out = s.max_abs_error_candidate / s.max_abs_error_golden - 1;
      const double rest_d2 = std::max(0.0, sum_of(s.ratio_dev_sq_sum) - d_out * d_out);
      const double rest_rel_rms = std::sqrt(rest_d2 / static_cast<double>(s.ratio_count - 1));
      if (std::fabs(d_out) >= gap * rest_rel_rms) return true;
      // The RMS of c/g deviations is heavy-tailed where outputs cancel; a change of
      // >= 1/4 (a sign, exponent or top-mantissa flip) that is also 32x the median
      // relative error of the others is no value rounded like them.
      const double median_rel = std::ldexp(1.0, -static_cast<int>(std::lround(F.effective_bits(0.5, 1))) - 1);
      return std::fabs(d_out) >= 0.25 && std::fabs(d_out) >= gap * median_rel;
    }();
    // Effective mantissa bits: for a reduction (heavy-tailed relative errors where
    // it cancels) from the relative L2 error, whose value for rounding to m bits
    // is about 2^-(m+1)/sqrt(3); otherwise the 0.95 quantile of the relative errors.
    auto eff_of = [&](bool out, double l2) {
      return F.k_bound ? (l2 > 0 ? std::clamp(-std::log2(l2) - 1.8, 0.0, static_cast<double>(F.p))
                                 : static_cast<double>(F.p))
                       : elementwise_bits(F.effective_bits(0.95, (out ? 1 : 0) + s.dropped_count), l2);
    };
    // The outlier's bits above the noise band (max(p - 4, ceil(p - eff) + 2)):
    // one that differs in none of them is a large noise value, not a flip.
    auto high_bits = [&](double e) {
      const int band = std::clamp(static_cast<int>(std::ceil(F.p - e)) + 2, F.p - 4, F.p);
      const uint64_t x = bits_of(s.max_abs_error_golden, F.f) ^ bits_of(s.max_abs_error_candidate, F.f);
      return __builtin_popcountll(band >= 64 ? 0 : (x >> band));
    };
    bool outlier = F.n >= 2 && s.max_abs_error > 0 && s.max_abs_error >= gap * rest_rms && rel_outlier &&
                   max_pair_ulps >= 4 && !(F.k_bound && s.max_abs_error <= abs_allow);
    if (outlier && high_bits(eff_of(true, F.relative_l2(max2))) == 0) outlier = false;
    const uint64_t skip = (outlier ? 1 : 0) + F.nf + s.spurious_count + s.dropped_count;
    const double bulk_l2 = F.relative_l2(outlier ? max2 : 0);
    const double eff = eff_of(outlier, bulk_l2);
    const uint64_t bulk = F.n > skip ? F.n - skip : 0;
    const uint64_t near = F.n - std::min(F.n, far);  // within 3 ULP
    bool rounding = false;
    std::string why;
    if (ctx.reference != nullptr) {
      double ref_l2 = 0;
      const double rg2 = sum_of(ctx.reference->sum_sq_golden);
      if (rg2 > 0) ref_l2 = std::sqrt(sum_of(ctx.reference->sum_sq_error) / rg2);
      if (bulk_l2 <= ctx.rounding_slack * ref_l2) {
        rounding = true;
        why = fmt::format("relative L2 {:.3g} <= {} x the golden's own error against float64 ({:.3g})", bulk_l2,
                          ctx.rounding_slack, ref_l2);
      }
    }
    if (!rounding && F.k_bound) {
      const double bound = ctx.rounding_slack * std::sqrt(2.0 * static_cast<double>(F.K)) * F.u_op +
                           (F.u_op < F.u_store ? 2 * F.u_store : 0);
      if (bulk_l2 <= bound) {
        rounding = true;
        why = fmt::format("relative L2 {:.3g} <= {} sqrt(2K) u{} = {:.3g} (K = {}, u = {:.3g})", bulk_l2,
                          ctx.rounding_slack, F.u_op < F.u_store ? " + 2 u_storage" : "", bound, F.K, F.u_op);
      }
    }
    // Ops without a reduction bound: both outputs within one rounding of f(x)
    // each, so normwise ||c - g|| <= 2 u ||f|| -- judged on the norm, not per
    // element, since small outputs (cancellation, values near a root) have large
    // relative errors without any loss of accuracy.
    if (!rounding && !F.k_bound && F.nf == 0) {
      const double bound = 2 * std::max(F.u_op, F.u_store);
      if (bulk_l2 <= bound) {
        rounding = true;
        why = fmt::format("normwise: relative L2 {:.3g} <= 2u = {:.3g} (u = {:.3g}): each side within one rounding",
                          bulk_l2, bound, std::max(F.u_op, F.u_store));
      }
    }
    if (!rounding && rounding_sized) {
      rounding = true;
      why = fmt::format("max |e| = {:.3g} <= {} sqrt(2K) u RMS(g) + 2 u_s |g| = {:.3g} (K = {}, u = {:.3g})",
                        s.max_abs_error, ctx.rounding_slack, abs_allow, F.K, F.u_op);
    }
    // Beyond the bound but with more effective bits than any narrower format
    // keeps (the widest below the golden, + 2): the golden's own arithmetic,
    // amplified by the op's conditioning (x - mean in a norm over few values,
    // sums that cancel), which sqrt(2K) u relative to ||g|| does not include.
    if (!rounding && F.k_bound && F.nf == 0 && bulk_l2 > 0 && eff > narrow_limit()) {
      rounding = true;
      why = fmt::format("effective mantissa bits {:.1f} > {} (the widest format narrower than {}, + 2): the op's own "
                        "rounding, ill-conditioned (relative L2 {:.3g})", eff, narrow_limit(), float_name(F.f), bulk_l2);
    }
    if (!rounding && static_cast<double>(near) + static_cast<double>(outlier ? 1 : 0) >= 0.99 * n) {
      rounding = true;
      why = fmt::format("{} of {} mismatches within 3 ULP (>= 99 %): a few ULP of {}", near, F.n, float_name(F.f));
    }
    // Beyond the rounding allowance and still noise-like: for a reduction any
    // effective precision below the golden's; otherwise at least 3 bits lost.
    const bool reduced = !rounding && bulk > 0 && eff >= 1 && eff <= F.p - (F.k_bound ? 1 : 3) &&
                         static_cast<double>(rel_big) < 0.5 * n;
    const bool floor = rounding || reduced;
    if (floor && outlier) {
      // The outlier's bits above the noise band tell one flip from several.
      // (Flips this far above the noise sit in the top mantissa bits or higher; the
      // band starts no lower than 4 bits below the top of the mantissa.)
      const int band = std::clamp(static_cast<int>(std::ceil(F.p - eff)) + 2, F.p - 4, F.p);
      const uint64_t x = bits_of(s.max_abs_error_golden, F.f) ^ bits_of(s.max_abs_error_candidate, F.f);
      const int high = __builtin_popcountll(band >= 64 ? 0 : (x >> band));
      auto& v = B.add(high <= 1 ? PEAT_ERROR_MODEL_BITFLIP_SINGLE : PEAT_ERROR_MODEL_BITFLIP_MULTI, 0.85, 1);
      if (x != 0) {
        v.bit = 63 - __builtin_clzll(x);
        if (high <= 1) v.polarity = static_cast<int>((bits_of(s.max_abs_error_candidate, F.f) >> v.bit) & 1u);
      }
      v.first_index = s.max_abs_error_index;
      evidence(v, "largest error |e| = {:.6g} at index {} is {:.0f}x the RMS {:.3g} of the other mismatches (>= {:.0f})",
               s.max_abs_error, s.max_abs_error_index, rest_rms > 0 ? s.max_abs_error / rest_rms : INFINITY, rest_rms, gap);
      evidence(v, "g = {:.6g}, c = {:.6g}: {} differing bit(s) at or above bit {} (the noise reaches about bit {})",
               s.max_abs_error_golden, s.max_abs_error_candidate, high, band, band - 2);
      set_spatial(v, sp);
      v.first_index = s.max_abs_error_index;  // the outlier, not the map's first mismatch
    }
    // A new NaN/Inf above a floor, each differing in one high bit only (the floor never
    // reaches the top mantissa bit): flips that overflowed.
    uint64_t high_hits = 0;
    int high_bit = -1;
    for (int b = std::max(0, F.p - 1); b < F.width; ++b)
      if (s.xor_bit_hist[b] > 0) { high_hits += s.xor_bit_hist[b]; high_bit = b; }
    if (floor && !outlier && F.nf > 0 && high_hits == F.nf) {
      auto& v = B.add(F.nf == 1 ? PEAT_ERROR_MODEL_BITFLIP_SINGLE : PEAT_ERROR_MODEL_BITFLIP_MULTI, 0.8,
                      static_cast<int64_t>(F.nf));
      v.bit = high_bit;
      evidence(v, "{} new NaN/Inf, and exactly {} differing bit(s) at or above bit {} (one per NaN/Inf): flips that "
                  "overflowed", F.nf, high_hits, F.p - 1);
      set_spatial(v, sp);
    }
    if (F.nf > 0 && floor) {
      auto& v = B.add(PEAT_ERROR_MODEL_NONFINITE, 0.9, static_cast<int64_t>(F.nf));
      evidence(v, "{} new NaN/Inf where the golden is finite, above a noise floor", F.nf);
    }
    if (rounding) {
      auto& v = B.add(PEAT_ERROR_MODEL_ROUNDING, 0.9, static_cast<int64_t>(bulk));
      v.effective_mantissa_bits = eff;
      evidence(v, "{}", why);
      evidence(v, "{} pairs differ, relative L2 {:.3g}, effective mantissa bits {:.0f}", bulk, bulk_l2, eff);
      if (F.k_bound && !outlier && static_cast<double>(F.K) * F.u_op < 1) {
        const double gamma = static_cast<double>(F.K) * F.u_op / (1 - static_cast<double>(F.K) * F.u_op);
        evidence(v, "deterministic bound: max relative error {:.3g} vs 2 gamma_K = {:.3g} (exceeded only where the sum cancels)",
                 s.max_rel_error, 2 * gamma);
      }
      return true;
    }
    if (reduced) {
      auto& v = B.add(PEAT_ERROR_MODEL_REDUCED_PRECISION, 0.85, static_cast<int64_t>(bulk));
      v.effective_mantissa_bits = eff;
      v.nearest_format = format_near(eff);
      evidence(v, "effective mantissa bits {:.1f} < {} ({}): nearest format {}", eff, F.p,
               F.k_bound ? "from the relative L2 error" : "0.95 quantile of the relative errors",
               format_name(v.nearest_format));
      if (F.k_bound)
        evidence(v, "relative L2 {:.3g} exceeds the rounding bound {} sqrt(2K) u = {:.3g}", bulk_l2,
                 ctx.rounding_slack, ctx.rounding_slack * std::sqrt(2.0 * static_cast<double>(F.K)) * F.u_op);
      else
        evidence(v, "{} of {} mismatches are 4 ULP or more apart", far, F.n);
      if (s.dropped_count > 0) evidence(v, "{} values flushed to zero", s.dropped_count);
      return true;
    }
    return false;
  }

  // ---- 13/14 GARBAGE / UNKNOWN -------------------------------------------------------------------
  void garbage_or_unknown() {
    if (static_cast<double>(rel_big) >= 0.5 * n || F.cosine() < 0.9) {
      auto& v = B.add(PEAT_ERROR_MODEL_GARBAGE, 0.8, static_cast<int64_t>(F.n));
      evidence(v, "{} of {} mismatches have relative error >= 1/4 or none defined (>= 50 %)", rel_big, F.n);
      evidence(v, "{} differ in more than 4 bits; cosine {:.4f}, relative L2 {:.3g}",
               F.nb - std::min(F.nb, F.popcount_at_most(4)), F.cosine(), rel_l2);
      set_spatial(v, sp);
    } else {
      auto& v = B.add(PEAT_ERROR_MODEL_UNKNOWN, 0.5, static_cast<int64_t>(F.n));
      evidence(v, "no sufficient condition held: {} mismatches, relative L2 {:.3g}, {} of them >= 4 ULP apart", F.n,
               rel_l2, far);
    }
  }
};

}  // namespace rules

void detect(const peat_signature_t& s, const peat_detect_context_t& ctx, peat_detection_t& out) {
  out.verdict_count = 0;
  validate_inputs(s, ctx);
  out.elements = s.count;
  out.mismatches = s.value_mismatch_count;
  rules::Rules(s, ctx, out).run();
}

const char* op_kind_name(peat_op_kind_t kind) noexcept {
  switch (kind) {
    case PEAT_OP_KIND_UNKNOWN: return "unknown";
    case PEAT_OP_KIND_GEMM: return "gemm";
    case PEAT_OP_KIND_CONV: return "conv";
    case PEAT_OP_KIND_REDUCTION: return "reduction";
    case PEAT_OP_KIND_ELEMENTWISE: return "elementwise";
    default: return "unknown";
  }
}

const char* format_name(peat_float_format_t format) noexcept {
  switch (format) {
    case -1: return "none";
    case PEAT_FORMAT_BF16: return "bf16";
    case PEAT_FORMAT_FP16: return "fp16";
    case PEAT_FORMAT_TF32: return "tf32";
    case PEAT_FORMAT_FP8_E4M3: return "fp8_e4m3";
    case PEAT_FORMAT_FP8_E5M2: return "fp8_e5m2";
    default: return "unknown";
  }
}

}  // namespace peat::impl::detector