// The Detector's rules as one class, Rules: one member function per rule of
// docs/error-models.md, run in the order of its table by run(). Internal to
// lib/detector. The member functions are defined by group, one file each:
//   rules.cpp              the order of the rules and the quantities they share
//   rules_exact_flips.cpp  nondeterminism, exact, bit flips, stuck bits, scaling
//   rules_spatial.cpp      region, non-finite values, dropped writes
//   rules_floor.cpp        the deterministic bound, noise floors and what stands
//                          above them, garbage / unknown
#pragma once

#include "lib/detector/features.hpp"

#include <peat/detector.h>

#include <cstdint>
#include <optional>
#include <string>

namespace peat::impl::detector::rules {

// The rules of docs/error-models.md, one member function each, in the order
// of the table. Each returns true when it added the primary verdict; the
// quantities several rules share are computed once in the constructor.
class Rules {
 public:
  Rules(const peat_signature_t& s, const peat_detect_context_t& ctx, peat_detection_t& out)
      : s_(s), ctx_(ctx), F(s, ctx), B(out), sp(read_map(ctx.map)), N(static_cast<double>(s.count)),
        n(static_cast<double>(F.n)) {}

  void run();

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

  // rules.cpp (with run())
  void derive();

  // rules_exact_flips.cpp
  void nondeterminism();
  bool exact();
  bool bitflip_single();
  bool flip_over_reduction_noise();
  bool stuck_at();
  bool scaling();
  bool bitflip_multi_one_bit();
  bool bitflip_multi_sparse();

  // rules_spatial.cpp
  bool region();
  bool nonfinite();
  bool dropped_writes();

  // rules_floor.cpp
  peat_float_format_t format_near(double eff) const;
  std::string grid_evidence() const;
  bool on_narrow_grid(int grid_bits) const;
  bool within_gamma();
  // The floor beneath an anomaly (floor_of): its model (UNKNOWN: no floor),
  // effective bits, the mismatches it covers and the evidence why.
  struct Floor {
    peat_error_model_t model = PEAT_ERROR_MODEL_UNKNOWN;  // UNKNOWN: no floor
    double eff = 0;
    uint64_t rest = 0;
    std::string why;
  };
  Floor floor_of(uint64_t skip) const;
  bool floor_beneath(uint64_t skip, const char* anomaly);
  bool add_floor(const Floor& fl, const char* anomaly);
  bool stuck_over_floor();
  int narrow_limit() const;
  double elementwise_bits(double eff_q, double l2) const;
  bool dropped_over_floor();
  bool outliers_over_floor();
  bool noise_floor();
  std::optional<double> one_sided_factor() const;  // mean c/g of a one-sided error (rule 12')
  void varying_scale(double mean, double eff, double bulk_l2, uint64_t bulk);
  void garbage_or_unknown();
};

}  // namespace peat::impl::detector::rules
