// Unit tests of the Detector's rules on signatures of constructed tensor pairs,
// each checked against the model and parameters a plainly written reference
// (the construction itself) implies.
#include <catch2/catch.hpp>

#include <peat/peat.h>

#include "detector/detector.hpp"
#include "exact_sum.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <cstring>
#include <random>
#include <vector>

namespace {

struct Pair {
  std::vector<float> g, c;
  int64_t rows, cols;
};

Pair random_pair(int64_t rows, int64_t cols, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0, 1);
  Pair p{{}, {}, rows, cols};
  p.g.resize(static_cast<size_t>(rows * cols));
  for (auto& x : p.g) x = nd(rng);
  p.c = p.g;
  return p;
}

// DLTensor views of a pair as rows x cols f32 (they point into p and into this object).
struct PairViews {
  int64_t shape[2];
  DLTensor g{}, c{};
  explicit PairViews(Pair& p) : shape{p.rows, p.cols} {
    g.data = p.g.data();
    g.device = DLDevice{kDLCPU, 0};
    g.ndim = 2;
    g.dtype = DLDataType{kDLFloat, 32, 1};
    g.shape = shape;
    c = g;
    c.data = p.c.data();
  }
  PairViews(const PairViews&) = delete;
  PairViews& operator=(const PairViews&) = delete;
};

// The signature of a pair under the default config.
peat_signature_t signature_of(Pair& p) {
  const PairViews v(p);
  peat_signature_t sig;
  peat_signature_init(&sig);
  REQUIRE(peat_analyze(&v.g, &v.c, nullptr, &sig, nullptr) == PEAT_STATUS_OK);
  return sig;
}

peat_detection_t detect(Pair& p, peat_detect_context_t ctx, int64_t K = 0, bool with_map = true) {
  const PairViews v(p);
  peat_signature_config_t cfg;
  peat_signature_config_init(&cfg);
  cfg.map_mismatch = PEAT_MISMATCH_BITWISE;
  cfg.reduction_length = K;
  peat_signature_t sig;
  peat_signature_init(&sig);
  peat_spatial_map_t map;
  peat_spatial_map_init(&map);
  REQUIRE(peat_analyze(&v.g, &v.c, &cfg, &sig, &map) == PEAT_STATUS_OK);
  if (with_map) ctx.map = &map;
  peat_detection_t det;
  peat_detection_init(&det);
  REQUIRE(peat_detect(&sig, &ctx, &det) == PEAT_STATUS_OK);
  peat_spatial_map_release(&map);
  return det;
}

peat_detect_context_t context() {
  peat_detect_context_t ctx;
  peat_detect_context_init(&ctx);
  return ctx;
}

void set_bit(float& v, int bit, int value) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  b = value ? (b | (1u << bit)) : (b & ~(1u << bit));
  std::memcpy(&v, &b, 4);
}

}  // namespace

TEST_CASE("detector: stuck-at bit in one lane of 32 gives STUCK_AT with bit, polarity and lane", "[detector]") {
  Pair p = random_pair(64, 64, 1);
  for (size_t i = 5; i < p.c.size(); i += 32) set_bit(p.c[i], 17, 1);
  const peat_detection_t d = detect(p, context());
  REQUIRE(d.verdict_count >= 1);
  CHECK(d.verdicts[0].model == PEAT_ERROR_MODEL_STUCK_AT);
  CHECK(d.verdicts[0].bit == 17);
  CHECK(d.verdicts[0].polarity == 1);
  CHECK(d.verdicts[0].lane_period == 32);
  CHECK(d.verdicts[0].lane == 5);
}

TEST_CASE("detector: values rounded to bf16 give REDUCED_PRECISION, nearest format bf16", "[detector]") {
  Pair p = random_pair(32, 32, 2);
  for (auto& v : p.c) {
    double r = 0;
    REQUIRE(peat_inject_round_value(v, PEAT_FORMAT_BF16, PEAT_ROUND_NEAREST_EVEN, 0, &r) == PEAT_STATUS_OK);
    v = static_cast<float>(r);
  }
  const peat_detection_t d = detect(p, context());
  CHECK(d.verdicts[0].model == PEAT_ERROR_MODEL_REDUCED_PRECISION);
  CHECK(d.verdicts[0].nearest_format == PEAT_FORMAT_BF16);
  CHECK(std::fabs(d.verdicts[0].effective_mantissa_bits - 7) <= 1);
}

