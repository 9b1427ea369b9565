// Analyzer: the signature against a plainly written reference, merge
// properties, dtypes, strided views, spatial maps, derived metrics,
// aggregation, training-outcome comparison and bad input.
#include <catch2/catch.hpp>

#include <peat/analyzer.h>

#include "analyzer/analyze.hpp"
#include "analyzer/exact_acc.hpp"
#include "backend/backend.hpp"
#include "signature_element.h"
#include "test_analyzer_support.hpp"

#include <hwy/targets.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace analyzer_test;

namespace {

// A tensor over owned storage of words.
struct Tensor {
  Fmt fmt;
  std::vector<unsigned char> bytes;
  std::vector<int64_t> shape, strides;
  DLTensor t{};

  Tensor(Fmt f, const std::vector<uint64_t>& words, std::vector<int64_t> shp = {}) : fmt(f), shape(std::move(shp)) {
    if (shape.empty()) shape = {static_cast<int64_t>(words.size())};
    const int w = width_of(f) / 8;
    bytes.resize(words.size() * w + 8);
    for (std::size_t i = 0; i < words.size(); ++i) std::memcpy(bytes.data() + i * w, &words[i], w);
    finish();
  }
  void finish() {
    t.data = bytes.data();
    t.device = DLDevice{kDLCPU, 0};
    t.ndim = static_cast<int32_t>(shape.size());
    t.dtype = dtype_of(fmt);
    t.shape = shape.data();
    t.strides = strides.empty() ? nullptr : strides.data();
    t.byte_offset = 0;
  }
  const DLTensor* operator&() const { return &t; }
};

std::vector<uint64_t> words_of(Fmt f, const std::vector<double>& v) {
  std::vector<uint64_t> w(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) w[i] = encode(f, v[i]);
  return w;
}

peat_signature_config_t default_config() {
  peat_signature_config_t c;
  peat_signature_config_init(&c);
  return c;
}

peat_signature_t run(const Tensor& g, const Tensor& c, const peat_signature_config_t& cfg,
                     peat_spatial_map_t* map = nullptr) {
  peat_signature_t s;
  peat_signature_init(&s);
  const peat_status_t st = peat_analyze(&g, &c, &cfg, &s, map);
  INFO(peat_last_error_message());
  REQUIRE(st == PEAT_STATUS_OK);
  return s;
}

long double value(const peat_exact_sum_t& s) {
  double v = 0;
  REQUIRE(peat_exact_sum_value(&s, &v) == PEAT_STATUS_OK);
  return v;
}

peat_signature_sums_t sums(const peat_signature_t& s) {
  peat_signature_sums_t out;
  out.struct_size = sizeof(out);
  REQUIRE(peat_signature_read_sums(&s, &out) == PEAT_STATUS_OK);
  return out;
}

void require_close(long double got, long double want, long double scale, double rel = 1e-12) {
  if (!std::isfinite(static_cast<double>(want)) || !std::isfinite(static_cast<double>(scale))) {
    // Overflowed sums: the same non-finite class.
    REQUIRE(std::isnan(static_cast<double>(got)) == std::isnan(static_cast<double>(want)));
    return;
  }
  INFO("got " << static_cast<double>(got) << " want " << static_cast<double>(want));
  REQUIRE(std::fabs(static_cast<double>(got - want)) <= rel * static_cast<double>(scale) + 1e-300);
}

// Compares a signature with the reference: integers, extrema and histograms
// exactly, sums to within rounding.
void check_against(const peat_signature_t& s, const Ref& r) {
  CHECK(s.count == r.count);
  CHECK(s.bitwise_mismatch_count == r.bitwise);
  CHECK(s.value_mismatch_count == r.value);
  CHECK(s.golden_nan_count == r.gnan);
  CHECK(s.golden_inf_count == r.ginf);
  CHECK(s.candidate_nan_count == r.cnan);
  CHECK(s.candidate_inf_count == r.cinf);
  CHECK(s.new_nonfinite_count == r.newnf);
  CHECK(s.lost_nonfinite_count == r.lostnf);
  CHECK(s.sign_flip_count == r.signflip);
  CHECK(s.dropped_count == r.dropped);
  CHECK(s.spurious_count == r.spurious);
  CHECK(s.tolerance_fail_count == r.tolfail);
  CHECK(s.finite_count == r.finite);
  CHECK(s.max_abs_error_index == r.max_abs_idx);
  if (r.max_abs_idx >= 0) {
    CHECK(s.max_abs_error == r.max_abs);
    CHECK(std::memcmp(&s.max_abs_error_golden, &r.max_abs_g, 8) == 0);
    CHECK(std::memcmp(&s.max_abs_error_candidate, &r.max_abs_c, 8) == 0);
  }
  CHECK(s.max_rel_error_index == r.max_rel_idx);
  if (r.max_rel_idx >= 0) CHECK(s.max_rel_error == r.max_rel);
  CHECK(s.max_abs_golden == r.max_abs_golden);
  for (int i = 0; i < PEAT_SIGNATURE_ULP_BUCKETS; ++i) CHECK(s.ulp_hist[i] == r.ulp[i]);
  for (int i = 0; i < PEAT_SIGNATURE_REL_BUCKETS; ++i) CHECK(s.rel_hist[i] == r.rel[i]);
  for (int i = 0; i < PEAT_SIGNATURE_XOR_BITS; ++i) CHECK(s.xor_bit_hist[i] == r.xbit[i]);
  for (int i = 0; i < PEAT_SIGNATURE_POPCOUNT_BUCKETS; ++i) CHECK(s.xor_popcount_hist[i] == r.xpop[i]);
  for (int i = 0; i < PEAT_SIGNATURE_XOR_BITS; ++i) {
    CHECK(s.xor_top_bit_hist[i] == r.xtop[i]);
    CHECK(s.xor_top_bit_set_hist[i] == r.xtop_set[i]);
    CHECK(s.candidate_low_bit_hist[i] == r.clow[i]);
  }
  // Every sum is exact: its digits hold the exact rational sum of the terms,
  // and it reads as that sum rounded to nearest.
  const std::pair<const peat_exact_sum_t*, const ExactRef*> exact[] = {
      {&s.sum_error, &r.x_e},         {&s.sum_abs_error, &r.x_abs},    {&s.sum_sq_error, &r.x_e2},
      {&s.sum_sq_golden, &r.x_g2},    {&s.sum_sq_candidate, &r.x_c2},  {&s.sum_golden_candidate, &r.x_gc},
      {&s.ratio_dev_sum, &r.x_d},     {&s.ratio_dev_sq_sum, &r.x_d2}};
  for (const auto& [got, want] : exact) {
    CHECK(exact_value_of(*got) == want->sum);
    const uint32_t flags = (want->pinf ? PEAT_EXACT_SUM_POS_INF : 0u) | (want->ninf ? PEAT_EXACT_SUM_NEG_INF : 0u) |
                           (want->nan ? PEAT_EXACT_SUM_NAN : 0u);
    CHECK(got->nonfinite == flags);
    const double v = static_cast<double>(value(*got));
    if (want->nan || (want->pinf && want->ninf))
      CHECK(std::isnan(v));
    else if (want->pinf || want->ninf)
      CHECK(v == (want->pinf ? INFINITY : -INFINITY));
    else
      CHECK(is_rounded_nearest(v, want->sum));
  }
  CHECK(std::signbit(s.ratio_min) == std::signbit(r.ratio_min));
  CHECK(std::signbit(s.ratio_max) == std::signbit(r.ratio_max));
  if (std::isfinite(static_cast<double>(r.s_e2)) && std::isfinite(static_cast<double>(r.s_g2)) &&
      std::isfinite(static_cast<double>(r.s_c2))) {
    require_close(value(s.sum_error), r.s_e, r.m_e);
    require_close(value(s.sum_abs_error), r.s_abs, r.m_e);
    require_close(value(s.sum_sq_error), r.s_e2, r.s_e2);
    require_close(value(s.sum_sq_golden), r.s_g2, r.s_g2);
    require_close(value(s.sum_sq_candidate), r.s_c2, r.s_c2);
    require_close(value(s.sum_golden_candidate), r.s_gc, r.m_gc);
  }
  CHECK(s.ratio_count == r.ratio_n);
  if (r.ratio_n > 0) {
    CHECK(s.ratio_min == r.ratio_min);
    CHECK(s.ratio_max == r.ratio_max);
    const long double mean = r.ratio_sum / r.ratio_n;
    const long double scale = std::max<long double>(std::fabs(r.ratio_min), std::fabs(r.ratio_max));
    if (std::isfinite(static_cast<double>(scale)) && scale < 1e100) {
      require_close(sums(s).ratio_mean, mean, scale, 1e-12);
      const long double var = r.ratio_sq / r.ratio_n - mean * mean;
      require_close(sums(s).ratio_m2 / static_cast<double>(r.ratio_n), var, scale * scale, 1e-9);
    }
  }
}

// Random golden values of a format and candidates at every kind of distance.
std::vector<double> random_values(std::mt19937_64& rng, std::size_t n, double scale) {
  std::normal_distribution<double> normal(0.0, scale);
  std::vector<double> v(n);
  for (auto& x : v) x = normal(rng);
  return v;
}

std::vector<uint64_t> perturb(Fmt f, std::mt19937_64& rng, const std::vector<uint64_t>& g) {
  std::vector<uint64_t> c = g;
  std::uniform_int_distribution<int> kind(0, 19), bit(0, width_of(f) - 1), small(-4, 4);
  for (auto& w : c) {
    const double v = decode(f, w);
    switch (kind(rng)) {
      case 0: case 1: case 2: case 3: break;  // exact
      case 4: case 5: case 6: case 7: case 8: {  // a few ulps
        const int64_t p = position(f, w) + small(rng);
        const uint64_t sign = uint64_t{1} << (width_of(f) - 1);
        w = p < 0 ? (sign | static_cast<uint64_t>(-p)) : static_cast<uint64_t>(p);
        break;
      }
      case 9: w ^= uint64_t{1} << bit(rng); break;  // one bit
      case 10: w ^= (uint64_t{1} << bit(rng)) | (uint64_t{1} << bit(rng)); break;
      case 11: w = encode(f, 0.0); break;  // dropped
      case 12: w = encode(f, -v); break;    // sign flip
      case 13: w = encode(f, v * 1.5); break;  // scaling
      case 14: w = encode(f, std::numeric_limits<double>::quiet_NaN()); break;
      case 15: w = encode(f, std::numeric_limits<double>::infinity()); break;
      default: w = encode(f, v * (1 + 1e-3)); break;
    }
  }
  return c;
}

const Fmt kFormats[] = {Fmt::F16, Fmt::BF16, Fmt::F32, Fmt::F64};

}  // namespace

