// The training-impact noise band (peat_noise_band_*): the band from golden
// reruns, the verdict and effect size of a candidate run, parameter drift,
// and the argument errors, through the C API.
#include <peat/peat.h>

#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

namespace {

struct Band {
  peat_noise_band_t* band = nullptr;
  ~Band() { peat_noise_band_destroy(band); }
};

peat_impact_t judge(const peat_noise_band_t* band, const std::vector<double>& loss, const int64_t* steps = nullptr,
                    double drift = NAN) {
  peat_impact_t out{};
  out.struct_size = sizeof out;
  REQUIRE(peat_noise_band_judge(band, loss.data(), loss.size(), steps, drift, &out) == PEAT_STATUS_OK);
  return out;
}

}  // namespace

TEST_CASE("noise band: band from reruns, verdicts in band units", "[analyzer][noise_band]") {
  // Reference 2.0 - 0.1 t; the reruns differ by +0.03 and -0.05 from step 2 on.
  std::vector<double> ref(10), r1(10), r2(10);
  for (int t = 0; t < 10; ++t) {
    ref[t] = 2.0 - 0.1 * t;
    r1[t] = ref[t] + (t >= 2 ? 0.03 : 0.0);
    r2[t] = ref[t] - (t >= 2 ? 0.05 : 0.0);
  }
  peat_noise_band_options_t o;
  peat_noise_band_options_init(&o);
  CHECK(o.window == 20);
  CHECK(o.widen == 0);
  CHECK(o.patience == 1);
  o.window = 1;
  Band b;
  REQUIRE(peat_noise_band_create(ref.data(), ref.size(), &o, &b.band) == PEAT_STATUS_OK);
  // No rerun yet: nothing to judge against.
  peat_impact_t out{};
  out.struct_size = sizeof out;
  CHECK(peat_noise_band_judge(b.band, ref.data(), ref.size(), nullptr, NAN, &out) == PEAT_STATUS_BAD_STATE);
  REQUIRE(peat_noise_band_add_rerun(b.band, r1.data(), r1.size(), 0.01) == PEAT_STATUS_OK);
  REQUIRE(peat_noise_band_add_rerun(b.band, r2.data(), r2.size(), 0.02) == PEAT_STATUS_OK);
  peat_noise_band_info_t info{};
  info.struct_size = sizeof info;
  REQUIRE(peat_noise_band_info(b.band, &info) == PEAT_STATUS_OK);
  CHECK(info.reruns == 2);
  CHECK(info.length == 10);
  CHECK(info.factor == Approx(1.75));  // 1 + 1.5 / k
  CHECK(info.max_deviation == Approx(0.05));
  CHECK(info.band == Approx(0.0875));
  CHECK(info.max_param_drift == 0.02);

  // The reference itself: inside, effect 0.
  peat_impact_t same = judge(b.band, ref, nullptr, 0.0);
  CHECK(same.verdict == PEAT_IMPACT_INSIDE_NOISE);
  CHECK(same.effect == 0);
  CHECK(same.first_beyond_step == -1);
  CHECK(same.param_drift_ratio == 0);
  CHECK(same.steps == 10);

  // 0.07 from step 5 on: inside (0.8 band units); 0.175 from step 6: outside (2 units).
  std::vector<double> near = ref, far = ref;
  for (int t = 5; t < 10; ++t) near[t] += 0.07;
  for (int t = 6; t < 10; ++t) far[t] -= 0.175;
  const peat_impact_t in = judge(b.band, near, nullptr, 0.01);
  CHECK(in.verdict == PEAT_IMPACT_INSIDE_NOISE);
  CHECK(in.effect == Approx(0.8));
  CHECK(in.param_drift_ratio == Approx(0.5));
  const int64_t steps[] = {100, 101, 102, 103, 104, 105, 106, 107, 108, 109};
  const peat_impact_t out_far = judge(b.band, far, steps, 0.06);
  CHECK(out_far.verdict == PEAT_IMPACT_OUTSIDE_NOISE);
  CHECK(out_far.effect == Approx(2.0));
  CHECK(out_far.first_beyond_step == 106);
  CHECK(out_far.beyond_count == 4);
  CHECK(out_far.final_delta == Approx(-0.175));
  CHECK(out_far.param_drift_ratio == Approx(3.0));

  // A NaN loss where the reference is finite is beyond any band.
  std::vector<double> nan_run = ref;
  nan_run[7] = NAN;
  const peat_impact_t bad = judge(b.band, nan_run);
  CHECK(bad.verdict == PEAT_IMPACT_OUTSIDE_NOISE);
  CHECK(std::isinf(bad.effect));
  CHECK(bad.first_beyond_step == 7);
}

