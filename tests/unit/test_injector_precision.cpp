// Reduced-precision rounding against a plainly written reference: the
// reference enumerates every finite value of the target format, sorted, and
// picks the neighbour by distance (ties to the even encoding) or the one
// below (truncation). Checked for every f16 and bf16 input, a sweep of f32
// and f64 inputs, the values around every format's overflow threshold, and
// through the PRECISION model on tensors of each storage dtype.
#include <catch2/catch.hpp>

#include "injector_test_util.hpp"

#include "precision.h"

#include <algorithm>
#include <map>
#include <random>

using namespace peat_test;

namespace {

struct Reference {
  std::vector<double> values;  // every finite non-negative value, ascending (index = encoding)
  double next_after_max;       // the value one encoding above the largest finite one
  bool has_inf;

  Reference(int exp_bits, int mant_bits, bool e4m3fn) {
    const int bias = (1 << (exp_bits - 1)) - 1;
    const int max_field = (1 << exp_bits) - 1;
    has_inf = !e4m3fn;
    for (int e = 0; e <= max_field; ++e) {
      for (int m = 0; m < (1 << mant_bits); ++m) {
        if (!e4m3fn && e == max_field) break;               // Inf / NaN codes
        if (e4m3fn && e == max_field && m == (1 << mant_bits) - 1) break;  // the NaN code
        const double frac = static_cast<double>(m) / (1 << mant_bits);
        values.push_back(e == 0 ? std::ldexp(frac, 1 - bias) : std::ldexp(1.0 + frac, e - bias));
      }
    }
    const double ulp = values.back() - values[values.size() - 2];
    next_after_max = values.back() + ulp;
  }