TEST_CASE("signature equals the plain reference on random inputs, every dtype", "[analyzer]") {
  std::mt19937_64 rng(7);
  for (Fmt f : kFormats) {
    for (const std::size_t n : {std::size_t{1}, std::size_t{33}, std::size_t{5000}, std::size_t{150000}}) {
      INFO("format " << static_cast<int>(f) << " n " << n);
      auto gw = words_of(f, random_values(rng, n, 3.0));
      // Sprinkle golden specials.
      if (n > 10) {
        gw[1] = encode(f, std::numeric_limits<double>::quiet_NaN());
        gw[2] = encode(f, -std::numeric_limits<double>::infinity());
        gw[3] = encode(f, 0.0);
        gw[4] = encode(f, -0.0);
      }
      const auto cw = perturb(f, rng, gw);
      const Tensor g(f, gw), c(f, cw);
      auto cfg = default_config();
      double rtol, atol;
      REQUIRE(peat_default_tolerance(dtype_of(f), &rtol, &atol) == PEAT_STATUS_OK);
      const auto s = run(g, c, cfg);
      CHECK(s.rtol == rtol);
      CHECK(s.atol == atol);
      const double min_normal = f == Fmt::F16 ? std::ldexp(1.0, -14)
                                : f == Fmt::F64 ? std::numeric_limits<double>::min()
                                                : static_cast<double>(std::numeric_limits<float>::min());
      check_against(s, reference(f, gw, cw, rtol, atol, min_normal));
      CHECK(s.golden_dtype.bits == width_of(f));
    }
  }
}

TEST_CASE("signature on adversarial inputs", "[analyzer]") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  for (Fmt f : kFormats) {
    INFO("format " << static_cast<int>(f));
    const double tiny = f == Fmt::F64 ? 4.9e-324 : f == Fmt::F32 ? 1.4e-45 : f == Fmt::F16 ? 5.96e-8 : 9.2e-41;
    const double huge = f == Fmt::F64 ? 1.7e308 : f == Fmt::F32 ? 3.4e38 : f == Fmt::F16 ? 65504 : 3.3e38;
    const std::vector<std::pair<std::vector<double>, std::vector<double>>> cases = {
        {{1, 1, 1, 1}, {1, 1, 1, 1}},                       // all equal
        {{nan, nan, nan}, {nan, nan, nan}},                 // all NaN
        {{nan, 1, nan}, {1, nan, -nan}},                    // NaN on one side
        {{0.0, -0.0, 0.0, -0.0}, {-0.0, 0.0, 0.0, -0.0}},   // signed zeros
        {{tiny, -tiny, 2 * tiny, tiny}, {2 * tiny, tiny, 0.0, -tiny}},  // denormals
        {{huge, -huge, huge, 1}, {-huge, huge, inf, huge}},  // huge: e overflows in narrow? (double holds it)
        {{inf, -inf, inf, -inf}, {inf, inf, 1, nan}},        // infinities
        {{5}, {7}},                                          // one element
        {{0, 0, 3}, {1e-30, 0, 0}},                          // golden zero, dropped
        {{0, 0, 0, 0}, {huge, 1, -huge, tiny}},              // cancellation: sum e is exactly 1 + tiny
        {{huge, tiny, -huge}, {huge, 2 * tiny, -huge}},      // squares overflow (f64), tiny errors
    };
    for (const auto& [gv, cv] : cases) {
      const auto gw = words_of(f, gv), cw = words_of(f, cv);
      const Tensor g(f, gw), c(f, cw);
      auto cfg = default_config();
      cfg.rtol = 1e-3;
      cfg.atol = 0;
      const auto s = run(g, c, cfg);
      const double min_normal = f == Fmt::F16 ? std::ldexp(1.0, -14)
                                : f == Fmt::F64 ? std::numeric_limits<double>::min()
                                                : static_cast<double>(std::numeric_limits<float>::min());
      check_against(s, reference(f, gw, cw, 1e-3, 0, min_normal));
    }
  }
  SECTION("f64 error that overflows double") {
    const auto gw = words_of(Fmt::F64, {-1.5e308, 1.0}), cw = words_of(Fmt::F64, {1.5e308, 1.0});
    const auto s = run(Tensor(Fmt::F64, gw), Tensor(Fmt::F64, cw), default_config());
    CHECK(std::isinf(s.max_abs_error));
    CHECK(s.rel_hist[PEAT_SIGNATURE_REL_LARGE_BUCKET] == 1);
    CHECK(s.sign_flip_count == 1);
  }
  SECTION("empty tensor") {
    const Tensor g(Fmt::F32, {}), c(Fmt::F32, {});
    const auto s = run(g, c, default_config());
    CHECK(s.count == 0);
    CHECK(s.max_abs_error_index == -1);
    CHECK(s.golden_dtype.bits == 32);
  }
}

TEST_CASE("known values: counts, metrics, allclose", "[analyzer]") {
  const Tensor g(Fmt::F64, words_of(Fmt::F64, {1, 2, 3, 4})), c(Fmt::F64, words_of(Fmt::F64, {1, 2, 3, 5}));
  const auto s = run(g, c, default_config());
  CHECK(s.value_mismatch_count == 1);
  CHECK(s.max_abs_error == 1.0);
  CHECK(s.max_abs_error_index == 3);
  CHECK(s.max_rel_error == 0.25);
  double v;
  REQUIRE(peat_signature_rmse(&s, &v) == PEAT_STATUS_OK);
  CHECK(v == Approx(0.5).epsilon(1e-15));
  REQUIRE(peat_signature_relative_l2(&s, &v) == PEAT_STATUS_OK);
  CHECK(v == Approx(std::sqrt(1.0 / 30)).epsilon(1e-15));
  REQUIRE(peat_signature_sqnr_db(&s, &v) == PEAT_STATUS_OK);
  CHECK(v == Approx(10 * std::log10(30.0)).epsilon(1e-14));
  REQUIRE(peat_signature_cosine(&s, &v) == PEAT_STATUS_OK);
  CHECK(v == Approx(34.0 / std::sqrt(30.0 * 39.0)).epsilon(1e-15));
  REQUIRE(peat_signature_max_rel_error(&s, &v) == PEAT_STATUS_OK);
  CHECK(v == 0.25);
  int32_t pass = -1;
  REQUIRE(peat_signature_allclose(&s, &pass) == PEAT_STATUS_OK);
  CHECK(pass == 0);
  // Loose tolerance: passes.
  auto cfg = default_config();
  cfg.rtol = 0.25;
  cfg.atol = 0;
  const auto loose = run(g, c, cfg);
  REQUIRE(peat_signature_allclose(&loose, &pass) == PEAT_STATUS_OK);
  CHECK(pass == 1);
  // Identical: SQNR is +Inf, cosine 1, rmse 0.
  const auto same = run(g, g, default_config());
  REQUIRE(peat_signature_sqnr_db(&same, &v) == PEAT_STATUS_OK);
  CHECK(std::isinf(v));
  REQUIRE(peat_signature_cosine(&same, &v) == PEAT_STATUS_OK);
  CHECK(v == Approx(1.0));
  CHECK(same.ulp_hist[0] == 4);
  CHECK(same.rel_hist[0] == 4);
  // Scaling: ratio statistics see a constant 1.5.
  const Tensor scaled(Fmt::F64, words_of(Fmt::F64, {1.5, 3, 4.5, 6}));
  const auto sc = run(g, scaled, default_config());
  CHECK(sc.ratio_count == 4);
  CHECK(sums(sc).ratio_mean == 1.5);
  CHECK(sums(sc).ratio_m2 == 0.0);
  CHECK(sc.ratio_min == 1.5);
  CHECK(sc.ratio_max == 1.5);
}