TEST_CASE("detector: bf16 rounding merged over records of different magnitudes is no bit flip", "[detector]") {
  // A small record of values 1000x larger than the rest: its largest rounding
  // error stands far above the RMS absolute error of the others, but not in
  // relative terms, so it is no outlier.
  auto bf16_signature = [](int64_t n, float scale, uint64_t seed) {
    Pair p = random_pair(1, n, seed);
    for (auto& v : p.g) v *= scale;
    for (auto& v : p.c) {
      v *= scale;
      double r = 0;
      REQUIRE(peat_inject_round_value(v, PEAT_FORMAT_BF16, PEAT_ROUND_NEAREST_EVEN, 0, &r) == PEAT_STATUS_OK);
      v = static_cast<float>(r);
    }
    return signature_of(p);
  };
  peat_signature_t merged = bf16_signature(4096, 1.0f, 11);
  const peat_signature_t large = bf16_signature(4, 1000.0f, 12);
  REQUIRE(peat_signature_merge(&merged, &large) == PEAT_STATUS_OK);
  // The absolute criterion alone would call it an outlier (the premise of this test).
  const double max2 = merged.max_abs_error * merged.max_abs_error;
  double sum_sq = 0;
  REQUIRE(peat_exact_sum_value(&merged.sum_sq_error, &sum_sq) == PEAT_STATUS_OK);
  const double rest_rms = std::sqrt((sum_sq - max2) / static_cast<double>(merged.value_mismatch_count - 1));
  REQUIRE(merged.max_abs_error >= 32 * rest_rms);

  const peat_detect_context_t ctx = context();
  peat_detection_t d;
  peat_detection_init(&d);
  REQUIRE(peat_detect(&merged, &ctx, &d) == PEAT_STATUS_OK);
  REQUIRE(d.verdict_count >= 1);
  CHECK(d.verdicts[0].model == PEAT_ERROR_MODEL_REDUCED_PRECISION);
  CHECK(d.verdicts[0].nearest_format == PEAT_FORMAT_BF16);
  for (int i = 0; i < static_cast<int>(d.verdict_count); ++i) {
    CHECK(d.verdicts[i].model != PEAT_ERROR_MODEL_BITFLIP_SINGLE);
    CHECK(d.verdicts[i].model != PEAT_ERROR_MODEL_BITFLIP_MULTI);
  }

  // A real flip of an exponent bit in the small-valued record still stands out.
  peat_signature_t flipped = bf16_signature(4096, 1.0f, 11);
  {
    Pair p = random_pair(1, 8, 13);
    p.c[3] *= 4.0f;  // exponent + 2: relative error 3
    const peat_signature_t sig = signature_of(p);
    REQUIRE(peat_signature_merge(&flipped, &sig) == PEAT_STATUS_OK);
  }
  REQUIRE(peat_detect(&flipped, &ctx, &d) == PEAT_STATUS_OK);
  REQUIRE(d.verdict_count >= 2);
  CHECK((d.verdicts[0].model == PEAT_ERROR_MODEL_BITFLIP_SINGLE || d.verdicts[0].model == PEAT_ERROR_MODEL_BITFLIP_MULTI));
}

TEST_CASE("detector: a reordered dot product is ROUNDING within sqrt(K) u, and a flip on it comes first", "[detector]") {
  const int64_t M = 16, N = 16, K = 256;
  std::mt19937_64 rng(3);
  std::normal_distribution<float> nd(0, 1);
  std::vector<float> A(M * K), B(K * N);
  for (auto& x : A) x = nd(rng);
  for (auto& x : B) x = nd(rng);
  Pair p{std::vector<float>(M * N), std::vector<float>(M * N), M, N};
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float fwd = 0, rev = 0;
      for (int64_t k = 0; k < K; ++k) fwd += A[i * K + k] * B[k * N + j];
      for (int64_t k = K - 1; k >= 0; --k) rev += A[i * K + k] * B[k * N + j];
      p.g[i * N + j] = fwd;
      p.c[i * N + j] = rev;
    }
  peat_detect_context_t ctx = context();
  ctx.op_kind = PEAT_OP_KIND_GEMM;
  ctx.reduction_length = K;
  peat_detection_t d = detect(p, ctx, K);
  CHECK(d.verdicts[0].model == PEAT_ERROR_MODEL_ROUNDING);
  uint32_t b;
  std::memcpy(&b, &p.c[77], 4);
  b ^= 1u << 31;  // sign flip
  std::memcpy(&p.c[77], &b, 4);
  d = detect(p, ctx, K);
  REQUIRE(d.verdict_count >= 2);
  CHECK(d.verdicts[0].model == PEAT_ERROR_MODEL_BITFLIP_SINGLE);
  CHECK(d.verdicts[0].bit == 31);
  CHECK(d.verdicts[0].first_index == 77);
  CHECK(d.verdicts[1].model == PEAT_ERROR_MODEL_ROUNDING);
}

