// The f16/bf16 conversions of backends/common/float_bits.h against independent
// references: GCC's _Float16 for f16, and a "nearest of the two neighbours,
// ties to even" search in double arithmetic for bf16.
#include <catch2/catch.hpp>

#include "float_bits.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace peat::hd;

namespace {

uint16_t f16_reference(float f) {
  const _Float16 h = static_cast<_Float16>(f);
  uint16_t bits;
  std::memcpy(&bits, &h, 2);
  return bits;
}

// bf16 reference: the two bf16 values around f, pick the nearer (ties to even
// mantissa), with overflow past the largest finite bf16 to Inf.
uint16_t bf16_reference(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t down = static_cast<uint16_t>(x >> 16);  // truncation toward zero
  const uint16_t up = static_cast<uint16_t>(down + 1);   // next magnitude away from zero
  const double value = f;
  const double d_down = std::fabs(value - bf16_to_float(down));
  // Past the largest finite bf16 the "next" value is 2^128 (as if the exponent
  // were unbounded); rounding there gives Inf, as IEEE 754 specifies.
  const double up_value = (up & 0x7FFFu) == 0x7F80u ? std::copysign(std::ldexp(1.0, 128), value)
                                                     : static_cast<double>(bf16_to_float(up));
  const double d_up = std::fabs(up_value - value);
  if (d_down < d_up) return down;
  if (d_up < d_down) return up;
  return (down & 1u) ? up : down;
}

float random_float(std::mt19937& rng) {
  uint32_t bits = rng();
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace

TEST_CASE("f16 -> float is exact for every f16 and round-trips", "[float_bits]") {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = f16_to_float(static_cast<uint16_t>(h));
    _Float16 ref;
    const uint16_t h16 = static_cast<uint16_t>(h);
    std::memcpy(&ref, &h16, 2);
    if (std::isnan(f)) {
      REQUIRE(std::isnan(static_cast<float>(ref)));
      REQUIRE(std::isnan(f16_to_float(float_to_f16(f))));
      continue;
    }
    REQUIRE(f == static_cast<float>(ref));
    REQUIRE(std::signbit(f) == std::signbit(static_cast<float>(ref)));
    REQUIRE(float_to_f16(f) == h16);
  }
}

TEST_CASE("float -> f16 rounds to nearest even like the compiler's _Float16", "[float_bits]") {
  std::mt19937 rng(7);
  for (int i = 0; i < 500'000; ++i) {
    const float f = random_float(rng);
    if (std::isnan(f)) {
      REQUIRE(std::isnan(f16_to_float(float_to_f16(f))));
      continue;
    }
    INFO("f = " << f);
    REQUIRE(float_to_f16(f) == f16_reference(f));
  }
  // The boundaries: halfway cases, subnormals, overflow.
  for (float f : {65504.0f, 65519.99f, 65520.0f, 1e9f, 5.9604645e-8f, 2.9802322e-8f, 2.9802326e-8f,
                  6.1035156e-5f, 6.1035e-5f, -0.0f, 1.0009765625f, 1.00048828125f, 1.00146484375f}) {
    INFO("f = " << f);
    REQUIRE(float_to_f16(f) == f16_reference(f));
  }
}

TEST_CASE("float -> bf16 picks the nearer neighbour, ties to even", "[float_bits]") {
  std::mt19937 rng(11);
  for (int i = 0; i < 500'000; ++i) {
    const float f = random_float(rng);
    if (std::isnan(f)) {
      const uint16_t b = float_to_bf16(f);
      REQUIRE(std::isnan(bf16_to_float(b)));
      continue;
    }
    if (std::isinf(f)) {
      REQUIRE(bf16_to_float(float_to_bf16(f)) == f);
      continue;
    }
    INFO("f = " << f);
    REQUIRE(float_to_bf16(f) == bf16_reference(f));
  }
  REQUIRE(bf16_to_float(float_to_bf16(std::numeric_limits<float>::max())) == std::numeric_limits<float>::infinity());
  REQUIRE(float_to_bf16(1.0f) == 0x3F80u);
  // 1 + 2^-8 is exactly halfway between 1 and 1 + 2^-7: ties to the even one, 1.
  REQUIRE(float_to_bf16(1.00390625f) == 0x3F80u);
  REQUIRE(float_to_bf16(1.01171875f) == 0x3F82u);  // 1 + 3*2^-8: tie, rounds up to even
}