TEST_CASE("ULP and XOR histograms on single bit flips", "[analyzer]") {
  // f32 1.0 with mantissa bit 0 flipped: 1 ulp, xor bit 0, popcount 1; exponent bit 23: huge ulp distance.
  const std::vector<uint64_t> gw = {0x3F800000, 0x3F800000, 0x3F800000};
  const std::vector<uint64_t> cw = {0x3F800001, 0x3F000000, 0xBF800000};
  const auto s = run(Tensor(Fmt::F32, gw), Tensor(Fmt::F32, cw), default_config());
  CHECK(s.xor_bit_hist[0] == 1);
  CHECK(s.xor_bit_hist[23] == 1);
  CHECK(s.xor_bit_hist[31] == 1);
  CHECK(s.xor_popcount_hist[1] == 3);
  CHECK(s.ulp_hist[1] == 1);             // distance 1
  CHECK(s.ulp_hist[24] == 1);            // 1.0 -> 0.5: 2^23 ulps
  CHECK(s.ulp_hist[31] == 1);            // 1.0 -> -1.0: 2 * 0x3F800000 ulps
  CHECK(s.sign_flip_count == 1);
}

TEST_CASE("mixed dtypes convert the candidate to the golden dtype", "[analyzer]") {
  std::mt19937_64 rng(11);
  for (Fmt gf : kFormats)
    for (Fmt cf : kFormats) {
      if (gf == cf) continue;
      INFO("golden " << static_cast<int>(gf) << " candidate " << static_cast<int>(cf));
      auto values = random_values(rng, 3000, 10.0);
      values.push_back(std::numeric_limits<double>::quiet_NaN());
      values.push_back(1e6);   // beyond f16: rounds to Inf there
      values.push_back(1e-9);  // below f16's subnormals
      const auto gw = words_of(gf, values);
      // Candidate in its own format, from slightly perturbed values.
      std::vector<double> cvals(values.size());
      for (std::size_t i = 0; i < values.size(); ++i) cvals[i] = values[i] * (1 + 1e-4 * static_cast<double>(i % 7));
      const auto cw = words_of(cf, cvals);
      // Reference: candidate decoded, then rounded to the golden format by nearest-value search.
      std::vector<uint64_t> converted(cw.size());
      for (std::size_t i = 0; i < cw.size(); ++i) converted[i] = encode(gf, decode(cf, cw[i]));
      auto cfg = default_config();
      const auto s = run(Tensor(gf, gw), Tensor(cf, cw), cfg);
      const double min_normal = gf == Fmt::F16 ? std::ldexp(1.0, -14)
                                : gf == Fmt::F64 ? std::numeric_limits<double>::min()
                                                 : static_cast<double>(std::numeric_limits<float>::min());
      check_against(s, reference(gf, gw, converted, s.rtol, s.atol, min_normal));
      CHECK(s.candidate_dtype.bits == dtype_of(cf).bits);
      CHECK(s.candidate_dtype.code == dtype_of(cf).code);
    }
}

TEST_CASE("f64 -> f16/bf16 conversion rounds once (no double rounding)", "[analyzer]") {
  // A double just above the f16 midpoint between 1 and 1 + 2^-10 whose float
  // rounding lands exactly on the midpoint: correct rounding goes up.
  const double d = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  const std::vector<uint64_t> gw = {encode(Fmt::F16, 1.0 + std::ldexp(1.0, -10))};
  const auto s = run(Tensor(Fmt::F16, gw), Tensor(Fmt::F64, words_of(Fmt::F64, {d})), default_config());
  CHECK(s.bitwise_mismatch_count == 0);
  const double b = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40);
  const std::vector<uint64_t> bw = {encode(Fmt::BF16, 1.0 + std::ldexp(1.0, -7))};
  const auto sb = run(Tensor(Fmt::BF16, bw), Tensor(Fmt::F64, words_of(Fmt::F64, {b})), default_config());
  CHECK(sb.bitwise_mismatch_count == 0);
}

TEST_CASE("strided and offset views give the signature of their logical elements", "[analyzer]") {
  std::mt19937_64 rng(3);
  const int64_t rows = 37, cols = 300;  // > one chunk's worth is not needed for layout
  auto gv = random_values(rng, static_cast<std::size_t>(rows * cols), 1.0);
  auto gw = words_of(Fmt::F32, gv);
  auto cw = perturb(Fmt::F32, rng, gw);
  // Transposed storage of golden: element (r, c) at c * rows + r.
  std::vector<uint64_t> gt(gw.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) gt[static_cast<std::size_t>(c * rows + r)] = gw[static_cast<std::size_t>(r * cols + c)];
  Tensor g(Fmt::F32, gt, {rows, cols});
  g.strides = {1, rows};
  g.finish();
  // Candidate: reversed rows via a negative stride, with a byte offset to the last row.
  std::vector<uint64_t> crev(cw.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      crev[static_cast<std::size_t>((rows - 1 - r) * cols + c)] = cw[static_cast<std::size_t>(r * cols + c)];
  Tensor c(Fmt::F32, crev, {rows, cols});
  c.strides = {-cols, 1};
  c.finish();
  c.t.byte_offset = static_cast<uint64_t>((rows - 1) * cols * 4);
  const Tensor gc(Fmt::F32, gw, {rows, cols}), cc(Fmt::F32, cw, {rows, cols});
  const auto strided = run(g, c, default_config());
  const auto compact = run(gc, cc, default_config());
  check_against(strided, reference(Fmt::F32, gw, cw, strided.rtol, strided.atol,
                                   static_cast<double>(std::numeric_limits<float>::min())));
  // Same pairs, other traversal: byte-identical (the sums are exact).
  CHECK(std::memcmp(&strided, &compact, sizeof(strided)) == 0);
}

TEST_CASE("merge: any split, any order, gives the same signature", "[analyzer][merge]") {
  std::mt19937_64 rng(5);
  for (Fmt f : kFormats) {
    INFO("format " << static_cast<int>(f));
    const std::size_t n = 200000;
    auto gw = words_of(f, random_values(rng, n, 2.0));
    const auto cw = perturb(f, rng, gw);
    const auto whole = run(Tensor(f, gw), Tensor(f, cw), default_config());
    for (int trial = 0; trial < 6; ++trial) {
      // Random cut points (some pieces empty, some a single element).
      std::vector<std::size_t> cuts = {0, n};
      std::uniform_int_distribution<std::size_t> pos(0, n);
      const int pieces = 1 + trial * 7;
      for (int i = 0; i < pieces; ++i) cuts.push_back(pos(rng));
      cuts.push_back(1);
      std::sort(cuts.begin(), cuts.end());
      std::vector<peat_signature_t> parts;
      for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
        const std::vector<uint64_t> g_piece(gw.begin() + cuts[i], gw.begin() + cuts[i + 1]);
        const std::vector<uint64_t> c_piece(cw.begin() + cuts[i], cw.begin() + cuts[i + 1]);
        auto cfg = default_config();
        cfg.index_base = static_cast<int64_t>(cuts[i]);
        parts.push_back(run(Tensor(f, g_piece), Tensor(f, c_piece), cfg));
      }
      // Merge in a random tree: repeatedly merge two random parts.
      while (parts.size() > 1) {
        std::uniform_int_distribution<std::size_t> pick(0, parts.size() - 1);
        const std::size_t a = pick(rng);
        std::size_t b = pick(rng);
        if (a == b) continue;
        REQUIRE(peat_signature_merge(&parts[a], &parts[b]) == PEAT_STATUS_OK);
        parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(b));
      }
      const auto& m = parts[0];
      // Byte-identical, floating sums and ratio statistics included (exact sums).
      CHECK(std::memcmp(&m, &whole, sizeof(m)) == 0);
    }
  }
}

TEST_CASE("merge: one-element pieces and mixed dtypes, random orders and trees, byte-identical",
          "[analyzer][merge]") {
  std::mt19937_64 rng(11);
  const std::pair<Fmt, Fmt> combos[] = {{Fmt::F32, Fmt::F32}, {Fmt::F64, Fmt::F64}, {Fmt::F16, Fmt::F16},
                                        {Fmt::BF16, Fmt::BF16}, {Fmt::F32, Fmt::BF16}, {Fmt::F64, Fmt::F16}};
  for (const auto& [gf, cf] : combos) {
    INFO("golden " << static_cast<int>(gf) << " candidate " << static_cast<int>(cf));
    const std::size_t n = 300;
    auto values = random_values(rng, n, 1e3);
    values[5] = 0.0;
    values[6] = -0.0;
    values[7] = 1e-300;
    auto gw = words_of(gf, values);
    // Candidate in its own dtype: perturbed values with specials.
    std::vector<double> cv(n);
    std::uniform_int_distribution<int> kind(0, 9);
    for (std::size_t i = 0; i < n; ++i) {
      const double v = decode(gf, gw[i]);
      switch (kind(rng)) {
        case 0: cv[i] = v; break;
        case 1: cv[i] = -v; break;
        case 2: cv[i] = 0.0; break;
        case 3: cv[i] = -0.0; break;
        case 4: cv[i] = std::numeric_limits<double>::quiet_NaN(); break;
        default: cv[i] = v * (1 + 1e-3 * (kind(rng) - 5)); break;
      }
    }
    const auto cw = words_of(cf, cv);
    const auto whole = run(Tensor(gf, gw), Tensor(cf, cw), default_config());
    for (int trial = 0; trial < 3; ++trial) {
      // One-element pieces (trial 0) or random cuts; merged in a random order
      // (trial 1: a left fold over a shuffled list) or a random tree.
      std::vector<std::size_t> cuts = {0, n};
      if (trial == 0) {
        for (std::size_t i = 1; i < n; ++i) cuts.push_back(i);
      } else {
        std::uniform_int_distribution<std::size_t> pos(0, n);
        for (int i = 0; i < 40; ++i) cuts.push_back(pos(rng));
      }
      std::sort(cuts.begin(), cuts.end());
      std::vector<peat_signature_t> parts;
      for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
        const std::vector<uint64_t> g_piece(gw.begin() + cuts[i], gw.begin() + cuts[i + 1]);
        const std::vector<uint64_t> c_piece(cw.begin() + cuts[i], cw.begin() + cuts[i + 1]);
        auto cfg = default_config();
        cfg.index_base = static_cast<int64_t>(cuts[i]);
        cfg.num_threads = 1;
        parts.push_back(run(Tensor(gf, g_piece), Tensor(cf, c_piece), cfg));
      }
      std::shuffle(parts.begin(), parts.end(), rng);
      if (trial == 1) {
        peat_signature_t total;
        peat_signature_init(&total);
        for (const auto& p : parts) REQUIRE(peat_signature_merge(&total, &p) == PEAT_STATUS_OK);
        parts = {total};
      }
      while (parts.size() > 1) {
        std::uniform_int_distribution<std::size_t> pick(0, parts.size() - 1);
        const std::size_t a = pick(rng), b = pick(rng);
        if (a == b) continue;
        REQUIRE(peat_signature_merge(&parts[a], &parts[b]) == PEAT_STATUS_OK);
        parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(b));
      }
      CHECK(std::memcmp(&parts[0], &whole, sizeof(whole)) == 0);
    }
  }
}