TEST_CASE("noise band: moving average, patience, explicit widen, short series", "[analyzer][noise_band]") {
  std::vector<double> ref(8, 1.0), rerun(8, 1.0);
  rerun[3] = 1.4;  // one spike: 0.1 after a window of 4
  peat_noise_band_options_t o;
  peat_noise_band_options_init(&o);
  o.window = 4;
  o.widen = 1.0;
  o.patience = 2;
  Band b;
  REQUIRE(peat_noise_band_create(ref.data(), ref.size(), &o, &b.band) == PEAT_STATUS_OK);
  REQUIRE(peat_noise_band_add_rerun(b.band, rerun.data(), rerun.size(), NAN) == PEAT_STATUS_OK);
  peat_noise_band_info_t info{};
  info.struct_size = sizeof info;
  REQUIRE(peat_noise_band_info(b.band, &info) == PEAT_STATUS_OK);
  CHECK(info.factor == 1.0);
  CHECK(info.max_deviation == Approx(0.1));
  CHECK(std::isnan(info.max_param_drift));
  // Steps 0..2 average fewer than 4 losses and are not compared.
  std::vector<double> e2 = ref;
  e2[5] = 1.8;  // 0.2 over steps 5..7 (window 4): beyond for 3 steps, patience 2
  const peat_impact_t a = judge(b.band, e2);
  CHECK(a.verdict == PEAT_IMPACT_OUTSIDE_NOISE);
  CHECK(a.first_beyond_step == 5);
  CHECK(a.steps == 5);
  CHECK(std::isnan(a.param_drift_ratio));
  std::vector<double> one = ref;
  one[7] = 1.8;  // beyond on the last step only: patience 2 keeps it inside
  CHECK(judge(b.band, one).verdict == PEAT_IMPACT_INSIDE_NOISE);
  // A candidate shorter than the window compares its last point only.
  const peat_impact_t s = judge(b.band, std::vector<double>{1.0, 1.0});
  CHECK(s.steps == 1);
  CHECK(s.verdict == PEAT_IMPACT_INSIDE_NOISE);
}

TEST_CASE("noise band: argument errors name the argument", "[analyzer][noise_band]") {
  const std::vector<double> ref = {1.0, 0.9, 0.8};
  peat_noise_band_t* band = nullptr;
  CHECK(peat_noise_band_create(ref.data(), 0, nullptr, &band) == PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(peat_noise_band_create(ref.data(), ref.size(), nullptr, nullptr) == PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(std::string(peat_last_error_message()).find("out_band") != std::string::npos);
  const std::vector<double> nan_ref = {1.0, NAN};
  CHECK(peat_noise_band_create(nan_ref.data(), nan_ref.size(), nullptr, &band) == PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(std::string(peat_last_error_message()).find("reference[1]") != std::string::npos);
  peat_noise_band_options_t o;
  peat_noise_band_options_init(&o);
  o.widen = 0.5;
  CHECK(peat_noise_band_create(ref.data(), ref.size(), &o, &band) == PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(std::string(peat_last_error_message()).find("widen") != std::string::npos);
  o.widen = 0;
  o.window = 0;
  CHECK(peat_noise_band_create(ref.data(), ref.size(), &o, &band) == PEAT_STATUS_INVALID_ARGUMENT);
  o.window = 2;
  o.struct_size = sizeof o + 8;
  CHECK(peat_noise_band_create(ref.data(), ref.size(), &o, &band) == PEAT_STATUS_VERSION_MISMATCH);
  Band b;
  REQUIRE(peat_noise_band_create(ref.data(), ref.size(), nullptr, &b.band) == PEAT_STATUS_OK);
  CHECK(peat_noise_band_add_rerun(b.band, ref.data(), ref.size(), -1.0) == PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(std::string(peat_last_error_message()).find("param_drift") != std::string::npos);
  CHECK(peat_noise_band_add_rerun(b.band, nan_ref.data(), nan_ref.size(), NAN) == PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(peat_noise_band_add_rerun(b.band, nullptr, 3, NAN) == PEAT_STATUS_INVALID_ARGUMENT);
  REQUIRE(peat_noise_band_add_rerun(b.band, ref.data(), ref.size(), NAN) == PEAT_STATUS_OK);
  peat_impact_t out{};
  out.struct_size = 8;
  CHECK(peat_noise_band_judge(b.band, ref.data(), ref.size(), nullptr, NAN, &out) == PEAT_STATUS_VERSION_MISMATCH);
  out.struct_size = sizeof out;
  CHECK(peat_noise_band_judge(b.band, ref.data(), 0, nullptr, NAN, &out) == PEAT_STATUS_INVALID_ARGUMENT);
  // Identical reruns: a zero band; the reference is inside, any difference outside.
  CHECK(judge(b.band, ref).verdict == PEAT_IMPACT_INSIDE_NOISE);
  const peat_impact_t d = judge(b.band, std::vector<double>{1.0, 0.9, 0.81});
  CHECK(d.verdict == PEAT_IMPACT_OUTSIDE_NOISE);
  CHECK(std::isinf(d.effect));
  peat_noise_band_destroy(nullptr);
}