TEST_CASE("detector: new NaN/Inf give NONFINITE, random values GARBAGE, zeros DROPPED_WRITES", "[detector]") {
  Pair p = random_pair(16, 16, 4);
  p.c[3] = NAN;
  p.c[100] = INFINITY;
  peat_detection_t d = detect(p, context());
  CHECK(d.verdicts[0].model == PEAT_ERROR_MODEL_NONFINITE);
  CHECK(d.verdicts[0].elements == 2);
  p.c = p.g;
  for (size_t i = 0; i < p.c.size(); i += 3) p.c[i] = static_cast<float>((i * 7919 % 1000)) / 37.0f - 13.0f;
  d = detect(p, context());
  CHECK(d.verdicts[0].model == PEAT_ERROR_MODEL_GARBAGE);
  p.c = p.g;
  p.c[10] = 0;
  p.c[200] = 0;
  p.c[201] = 0;
  d = detect(p, context());
  CHECK(d.verdicts[0].model == PEAT_ERROR_MODEL_DROPPED_WRITES);
  CHECK(d.verdicts[0].elements == 3);
}

TEST_CASE("detector: a float64 reference widens the rounding allowance", "[detector]") {
  // Candidate: every element moved by 16 to 64 ULP either way: outside "a few
  // ULP" of an elementwise op, inside 4x the golden's own error when that is larger.
  Pair p = random_pair(16, 16, 5);
  for (size_t i = 0; i < p.c.size(); ++i)
    p.c[i] = static_cast<float>(p.g[i] * (1 + (i % 2 ? 1.0 : -1.0) * static_cast<double>(32 + i % 32) * std::ldexp(1.0, -24)));
  peat_detection_t d = detect(p, context());
  CHECK(d.verdicts[0].model == PEAT_ERROR_MODEL_REDUCED_PRECISION);
  // The golden's own error against float64: relative L2 2^-14.
  peat_signature_t ref;
  peat_signature_init(&ref);
  ref.golden_dtype = DLDataType{kDLFloat, 64, 1};
  ref.count = p.g.size();
  ref.finite_count = ref.count;
  ref.ulp_hist[0] = ref.count;
  ref.rel_hist[0] = ref.count;
  ref.xor_popcount_hist[0] = ref.count;
  peat::hd::exact_sum_add(ref.sum_sq_golden, 1.0);
  peat::hd::exact_sum_add(ref.sum_sq_error, std::ldexp(1.0, -28));
  peat_detect_context_t ctx = context();
  ctx.reference = &ref;
  d = detect(p, ctx);
  CHECK(d.verdicts[0].model == PEAT_ERROR_MODEL_ROUNDING);
}

TEST_CASE("detector: validate_signature names the inconsistent field", "[detector]") {
  peat_signature_t s;
  peat_signature_init(&s);
  s.count = 4;
  s.ulp_hist[0] = s.rel_hist[0] = s.xor_popcount_hist[0] = 4;
  CHECK_NOTHROW(peat::impl::detector::validate_signature(s, "s"));
  s.value_mismatch_count = 1;  // more value than bitwise mismatches
  CHECK_THROWS_WITH(peat::impl::detector::validate_signature(s, "s"), Catch::Contains("value_mismatch_count"));
}

TEST_CASE("detector: a mixture that no rule explains is UNKNOWN, scaling by a constant is SCALING", "[detector]") {
  Pair p = random_pair(64, 64, 6);
  for (size_t i = 0; i < p.c.size(); ++i) {
    const size_t h = (i * 2654435761u) % 100;
    if (h < 30) p.c[i] = p.g[i] * 1.001f;
    else if (h < 55) p.c[i] = p.g[i] * 1.3f;
  }
  peat_detection_t d = detect(p, context());
  CHECK(d.verdict_count == 1);
  CHECK(d.verdicts[0].model == PEAT_ERROR_MODEL_UNKNOWN);
  for (size_t i = 0; i < p.c.size(); ++i) p.c[i] = p.g[i] * 3.0f;
  d = detect(p, context());
  CHECK(d.verdicts[0].model == PEAT_ERROR_MODEL_SCALING);
  CHECK(std::fabs(d.verdicts[0].alpha - 3.0) < 1e-6);
}

TEST_CASE("detector: renderers give a JSON schema version and one CSV line per verdict", "[detector]") {
  Pair p = random_pair(8, 8, 7);
  p.c[9] = NAN;
  const peat_detection_t d = detect(p, context());
  const std::string json = peat::impl::detector::render(d, PEAT_RENDER_JSON);
  CHECK(json.find("\"schema_version\": 1") != std::string::npos);
  CHECK(json.find("\"model\": \"NONFINITE\"") != std::string::npos);
  const std::string csv = peat::impl::detector::render(d, PEAT_RENDER_CSV);
  CHECK(static_cast<int>(std::count(csv.begin(), csv.end(), '\n')) == 1 + d.verdict_count);
  CHECK_THROWS(peat::impl::detector::render(d, 7));
}