TEST_CASE("exact sums: reading rounds to nearest, non-finite terms, cancellation", "[analyzer][exact]") {
  auto sum_of = [](std::initializer_list<double> terms) {
    peat_signature_t s;
    peat_signature_init(&s);
    for (double t : terms) peat::hd::exact_sum_add(s.sum_error, t);
    return s.sum_error;
  };
  double v = 0;
  // 2^53 + 1 + 2^-60: the exact sum rounds up (not to 2^53, as plain addition does).
  auto a = sum_of({0x1p53, 1.0, 0x1p-60});
  REQUIRE(peat_exact_sum_value(&a, &v) == PEAT_STATUS_OK);
  CHECK(v == 0x1p53 + 2);
  // A tie rounds to even: 2^53 + 1 -> 2^53; 2^53 + 3 -> 2^53 + 4.
  a = sum_of({0x1p53, 1.0});
  REQUIRE(peat_exact_sum_value(&a, &v) == PEAT_STATUS_OK);
  CHECK(v == 0x1p53);
  a = sum_of({0x1p53, 3.0});
  REQUIRE(peat_exact_sum_value(&a, &v) == PEAT_STATUS_OK);
  CHECK(v == 0x1p53 + 4);
  // Total cancellation of the largest terms leaves the smallest subnormal.
  const double max = std::numeric_limits<double>::max(), tiny = std::numeric_limits<double>::denorm_min();
  a = sum_of({max, tiny, -max, max, -max});
  REQUIRE(peat_exact_sum_value(&a, &v) == PEAT_STATUS_OK);
  CHECK(v == tiny);
  // Beyond the double range: +Inf; coming back into range is exact again.
  a = sum_of({max, max});
  REQUIRE(peat_exact_sum_value(&a, &v) == PEAT_STATUS_OK);
  CHECK(v == INFINITY);
  a = sum_of({max, max, -max});
  REQUIRE(peat_exact_sum_value(&a, &v) == PEAT_STATUS_OK);
  CHECK(v == max);
  a = sum_of({-max, -max, -1.0});
  REQUIRE(peat_exact_sum_value(&a, &v) == PEAT_STATUS_OK);
  CHECK(v == -INFINITY);
  // Non-finite terms.
  a = sum_of({1.0, INFINITY});
  REQUIRE(peat_exact_sum_value(&a, &v) == PEAT_STATUS_OK);
  CHECK(v == INFINITY);
  a = sum_of({INFINITY, -INFINITY});
  REQUIRE(peat_exact_sum_value(&a, &v) == PEAT_STATUS_OK);
  CHECK(std::isnan(v));
  a = sum_of({std::numeric_limits<double>::quiet_NaN(), 1.0});
  REQUIRE(peat_exact_sum_value(&a, &v) == PEAT_STATUS_OK);
  CHECK(std::isnan(v));
  // Zero and negative zero: the sum is +0 (one representation).
  a = sum_of({0.0, -0.0, 1.5, -1.5});
  const auto z = sum_of({});
  CHECK(std::memcmp(&a, &z, sizeof(a)) == 0);
  REQUIRE(peat_exact_sum_value(&a, &v) == PEAT_STATUS_OK);
  CHECK((v == 0 && !std::signbit(v)));
  // Errors.
  CHECK(peat_exact_sum_value(nullptr, &v) == PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(peat_exact_sum_value(&a, nullptr) == PEAT_STATUS_INVALID_ARGUMENT);
  peat_signature_t s;
  peat_signature_init(&s);
  peat_signature_sums_t out;
  out.struct_size = 3;
  CHECK(peat_signature_read_sums(&s, &out) == PEAT_STATUS_VERSION_MISMATCH);
  // Random terms of every magnitude, added and merged in random orders: the
  // digits equal the exact rational sum and are byte-identical.
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<uint64_t> bits;
  std::vector<double> terms;
  for (int i = 0; i < 2000; ++i) {
    uint64_t b = bits(rng);
    double t;
    std::memcpy(&t, &b, 8);
    if (std::isfinite(t)) terms.push_back(t);
  }
  ExactRef ref;
  for (double t : terms) ref.add(t);
  peat_signature_t one;
  peat_signature_init(&one);
  for (double t : terms) peat::hd::exact_sum_add(one.sum_error, t);
  CHECK(exact_value_of(one.sum_error) == ref.sum);
  REQUIRE(peat_exact_sum_value(&one.sum_error, &v) == PEAT_STATUS_OK);
  CHECK(is_rounded_nearest(v, ref.sum));
  std::shuffle(terms.begin(), terms.end(), rng);
  peat_signature_t left, right;
  peat_signature_init(&left);
  peat_signature_init(&right);
  for (std::size_t i = 0; i < terms.size(); ++i) peat::hd::exact_sum_add(i % 3 ? left.sum_error : right.sum_error, terms[i]);
  peat::hd::exact_sum_merge(right.sum_error, left.sum_error);
  CHECK(std::memcmp(&right.sum_error, &one.sum_error, sizeof(one.sum_error)) == 0);
  // The CPU's carry-save accumulator gives the same digits.
  peat::impl::analyzer::ExactAcc acc;
  for (double t : terms) acc.add(t);
  peat_signature_t flushed;
  peat_signature_init(&flushed);
  acc.flush_into(flushed.sum_error);
  CHECK(std::memcmp(&flushed.sum_error, &one.sum_error, sizeof(one.sum_error)) == 0);
}

TEST_CASE("merge is commutative exactly and the empty signature is its identity", "[analyzer][merge]") {
  std::mt19937_64 rng(9);
  auto gw = words_of(Fmt::F32, random_values(rng, 1000, 1.0));
  auto cw = perturb(Fmt::F32, rng, gw);
  const std::vector<uint64_t> g1(gw.begin(), gw.begin() + 400), g2(gw.begin() + 400, gw.end());
  const std::vector<uint64_t> c1(cw.begin(), cw.begin() + 400), c2(cw.begin() + 400, cw.end());
  auto cfg = default_config();
  const auto a = run(Tensor(Fmt::F32, g1), Tensor(Fmt::F32, c1), cfg);
  cfg.index_base = 400;
  const auto b = run(Tensor(Fmt::F32, g2), Tensor(Fmt::F32, c2), cfg);
  peat_signature_t ab = a, ba = b;
  REQUIRE(peat_signature_merge(&ab, &b) == PEAT_STATUS_OK);
  REQUIRE(peat_signature_merge(&ba, &a) == PEAT_STATUS_OK);
  CHECK(std::memcmp(&ab, &ba, sizeof(ab)) == 0);
  peat_signature_t e;
  peat_signature_init(&e);
  peat_signature_t ae = a;
  REQUIRE(peat_signature_merge(&ae, &e) == PEAT_STATUS_OK);
  CHECK(std::memcmp(&ae, &a, sizeof(a)) == 0);
  REQUIRE(peat_signature_merge(&e, &a) == PEAT_STATUS_OK);
  CHECK(std::memcmp(&e, &a, sizeof(a)) == 0);
}

TEST_CASE("the result does not depend on the thread count", "[analyzer]") {
  std::mt19937_64 rng(13);
  auto gw = words_of(Fmt::F32, random_values(rng, 300000, 1.0));
  auto cw = perturb(Fmt::F32, rng, gw);
  const Tensor g(Fmt::F32, gw), c(Fmt::F32, cw);
  auto cfg = default_config();
  cfg.num_threads = 1;
  const auto serial = run(g, c, cfg);
  cfg.num_threads = 2;
  const auto two = run(g, c, cfg);
  cfg.num_threads = 0;
  const auto dflt = run(g, c, cfg);
  CHECK(std::memcmp(&serial, &two, sizeof(serial)) == 0);
  CHECK(std::memcmp(&serial, &dflt, sizeof(serial)) == 0);
}

namespace {
struct RefMap {
  std::vector<uint64_t> rows, cols, tiles;
  uint64_t lane32[32] = {}, lane64[64] = {};
  uint64_t count = 0;
  int64_t first = -1, last = -1, longest = 0, longest_start = -1;
};
RefMap reference_map(const std::vector<bool>& mismatch, int64_t rows, int64_t cols, int64_t tr, int64_t tc) {
  RefMap m;
  m.rows.assign(static_cast<std::size_t>(rows), 0);
  m.cols.assign(static_cast<std::size_t>(cols), 0);
  const int64_t gr = (rows + tr - 1) / tr, gc = (cols + tc - 1) / tc;
  m.tiles.assign(static_cast<std::size_t>(gr * gc), 0);
  int64_t run_len = 0;
  for (int64_t i = 0; i < static_cast<int64_t>(mismatch.size()); ++i) {
    if (!mismatch[static_cast<std::size_t>(i)]) {
      run_len = 0;
      continue;
    }
    const int64_t r = i / cols, c = i % cols;
    m.rows[static_cast<std::size_t>(r)]++;
    m.cols[static_cast<std::size_t>(c)]++;
    m.tiles[static_cast<std::size_t>((r / tr) * gc + c / tc)]++;
    m.lane32[i % 32]++;
    m.lane64[i % 64]++;
    m.count++;
    if (m.first < 0) m.first = i;
    m.last = i;
    run_len++;
    if (run_len > m.longest) {
      m.longest = run_len;
      m.longest_start = i - run_len + 1;
    }
  }
  return m;
}
void check_map(const peat_spatial_map_t& map, const RefMap& ref) {
  REQUIRE(map.rows == static_cast<int64_t>(ref.rows.size()));
  REQUIRE(map.cols == static_cast<int64_t>(ref.cols.size()));
  CHECK(std::equal(ref.rows.begin(), ref.rows.end(), map.row_counts));
  CHECK(std::equal(ref.cols.begin(), ref.cols.end(), map.col_counts));
  CHECK(std::equal(ref.tiles.begin(), ref.tiles.end(), map.tile_counts));
  CHECK(std::equal(ref.lane32, ref.lane32 + 32, map.lane32_counts));
  CHECK(std::equal(ref.lane64, ref.lane64 + 64, map.lane64_counts));
  CHECK(map.mismatch_count == ref.count);
  CHECK(map.first_mismatch == ref.first);
  CHECK(map.last_mismatch == ref.last);
  CHECK(map.longest_run == ref.longest);
  CHECK(map.longest_run_start == ref.longest_start);
}
}  // namespace

TEST_CASE("spatial map: rows, columns, tiles, lanes, runs", "[analyzer][map]") {
  std::mt19937_64 rng(21);
  const int64_t rows = 300, cols = 517;  // tiles do not divide: partial edge tiles; > 2 chunks
  const auto n = static_cast<std::size_t>(rows * cols);
  auto gw = words_of(Fmt::F32, random_values(rng, n, 1.0));
  std::vector<uint64_t> cw = gw;
  std::vector<bool> mismatch(n, false);
  std::uniform_int_distribution<std::size_t> pos(0, n - 1);
  for (int i = 0; i < 500; ++i) mismatch[pos(rng)] = true;
  for (std::size_t i = 65530; i < 65546; ++i) mismatch[i] = true;  // a run across the chunk boundary
  for (int64_t r = 0; r < rows; ++r) mismatch[static_cast<std::size_t>(r * cols + 64)] = true;  // a column
  for (std::size_t i = 0; i < n; ++i)
    if (mismatch[i]) cw[i] ^= 0x00400000;  // a large change: fails the tolerance
  const Tensor g(Fmt::F32, gw, {rows, cols}), c(Fmt::F32, cw, {rows, cols});
  auto cfg = default_config();
  cfg.tile_rows = 16;
  cfg.tile_cols = 64;
  peat_spatial_map_t map;
  peat_spatial_map_init(&map);
  const auto s = run(g, c, cfg, &map);
  CHECK(s.tolerance_fail_count == map.mismatch_count);
  check_map(map, reference_map(mismatch, rows, cols, 16, 64));
  CHECK(map.tile_grid_rows == 19);
  CHECK(map.tile_grid_cols == 9);
  CHECK(map.longest_run >= 16);
  CHECK(map.owned != nullptr);

  SECTION("serial gives the same map") {
    cfg.num_threads = 1;
    peat_spatial_map_t serial;
    peat_spatial_map_init(&serial);
    run(g, c, cfg, &serial);
    check_map(serial, reference_map(mismatch, rows, cols, 16, 64));
    peat_spatial_map_release(&serial);
  }
  SECTION("caller-provided buffers") {
    std::vector<uint64_t> rb(rows, 7), cb(cols, 7), tb(19 * 9, 7);
    peat_spatial_map_t mine;
    peat_spatial_map_init(&mine);
    mine.row_counts = rb.data();
    mine.row_capacity = rb.size();
    mine.col_counts = cb.data();
    mine.col_capacity = cb.size();
    mine.tile_counts = tb.data();
    mine.tile_capacity = tb.size();
    run(g, c, cfg, &mine);
    CHECK(mine.owned == nullptr);
    CHECK(mine.row_counts == rb.data());
    check_map(mine, reference_map(mismatch, rows, cols, 16, 64));
    peat_spatial_map_release(&mine);
    CHECK(mine.row_counts == rb.data());  // not ours: left alone
    // Too small.
    mine.tile_capacity = 10;
    peat_signature_t sig;
    peat_signature_init(&sig);
    CHECK(peat_analyze(&g, &c, &cfg, &sig, &mine) == PEAT_STATUS_BUFFER_TOO_SMALL);
    CHECK(std::string(peat_last_error_message()).find("tile_counts") != std::string::npos);
    // Overlapping buffers.
    mine.tile_capacity = tb.size();
    mine.col_counts = rb.data() + 10;
    CHECK(peat_analyze(&g, &c, &cfg, &sig, &mine) == PEAT_STATUS_INVALID_ARGUMENT);
    CHECK(std::string(peat_last_error_message()).find("overlaps") != std::string::npos);
  }
  SECTION("pieces merged with index_base give the whole map") {
    peat_signature_t acc;
    peat_signature_init(&acc);
    peat_spatial_map_t merged;
    peat_spatial_map_init(&merged);
    auto pcfg = cfg;
    pcfg.spatial_rows = rows;
    pcfg.spatial_cols = cols;
    const std::size_t cuts[] = {0, 1000, 65536 + 5, 100000, n};
    // Add pieces out of order: 2, 0, 1, 3 (each touches what is there).
    for (int k : {2, 1, 0, 3}) {
      const std::vector<uint64_t> gp(gw.begin() + cuts[k], gw.begin() + cuts[k + 1]);
      const std::vector<uint64_t> cp(cw.begin() + cuts[k], cw.begin() + cuts[k + 1]);
      pcfg.index_base = static_cast<int64_t>(cuts[k]);
      const Tensor gt(Fmt::F32, gp), ct(Fmt::F32, cp);
      const peat_status_t st = peat_analyze_accumulate(&gt, &ct, &pcfg, &acc, &merged);
      INFO(peat_last_error_message());
      REQUIRE(st == PEAT_STATUS_OK);
    }
    check_map(merged, reference_map(mismatch, rows, cols, 16, 64));
    CHECK(acc.tolerance_fail_count == s.tolerance_fail_count);
    // The accumulated map's buffers must not overlap the signature.
    peat_spatial_map_t alias = merged;
    alias.row_counts = reinterpret_cast<uint64_t*>(&acc);
    const Tensor g1(Fmt::F32, {gw[0]}), c1(Fmt::F32, {cw[0]});
    pcfg.index_base = 0;
    CHECK(peat_analyze_accumulate(&g1, &c1, &pcfg, &acc, &alias) == PEAT_STATUS_INVALID_ARGUMENT);
    CHECK(std::string(peat_last_error_message()).find("overlaps") != std::string::npos);
    CHECK(acc.max_abs_error_index == s.max_abs_error_index);
    peat_spatial_map_release(&merged);
  }
  SECTION("bitwise criterion and lane-periodic faults") {
    std::vector<uint64_t> lw = gw;
    std::vector<bool> lane_mismatch(n, false);
    for (std::size_t i = 5; i < n; i += 32) {
      lw[i] ^= 1;  // lowest bit: within tolerance, but bitwise different
      lane_mismatch[i] = true;
    }
    cfg.map_mismatch = PEAT_MISMATCH_BITWISE;
    peat_spatial_map_t lm;
    peat_spatial_map_init(&lm);
    run(g, Tensor(Fmt::F32, lw, {rows, cols}), cfg, &lm);
    check_map(lm, reference_map(lane_mismatch, rows, cols, 16, 64));
    CHECK(lm.lane32_counts[5] == lm.mismatch_count);
    peat_spatial_map_release(&lm);
  }
  peat_spatial_map_release(&map);
  CHECK(map.row_counts == nullptr);
  CHECK(map.owned == nullptr);
}

TEST_CASE("effective mantissa bits and the rounding bound", "[analyzer][metrics]") {
  std::mt19937_64 rng(17);
  auto v = random_values(rng, 20000, 1.0);
  // Candidate: the golden rounded to bf16 / f16, stored as f64.
  for (const auto& [fmt, bits] : {std::pair{Fmt::BF16, 7.0}, std::pair{Fmt::F16, 10.0}}) {
    std::vector<double> rounded(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) rounded[i] = decode(fmt, encode(fmt, v[i]));
    const auto s = run(Tensor(Fmt::F64, words_of(Fmt::F64, v)), Tensor(Fmt::F64, words_of(Fmt::F64, rounded)),
                       default_config());
    double eff = 0;
    REQUIRE(peat_signature_effective_mantissa_bits(&s, 0.99, &eff) == PEAT_STATUS_OK);
    CHECK(eff == bits);
  }
  // Exact candidate: the golden's own bits.
  const auto exact = run(Tensor(Fmt::F32, words_of(Fmt::F32, v)), Tensor(Fmt::F32, words_of(Fmt::F32, v)),
                         default_config());
  double eff = 0;
  REQUIRE(peat_signature_effective_mantissa_bits(&exact, 0.5, &eff) == PEAT_STATUS_OK);
  CHECK(eff == 23);
  CHECK(peat_signature_effective_mantissa_bits(&exact, 0.0, &eff) == PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(peat_signature_effective_mantissa_bits(&exact, 1.5, &eff) == PEAT_STATUS_INVALID_ARGUMENT);

  // Dot products of length K: golden in long double, candidate accumulated in
  // f32 in order. Their difference is within the deterministic bound.
  const int K = 512, outputs = 400;
  std::uniform_real_distribution<double> uni(-1, 1);
  std::vector<double> golden(outputs), cand(outputs);
  for (int o = 0; o < outputs; ++o) {
    long double exact_sum = 0;
    float acc = 0;
    for (int k = 0; k < K; ++k) {
      const float a = static_cast<float>(uni(rng)) + 2.0f, b = static_cast<float>(uni(rng)) + 2.0f;  // no cancellation
      exact_sum += static_cast<long double>(a) * b;
      acc += a * b;
    }
    golden[static_cast<std::size_t>(o)] = static_cast<double>(static_cast<float>(exact_sum));
    cand[static_cast<std::size_t>(o)] = acc;
  }
  auto cfg = default_config();
  cfg.reduction_length = K;
  const auto s = run(Tensor(Fmt::F32, words_of(Fmt::F32, golden)), Tensor(Fmt::F32, words_of(Fmt::F32, cand)), cfg);
  double det = -1, prob = -1;
  REQUIRE(peat_signature_rounding_bound_ratio(&s, &det, &prob) == PEAT_STATUS_OK);
  CHECK(s.unit_roundoff == std::ldexp(1.0, -24));
  CHECK(det > 0);
  CHECK(det <= 1.0);
  CHECK(prob > 0);
  CHECK(prob < det * 2 * K);  // the probabilistic scale is far tighter than gamma_K
  // A candidate off by 1 % is far beyond either bound.
  std::vector<double> off = golden;
  for (auto& x : off) x *= 1.01;
  const auto bad = run(Tensor(Fmt::F32, words_of(Fmt::F32, golden)), Tensor(Fmt::F32, words_of(Fmt::F32, off)), cfg);
  REQUIRE(peat_signature_rounding_bound_ratio(&bad, &det, &prob) == PEAT_STATUS_OK);
  CHECK(det > 10);
  CHECK(prob > 10);
  // K unknown.
  const auto nok = run(Tensor(Fmt::F32, words_of(Fmt::F32, golden)), Tensor(Fmt::F32, words_of(Fmt::F32, off)),
                       default_config());
  CHECK(peat_signature_rounding_bound_ratio(&nok, &det, &prob) == PEAT_STATUS_BAD_STATE);
}

TEST_CASE("bad input: status and a message naming the argument", "[analyzer][errors]") {
  const Tensor g(Fmt::F32, words_of(Fmt::F32, {1, 2, 3, 4}), {2, 2});
  const Tensor c(Fmt::F32, words_of(Fmt::F32, {1, 2, 3, 4}), {2, 2});
  peat_signature_t s;
  peat_signature_init(&s);
  auto msg = [] { return std::string(peat_last_error_message()); };

  const Tensor other(Fmt::F32, words_of(Fmt::F32, {1, 2, 3, 4}), {4, 1});
  CHECK(peat_analyze(&g, &other, nullptr, &s, nullptr) == PEAT_STATUS_SHAPE_MISMATCH);
  CHECK(msg().find("candidate") != std::string::npos);
  const Tensor fewer(Fmt::F32, words_of(Fmt::F32, {1, 2, 3}), {3});
  CHECK(peat_analyze(&g, &fewer, nullptr, &s, nullptr) == PEAT_STATUS_SHAPE_MISMATCH);

  Tensor ints(Fmt::F32, {1, 2, 3, 4}, {2, 2});
  ints.t.dtype = DLDataType{kDLInt, 32, 1};
  CHECK(peat_analyze(&ints, &c, nullptr, &s, nullptr) == PEAT_STATUS_UNSUPPORTED);
  CHECK(msg().find("golden") != std::string::npos);
  CHECK(peat_analyze(&g, &ints, nullptr, &s, nullptr) == PEAT_STATUS_UNSUPPORTED);
  CHECK(msg().find("candidate") != std::string::npos);

  Tensor null_data(Fmt::F32, {1, 2, 3, 4}, {2, 2});
  null_data.t.data = nullptr;
  CHECK(peat_analyze(&g, &null_data, nullptr, &s, nullptr) == PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(msg().find("candidate") != std::string::npos);

  Tensor on_gpu(Fmt::F32, {1, 2, 3, 4}, {2, 2});
  on_gpu.t.device = DLDevice{kDLCUDA, 0};
  CHECK(peat_analyze(&on_gpu, &c, nullptr, &s, nullptr) == PEAT_STATUS_UNSUPPORTED);

  CHECK(peat_analyze(nullptr, &c, nullptr, &s, nullptr) == PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(peat_analyze(&g, &c, nullptr, nullptr, nullptr) == PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(msg().find("out_signature") != std::string::npos);

  peat_signature_t wrong = s;
  wrong.struct_size = 8;
  CHECK(peat_analyze(&g, &c, nullptr, &wrong, nullptr) == PEAT_STATUS_VERSION_MISMATCH);

  auto cfg = default_config();
  cfg.struct_size = sizeof(cfg) + 8;
  CHECK(peat_analyze(&g, &c, &cfg, &s, nullptr) == PEAT_STATUS_VERSION_MISMATCH);
  cfg = default_config();
  cfg.rtol = std::nan("");
  CHECK(peat_analyze(&g, &c, &cfg, &s, nullptr) == PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(msg().find("rtol") != std::string::npos);
  cfg = default_config();
  cfg.reduction_length = -1;
  CHECK(peat_analyze(&g, &c, &cfg, &s, nullptr) == PEAT_STATUS_INVALID_ARGUMENT);
  cfg = default_config();
  cfg.map_mismatch = 7;
  CHECK(peat_analyze(&g, &c, &cfg, &s, nullptr) == PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(msg().find("map_mismatch") != std::string::npos);
  cfg = default_config();
  cfg.tile_rows = 0;
  CHECK(peat_analyze(&g, &c, &cfg, &s, nullptr) == PEAT_STATUS_INVALID_ARGUMENT);

  // Spatial view that does not divide the tensor.
  peat_spatial_map_t map;
  peat_spatial_map_init(&map);
  cfg = default_config();
  cfg.spatial_rows = 3;
  cfg.spatial_cols = 1;
  CHECK(peat_analyze(&g, &c, &cfg, &s, &map) == PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(msg().find("spatial view") != std::string::npos);
  cfg.spatial_rows = 0;
  cfg.spatial_cols = 3;
  CHECK(peat_analyze(&g, &c, &cfg, &s, &map) == PEAT_STATUS_INVALID_ARGUMENT);
  // The same config without a map is fine (the view is not used).
  CHECK(peat_analyze(&g, &c, &cfg, &s, nullptr) == PEAT_STATUS_OK);
  // Map buffer overlapping the output signature.
  cfg = default_config();
  map.row_counts = reinterpret_cast<uint64_t*>(&s);
  map.row_capacity = 2;
  CHECK(peat_analyze(&g, &c, &cfg, &s, &map) == PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(msg().find("overlaps") != std::string::npos);
  map.row_counts = nullptr;
  map.row_capacity = 0;
  peat_spatial_map_t bad_map = map;
  bad_map.struct_size = 3;
  CHECK(peat_analyze(&g, &c, &cfg, &s, &bad_map) == PEAT_STATUS_VERSION_MISMATCH);

  // Merging incompatible signatures.
  peat_signature_t a = run(g, c, default_config());
  const Tensor g64(Fmt::F64, words_of(Fmt::F64, {1, 2, 3, 4}), {2, 2});
  const peat_signature_t b = run(g64, g64, default_config());
  CHECK(peat_signature_merge(&a, &b) == PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(msg().find("dtype") != std::string::npos);
  cfg = default_config();
  cfg.rtol = 0.5;
  const peat_signature_t loose = run(g, c, cfg);
  CHECK(peat_signature_merge(&a, &loose) == PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(peat_signature_merge(&a, nullptr) == PEAT_STATUS_INVALID_ARGUMENT);
  peat_spatial_map_release(&map);
}

TEST_CASE("aggregator: merged signature and decimating series", "[analyzer][aggregator]") {
  peat_aggregator_options_t opts;
  peat_aggregator_options_init(&opts);
  opts.max_ops = 4;
  opts.series_capacity = 4;
  peat_aggregator_t* agg = nullptr;
  REQUIRE(peat_aggregator_create(&opts, &agg) == PEAT_STATUS_OK);
  std::mt19937_64 rng(2);
  peat_signature_t direct;
  peat_signature_init(&direct);
  for (uint64_t call = 0; call < 10; ++call) {
    auto gw = words_of(Fmt::F32, random_values(rng, 100, 1.0));
    auto cw = perturb(Fmt::F32, rng, gw);
    const auto s = run(Tensor(Fmt::F32, gw), Tensor(Fmt::F32, cw), default_config());
    REQUIRE(peat_aggregator_add(agg, 2, static_cast<int64_t>(call / 2), call, &s) == PEAT_STATUS_OK);
    REQUIRE(peat_signature_merge(&direct, &s) == PEAT_STATUS_OK);
  }
  peat_signature_t total;
  peat_signature_init(&total);
  REQUIRE(peat_aggregator_signature(agg, 2, &total) == PEAT_STATUS_OK);
  CHECK(std::memcmp(&total, &direct, sizeof(total)) == 0);
  uint64_t calls = 0;
  REQUIRE(peat_aggregator_call_count(agg, 2, &calls) == PEAT_STATUS_OK);
  CHECK(calls == 10);
  std::size_t count = 0;
  REQUIRE(peat_aggregator_series(agg, 2, nullptr, 0, &count) == PEAT_STATUS_OK);
  REQUIRE(count == 3);
  peat_series_point_t pts[3];
  REQUIRE(peat_aggregator_series(agg, 2, pts, 3, &count) == PEAT_STATUS_OK);
  CHECK(pts[0].call == 0);
  CHECK(pts[1].call == 4);
  CHECK(pts[2].call == 8);
  CHECK(pts[2].step == 4);
  CHECK(pts[1].count == 100);
  // An op never added: empty.
  REQUIRE(peat_aggregator_signature(agg, 1, &total) == PEAT_STATUS_OK);
  CHECK(total.count == 0);
  CHECK(peat_aggregator_add(agg, 4, 0, 0, &direct) == PEAT_STATUS_INVALID_ARGUMENT);
  // A signature of another golden dtype cannot join op 2.
  const Tensor g64(Fmt::F64, words_of(Fmt::F64, {1, 2}));
  const auto other = run(g64, g64, default_config());
  CHECK(peat_aggregator_add(agg, 2, 0, 10, &other) == PEAT_STATUS_INVALID_ARGUMENT);
  REQUIRE(peat_aggregator_call_count(agg, 2, &calls) == PEAT_STATUS_OK);
  CHECK(calls == 10);
  peat_aggregator_destroy(agg);
  opts.series_capacity = 1;
  CHECK(peat_aggregator_create(&opts, &agg) == PEAT_STATUS_INVALID_ARGUMENT);
}

TEST_CASE("loss comparison: final delta, max divergence, first step beyond the band", "[analyzer][outcome]") {
  const std::vector<double> golden = {4.0, 3.0, 2.5, 2.2, 2.0, 1.9, 1.8, 1.75};
  std::vector<double> fi = golden;
  fi[3] = 2.25;  // within 1 %? 0.05 / 2.2 = 2.3 %: beyond
  fi[4] = 2.01;  // 0.5 %: within
  fi[6] = 1.9;   // beyond
  fi[7] = 1.8;   // beyond
  const std::vector<int64_t> steps = {0, 10, 20, 30, 40, 50, 60, 70};
  peat_loss_compare_options_t opts;
  peat_loss_compare_options_init(&opts);
  peat_loss_comparison_t out;
  out.struct_size = sizeof(out);
  REQUIRE(peat_compare_loss(golden.data(), fi.data(), steps.data(), golden.size(), &opts, &out) == PEAT_STATUS_OK);
  CHECK(out.steps == 8);
  CHECK(out.final_delta == Approx(0.05));
  CHECK(out.max_divergence == Approx(0.1));
  CHECK(out.max_divergence_step == 60);
  CHECK(out.first_beyond_step == 30);
  CHECK(out.beyond_count == 3);
  opts.patience = 2;
  REQUIRE(peat_compare_loss(golden.data(), fi.data(), steps.data(), golden.size(), &opts, &out) == PEAT_STATUS_OK);
  CHECK(out.first_beyond_step == 60);
  // A NaN in the FI run diverges without bound.
  fi[5] = std::nan("");
  opts.patience = 1;
  REQUIRE(peat_compare_loss(golden.data(), fi.data(), nullptr, golden.size(), &opts, &out) == PEAT_STATUS_OK);
  CHECK(std::isinf(out.max_divergence));
  CHECK(out.max_divergence_step == 5);
  // Smoothing: a window of 2 averages the spike at step 3 into the band? 0.025/2.35 = 1.06 %: still beyond.
  opts.window = 8;
  opts.band_rel = 0.05;
  fi = golden;
  fi[3] = 2.25;
  REQUIRE(peat_compare_loss(golden.data(), fi.data(), nullptr, golden.size(), &opts, &out) == PEAT_STATUS_OK);
  CHECK(out.first_beyond_step == -1);
  opts.window = 0;
  CHECK(peat_compare_loss(golden.data(), fi.data(), nullptr, golden.size(), &opts, &out) == PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(std::string(peat_last_error_message()).find("window") != std::string::npos);
  CHECK(peat_compare_loss(golden.data(), fi.data(), nullptr, 0, nullptr, &out) == PEAT_STATUS_INVALID_ARGUMENT);
}

TEST_CASE("checkpoint comparison: per-tensor signature", "[analyzer][outcome]") {
  const Tensor w1(Fmt::F32, words_of(Fmt::F32, {1, 2, 3})), w1c(Fmt::F32, words_of(Fmt::F32, {1, 2, 3.5}));
  const Tensor b1(Fmt::F32, words_of(Fmt::F32, {0.5})), b1c(Fmt::F32, words_of(Fmt::F32, {0.5}));
  const Tensor only_g(Fmt::F32, words_of(Fmt::F32, {1}));
  const Tensor only_c(Fmt::F32, words_of(Fmt::F32, {1}));
  const Tensor shaped(Fmt::F32, words_of(Fmt::F32, {1, 2}));
  const peat_named_tensor_t golden[] = {{"w1", &w1}, {"b1", &b1}, {"gone", &only_g}, {"shape", &w1}};
  const peat_named_tensor_t candidate[] = {{"b1", &b1c}, {"w1", &w1c}, {"new", &only_c}, {"shape", &shaped}};
  std::vector<peat_tensor_drift_t> out(5);
  std::vector<peat_signature_t> sigs(5);
  for (auto& sg : sigs) peat_signature_init(&sg);
  std::size_t count = 0;
  CHECK(peat_compare_checkpoints(golden, 4, candidate, 4, nullptr, out.data(), sigs.data(), 2, &count) ==
        PEAT_STATUS_BUFFER_TOO_SMALL);
  CHECK(count == 5);
  REQUIRE(peat_compare_checkpoints(golden, 4, candidate, 4, nullptr, out.data(), sigs.data(), out.size(), &count) ==
          PEAT_STATUS_OK);
  REQUIRE(count == 5);
  CHECK(std::string(out[0].name) == "w1");
  CHECK(out[0].status == PEAT_STATUS_OK);
  CHECK(sigs[0].max_abs_error == 0.5);
  CHECK(sigs[0].max_abs_error_index == 2);
  CHECK(out[1].status == PEAT_STATUS_OK);
  CHECK(sigs[1].count == 1);
  CHECK(sigs[1].bitwise_mismatch_count == 0);
  CHECK(sigs[2].count == 0);
  CHECK(out[2].status == PEAT_STATUS_NOT_FOUND);
  CHECK(out[3].status == PEAT_STATUS_SHAPE_MISMATCH);
  CHECK(std::string(out[4].name) == "new");
  CHECK(out[4].status == PEAT_STATUS_NOT_FOUND);
  CHECK(std::string(peat_last_error_message()).find("gone") != std::string::npos);
  const peat_named_tensor_t dup[] = {{"w1", &w1}, {"w1", &w1}};
  CHECK(peat_compare_checkpoints(dup, 2, candidate, 4, nullptr, out.data(), sigs.data(), out.size(), &count) ==
        PEAT_STATUS_INVALID_ARGUMENT);
  const peat_named_tensor_t noname[] = {{nullptr, &w1}};
  CHECK(peat_compare_checkpoints(noname, 1, candidate, 4, nullptr, out.data(), sigs.data(), out.size(), &count) ==
        PEAT_STATUS_INVALID_ARGUMENT);
  sigs[0].struct_size = 12;
  CHECK(peat_compare_checkpoints(golden, 4, candidate, 4, nullptr, out.data(), sigs.data(), out.size(), &count) ==
        PEAT_STATUS_VERSION_MISMATCH);
  CHECK(peat_compare_checkpoints(golden, 4, candidate, 4, nullptr, out.data(), nullptr, out.size(), &count) ==
        PEAT_STATUS_INVALID_ARGUMENT);
}

TEST_CASE("CPU backend signature_accumulate slot", "[analyzer][backend]") {
  const peat_backend_api_t* api = peat::impl::backend::cpu_backend_table();
  REQUIRE(api->signature_accumulate != nullptr);
  const Tensor g(Fmt::F32, words_of(Fmt::F32, {1, 2, 3, 4})), c(Fmt::F32, words_of(Fmt::F32, {1, 2, 3, 5}));
  peat_signature_t s;
  peat_signature_init(&s);
  REQUIRE(api->signature_accumulate(&g, &c, nullptr, &s, nullptr, nullptr) == PEAT_STATUS_OK);
  REQUIRE(api->signature_accumulate(&g, &c, nullptr, &s, nullptr, nullptr) == PEAT_STATUS_OK);
  CHECK(s.count == 8);
  CHECK(s.value_mismatch_count == 2);
  const Tensor other(Fmt::F32, words_of(Fmt::F32, {1, 2}));
  CHECK(api->signature_accumulate(&g, &other, nullptr, &s, nullptr, nullptr) == PEAT_STATUS_SHAPE_MISMATCH);
  CHECK(std::string(api->last_error()).find("candidate") != std::string::npos);
  CHECK(std::string(api->last_error()).rfind("signature_accumulate: ", 0) == 0);
  CHECK(s.count == 8);
}

namespace {
void simd_fast_path_case(Fmt f);
}

TEST_CASE("SIMD fast path equals the reference (rounding-level data, rare specials)", "[analyzer][simd]") {
  SECTION("f32") { simd_fast_path_case(Fmt::F32); }
  SECTION("bf16") { simd_fast_path_case(Fmt::BF16); }
  SECTION("f16") { simd_fast_path_case(Fmt::F16); }
}

TEST_CASE("SIMD fast path: every Highway target this CPU runs", "[analyzer][simd]") {
  const int64_t supported = hwy::SupportedTargets();
  int tried = 0;
  for (int64_t target = 1; target != 0 && target <= HWY_SCALAR; target <<= 1) {
    if ((supported & target) == 0 || (HWY_TARGETS & target) == 0) continue;
    INFO("Highway target " << hwy::TargetName(target));
    hwy::SetSupportedTargetsForTest(target);
    simd_fast_path_case(Fmt::F32);
    simd_fast_path_case(Fmt::BF16);
    simd_fast_path_case(Fmt::F16);
    ++tried;
  }
  hwy::SetSupportedTargetsForTest(0);  // back to the real CPU
  CHECK(tried >= 2);
}

namespace {
void simd_fast_path_case(Fmt f) {
  // Rounding-level candidates (a few ulps of the golden format) with rare
  // specials, so that almost every vector takes the SIMD path.
  std::mt19937_64 rng(23);
  const std::size_t n = 300000;
  const bool bf = f == Fmt::BF16, h = f == Fmt::F16;
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_int_distribution<int> ulps(-5, 5);
  std::vector<uint64_t> gw(n), cw(n);
  const uint64_t sign = (bf || h) ? 0x8000u : 0x80000000u, nan = bf ? 0x7FC0u : h ? 0x7E00u : 0x7FC00000u;
  const uint64_t big_bit = bf ? 0x0020u : h ? 0x0100u : 0x00200000u;
  for (std::size_t i = 0; i < n; ++i) {
    double g = normal(rng);
    if (i % 5000 == 17) g = std::ldexp(1.5, h ? -14 : -126);  // near the smallest normal
    if (h && i % 6007 == 19) g = std::ldexp(1.5, -20);        // f16 subnormal golden
    const uint64_t gb = encode(f, g);
    uint64_t cb = static_cast<uint64_t>(static_cast<int64_t>(gb) + ulps(rng));
    if ((cb & sign) != (gb & sign) || cb == 0) cb = gb;  // stay on the same side of zero
    if (i % 7919 == 3) cb = gb ^ big_bit;              // large: fails the tolerance
    if (i % 104729 == 5) cb = nan;                     // NaN
    if (i % 50021 == 9) cb = 0;                        // dropped
    if (i % 65536 == 65535) cb = gb ^ sign;            // sign flip at a chunk end
    gw[i] = gb;
    cw[i] = cb;
  }
  const Tensor g(f, gw, {600, 500}), c(f, cw, {600, 500});
  auto cfg = default_config();
  const auto s = run(g, c, cfg);
  const double min_normal = bf  ? std::ldexp(1.0, -126)
                            : h ? std::ldexp(1.0, -14)
                                : static_cast<double>(std::numeric_limits<float>::min());
  const auto ref = reference(f, gw, cw, s.rtol, s.atol, min_normal);
  check_against(s, ref);
  CHECK(s.tolerance_fail_count > 30);
  // A larger ratio threshold and tighter tolerance take other branches.
  cfg.ratio_min_abs = 0.5;
  cfg.rtol = bf ? 1e-3 : h ? 1e-4 : 2e-7;
  cfg.atol = 0;
  const auto s2 = run(g, c, cfg);
  check_against(s2, reference(f, gw, cw, cfg.rtol, 0, 0.5));
  // With the spatial map (tolerance criterion), vectors with failures go scalar.
  peat_spatial_map_t map;
  peat_spatial_map_init(&map);
  const auto s3 = run(g, c, default_config(), &map);
  check_against(s3, ref);
  CHECK(map.mismatch_count == s3.tolerance_fail_count);
  peat_spatial_map_release(&map);
}
}  // namespace

TEST_CASE("device-side accumulate_pair gives the CPU signature", "[analyzer][device]") {
  // The GPU kernels accumulate each thread's pairs with hd::accumulate_pair and
  // merge partials; on the same pairs that must give the CPU's signature.
  std::mt19937_64 rng(31);
  for (Fmt f : kFormats) {
    INFO("format " << static_cast<int>(f));
    const std::size_t n = 20000;
    auto gw = words_of(f, random_values(rng, n, 1.0));
    const auto cw = perturb(f, rng, gw);
    const auto cpu = run(Tensor(f, gw), Tensor(f, cw), default_config());
    // Four "threads", each over a strided subset, merged.
    peat_signature_t parts[4];
    for (auto& p : parts) {
      p = peat::impl::analyzer::empty_signature();
      p.golden_dtype = cpu.golden_dtype;
      p.candidate_dtype = cpu.candidate_dtype;
      p.rtol = cpu.rtol;
      p.atol = cpu.atol;
      p.unit_roundoff = cpu.unit_roundoff;
    }
    const double min_normal = f == Fmt::F16 ? std::ldexp(1.0, -14)
                              : f == Fmt::F64 ? std::numeric_limits<double>::min()
                                              : static_cast<double>(std::numeric_limits<float>::min());
    for (std::size_t i = 0; i < n; ++i) {
      peat::hd::PairInfo p{};
      switch (f) {
        case Fmt::F16:
          p = peat::hd::classify_pair<peat::hd::FormatF16>(static_cast<uint16_t>(gw[i]), static_cast<uint16_t>(cw[i]),
                                                            cpu.rtol, cpu.atol, min_normal);
          break;
        case Fmt::BF16:
          p = peat::hd::classify_pair<peat::hd::FormatBF16>(static_cast<uint16_t>(gw[i]), static_cast<uint16_t>(cw[i]),
                                                             cpu.rtol, cpu.atol, min_normal);
          break;
        case Fmt::F32:
          p = peat::hd::classify_pair<peat::hd::FormatF32>(static_cast<uint32_t>(gw[i]), static_cast<uint32_t>(cw[i]),
                                                            cpu.rtol, cpu.atol, min_normal);
          break;
        case Fmt::F64: p = peat::hd::classify_pair<peat::hd::FormatF64>(gw[i], cw[i], cpu.rtol, cpu.atol, min_normal); break;
      }
      peat::hd::accumulate_pair(parts[i % 4], p, static_cast<int64_t>(i));
    }
    peat_signature_t total = parts[0];
    for (int k = 1; k < 4; ++k) peat::impl::analyzer::merge(total, parts[k]);
    CHECK(std::memcmp(&total, &cpu, sizeof(total)) == 0);
  }
}

TEST_CASE("aggregator: concurrent adds from several threads", "[analyzer][aggregator]") {
  peat_aggregator_t* agg = nullptr;
  REQUIRE(peat_aggregator_create(nullptr, &agg) == PEAT_STATUS_OK);
  const Tensor g(Fmt::F32, words_of(Fmt::F32, {1, 2, 3})), c(Fmt::F32, words_of(Fmt::F32, {1, 2, 4}));
  const auto s = run(g, c, default_config());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) peat_aggregator_add(agg, static_cast<uint32_t>(i % 3), i, static_cast<uint64_t>(t * 500 + i), &s);
    });
  for (auto& th : threads) th.join();
  uint64_t calls = 0, total_calls = 0;
  for (uint32_t op = 0; op < 3; ++op) {
    REQUIRE(peat_aggregator_call_count(agg, op, &calls) == PEAT_STATUS_OK);
    total_calls += calls;
  }
  CHECK(total_calls == 2000);
  peat_signature_t total;
  peat_signature_init(&total);
  REQUIRE(peat_aggregator_signature(agg, 0, &total) == PEAT_STATUS_OK);
  uint64_t op0 = 0;
  REQUIRE(peat_aggregator_call_count(agg, 0, &op0) == PEAT_STATUS_OK);
  CHECK(total.count == 3 * op0);
  CHECK(total.value_mismatch_count == op0);
  peat_aggregator_destroy(agg);
}

TEST_CASE("merging signatures of different candidate dtypes flags them", "[analyzer][merge]") {
  const Tensor g(Fmt::F32, words_of(Fmt::F32, {1, 2})), c16(Fmt::F16, words_of(Fmt::F16, {1, 2})),
      c64(Fmt::F64, words_of(Fmt::F64, {1, 2}));
  auto a = run(g, c16, default_config());
  const auto b = run(g, c64, default_config());
  peat_signature_t ab = a, ba = b;
  REQUIRE(peat_signature_merge(&ab, &b) == PEAT_STATUS_OK);
  REQUIRE(peat_signature_merge(&ba, &a) == PEAT_STATUS_OK);
  CHECK((ab.flags & PEAT_SIGNATURE_FLAG_MIXED_CANDIDATE_DTYPES) != 0);
  CHECK(std::memcmp(&ab, &ba, sizeof(ab)) == 0);
  CHECK(ab.count == 4);
  CHECK(ab.bitwise_mismatch_count == 0);
}