  // Rounds x (any double) as the library should.
  double round(double x, bool truncate, bool saturate) const {
    if (std::isnan(x)) return x;
    const double max = values.back();
    const double sign = std::signbit(x) ? -1.0 : 1.0;
    const double a = std::fabs(x);
    const double overflow = saturate ? max : (has_inf ? INFINITY : NAN);
    if (std::isinf(a)) return saturate ? sign * max : (has_inf ? x : NAN);
    if (truncate) {
      if (a >= next_after_max) return sign * max;  // IEEE round-toward-zero never overflows
      const auto it = std::upper_bound(values.begin(), values.end(), a);
      return sign * *(it - 1);
    }
    // Nearest, ties to the even encoding; the encoding after max counts as overflow.
    std::size_t hi = static_cast<std::size_t>(std::lower_bound(values.begin(), values.end(), a) - values.begin());
    if (hi == values.size() && a >= next_after_max) return sign * overflow;
    const double hi_value = hi < values.size() ? values[hi] : next_after_max;
    if (hi_value == a) return sign * a;
    const std::size_t lo = hi - 1;
    const double lo_value = values[lo];
    std::size_t pick;
    if (a - lo_value < hi_value - a) pick = lo;
    else if (a - lo_value > hi_value - a) pick = hi;
    else pick = (lo % 2 == 0) ? lo : hi;
    if (pick >= values.size()) return sign * overflow;
    return sign * values[pick];
  }
};

struct Format {
  peat_float_format_t code;
  const char* name;
  Reference ref;
};

std::vector<Format>& formats() {
  static std::vector<Format> all = {
      {PEAT_FORMAT_BF16, "bf16", Reference(8, 7, false)},     {PEAT_FORMAT_FP16, "fp16", Reference(5, 10, false)},
      {PEAT_FORMAT_TF32, "tf32", Reference(8, 10, false)},    {PEAT_FORMAT_FP8_E4M3, "e4m3", Reference(4, 3, true)},
      {PEAT_FORMAT_FP8_E5M2, "e5m2", Reference(5, 2, false)},
  };
  return all;
}

bool same(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

std::vector<double> test_inputs() {
  std::vector<double> in;
  for (uint32_t h = 0; h < 65536; ++h) in.push_back(peat::hd::f16_to_float(static_cast<uint16_t>(h)));
  for (uint32_t h = 0; h < 65536; ++h) in.push_back(peat::hd::bf16_to_float(static_cast<uint16_t>(h)));
  std::mt19937_64 rng(42);
  for (int i = 0; i < 40000; ++i) {
    const uint64_t bits = rng();
    double d;
    std::memcpy(&d, &bits, 8);
    in.push_back(d);  // any double, all magnitudes
    const uint32_t b32 = static_cast<uint32_t>(rng());
    float f;
    std::memcpy(&f, &b32, 4);
    in.push_back(f);
  }
  // Around every format's thresholds: max, half-way to the next encoding, ties.
  for (const Format& f : formats()) {
    const auto& v = f.ref.values;
    for (std::size_t i : {std::size_t{0}, std::size_t{1}, std::size_t{2}, v.size() / 2, v.size() - 2, v.size() - 1}) {
      const double x = v[i], next = i + 1 < v.size() ? v[i + 1] : f.ref.next_after_max;
      for (double t : {x, (x + next) / 2, std::nextafter((x + next) / 2, 0.0), std::nextafter((x + next) / 2, 1e300),
                       next, f.ref.next_after_max * 1.5})
        in.push_back(t), in.push_back(-t);
    }
  }
  in.push_back(INFINITY);
  in.push_back(-INFINITY);
  in.push_back(NAN);
  in.push_back(5e-324);
  in.push_back(-0.0);
  return in;
}

}  // namespace

TEST_CASE("precision rounding matches the enumerated reference for every format", "[injector][precision]") {
  const std::vector<double> inputs = test_inputs();
  for (const Format& f : formats()) {
    for (peat_rounding_t rounding : {PEAT_ROUND_NEAREST_EVEN, PEAT_ROUND_TRUNCATE}) {
      for (int32_t saturate : {0, 1}) {
        int64_t failures = 0;
        double first_bad = 0;
        for (double x : inputs) {
          double got = 0;
          REQUIRE(peat_inject_round_value(x, f.code, rounding, saturate, &got) == PEAT_STATUS_OK);
          const double want = f.ref.round(x, rounding == PEAT_ROUND_TRUNCATE, saturate != 0);
          if (!same(got, want)) {
            if (failures++ == 0) first_bad = x;
          }
        }
        INFO(f.name << " rounding " << rounding << " saturate " << saturate << " first bad input " << first_bad);
        CHECK(failures == 0);
      }
    }
  }
}

TEST_CASE("precision: known values of each format", "[injector][precision]") {
  double r = 0;
  REQUIRE(peat_inject_round_value(1000.0, PEAT_FORMAT_FP8_E4M3, PEAT_ROUND_NEAREST_EVEN, 0, &r) == PEAT_STATUS_OK);
  CHECK(std::isnan(r));  // E4M3FN has no Inf: overflow is NaN
  REQUIRE(peat_inject_round_value(1000.0, PEAT_FORMAT_FP8_E4M3, PEAT_ROUND_NEAREST_EVEN, 1, &r) == PEAT_STATUS_OK);
  CHECK(r == 448.0);
  REQUIRE(peat_inject_round_value(464.0, PEAT_FORMAT_FP8_E4M3, PEAT_ROUND_NEAREST_EVEN, 0, &r) == PEAT_STATUS_OK);
  CHECK(r == 448.0);  // the tie goes to the even encoding 448
  REQUIRE(peat_inject_round_value(61440.0, PEAT_FORMAT_FP8_E5M2, PEAT_ROUND_NEAREST_EVEN, 0, &r) == PEAT_STATUS_OK);
  CHECK(std::isinf(r));
  REQUIRE(peat_inject_round_value(65520.0, PEAT_FORMAT_FP16, PEAT_ROUND_NEAREST_EVEN, 0, &r) == PEAT_STATUS_OK);
  CHECK(std::isinf(r));
  REQUIRE(peat_inject_round_value(65519.0, PEAT_FORMAT_FP16, PEAT_ROUND_NEAREST_EVEN, 0, &r) == PEAT_STATUS_OK);
  CHECK(r == 65504.0);
  REQUIRE(peat_inject_round_value(1e9, PEAT_FORMAT_FP16, PEAT_ROUND_TRUNCATE, 0, &r) == PEAT_STATUS_OK);
  CHECK(r == 65504.0);
  REQUIRE(peat_inject_round_value(1.0 + 1.0 / 1024 + 1.0 / 4096, PEAT_FORMAT_TF32, PEAT_ROUND_NEAREST_EVEN, 0, &r) ==
          PEAT_STATUS_OK);
  CHECK(r == 1.0 + 1.0 / 1024);
  REQUIRE(peat_inject_round_value(1.0 + 3.0 / 256, PEAT_FORMAT_BF16, PEAT_ROUND_NEAREST_EVEN, 0, &r) == PEAT_STATUS_OK);
  CHECK(r == 1.0 + 4.0 / 256);  // tie between 1+2/256 (odd) and 1+4/256 (even): even
  CHECK(peat_inject_round_value(1.0, 7, PEAT_ROUND_NEAREST_EVEN, 0, &r) == PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(peat_inject_round_value(1.0, PEAT_FORMAT_BF16, 3, 0, &r) == PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(peat_inject_round_value(1.0, PEAT_FORMAT_BF16, 0, 0, nullptr) == PEAT_STATUS_INVALID_ARGUMENT);
}

TEST_CASE("bf16 rounding agrees with the foundation's float_to_bf16 on f32 inputs", "[injector][precision]") {
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) {
    const uint32_t bits = static_cast<uint32_t>(rng());
    float f;
    std::memcpy(&f, &bits, 4);
    if (std::isnan(f)) continue;
    const double r = peat::hd::round_to_format(f, peat::hd::format_bf16(), peat::hd::kRoundNearestEven, false);
    const float expect = peat::hd::bf16_to_float(peat::hd::float_to_bf16(f));
    REQUIRE(same(r, expect));
  }
}

TEST_CASE("the PRECISION model on tensors of each storage dtype", "[injector][precision]") {
  // Every f16 and bf16 value, as a tensor, rounded to every format; f32/f64 tensors
  // of random values. Each element must equal the reference result stored back
  // in the tensor's dtype (round to nearest even into that dtype).
  const auto store = [](const HostTensor& like, double v) {
    HostTensor one(like.t.dtype, {1});
    one.set_value(0, v);  // via float: exact for every reference value
    return one.word(0);
  };
  for (DLDataType dtype : {f16(), bf16(), f32(), f64()}) {
    const int64_t n = dtype.bits == 16 ? 65536 : 30000;
    HostTensor x(dtype, {n});
    if (dtype.bits == 16) {
      for (int64_t i = 0; i < n; ++i) x.set_word(i, static_cast<uint64_t>(i));
    } else {
      std::mt19937_64 rng(3);
      for (int64_t i = 0; i < n; ++i) x.set_value(i, std::ldexp(std::uniform_real_distribution<double>(-1, 1)(rng),
                                                                 static_cast<int>(rng() % 40) - 20));
    }
    for (const Format& f : formats()) {
      for (peat_rounding_t rounding : {PEAT_ROUND_NEAREST_EVEN, PEAT_ROUND_TRUNCATE}) {
        peat_inject_spec_t s;
        peat_inject_spec_init(&s, PEAT_INJECT_PRECISION);
        s.format = f.code;
        s.rounding = rounding;
        HostTensor y = x;
        peat_inject_truth_t truth;
        peat_inject_truth_init(&truth);
        REQUIRE(peat_inject_apply(&s, &y.t, nullptr, 0, 0, 0, &truth) == PEAT_STATUS_OK);
        CHECK(truth.model == PEAT_ERROR_MODEL_REDUCED_PRECISION);
        CHECK(check_truth(x, y, truth, n) == "");
        int64_t bad = 0;
        for (int64_t i = 0; i < n; ++i) {
          const double v = x.value(i);
          if (std::isnan(v)) {
            bad += y.word(i) != x.word(i);
            continue;
          }
          const double want = f.ref.round(v, rounding == PEAT_ROUND_TRUNCATE, false);
          // Stored back into the dtype: exact, except a value beyond the dtype's range.
          if (std::isnan(want)) {
            bad += !std::isnan(y.value(i));
            continue;
          }
          bad += store(x, want) != y.word(i);
        }
        INFO(peat_dtype_name(dtype) << " -> " << f.name << " rounding " << rounding);
        CHECK(bad == 0);
      }
    }
  }
}
