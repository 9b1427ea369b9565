// Philox4x32-10 against the known-answer vectors published with Random123.
#include <catch2/catch.hpp>

#include "philox.h"

#include <set>

using peat::hd::Philox4x32;
using peat::hd::philox4x32_10;

TEST_CASE("Philox4x32-10 matches the Random123 known-answer vectors", "[philox]") {
  const Philox4x32 zero = philox4x32_10({{0, 0, 0, 0}}, 0, 0);
  CHECK(zero.v[0] == 0x6627e8d5u);
  CHECK(zero.v[1] == 0xe169c58du);
  CHECK(zero.v[2] == 0xbc57ac4cu);
  CHECK(zero.v[3] == 0x9b00dbd8u);

  const Philox4x32 ones = philox4x32_10({{~0u, ~0u, ~0u, ~0u}}, ~0u, ~0u);
  CHECK(ones.v[0] == 0x408f276du);
  CHECK(ones.v[1] == 0x41c83b0eu);
  CHECK(ones.v[2] == 0xa20bc7c6u);
  CHECK(ones.v[3] == 0x6d5451fdu);

  const Philox4x32 pi = philox4x32_10({{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}}, 0xa4093822u, 0x299f31d0u);
  CHECK(pi.v[0] == 0xd16cfe09u);
  CHECK(pi.v[1] == 0x94fdccebu);
  CHECK(pi.v[2] == 0x5001e420u);
  CHECK(pi.v[3] == 0x24126ea1u);
}

TEST_CASE("philox_random separates seed, op, call and element", "[philox]") {
  std::set<uint32_t> words;
  for (uint64_t seed : {1ull, 2ull})
    for (uint32_t op : {0u, 1u})
      for (uint32_t call : {0u, 1u})
        for (uint64_t element : {0ull, 1ull, (1ull << 32)})
          words.insert(peat::hd::philox_random(seed, op, call, element).v[0]);
  CHECK(words.size() == 24);  // every key/counter combination gives a different word
  // Same inputs, same output: the generator has no state.
  CHECK(peat::hd::philox_random(5, 3, 2, 1).v[2] == peat::hd::philox_random(5, 3, 2, 1).v[2]);
}

TEST_CASE("philox_uniform lies in the half-open unit interval and is roughly uniform", "[philox]") {
  double sum = 0;
  constexpr int kN = 100000;
  for (int i = 0; i < kN; ++i) {
    const auto r = peat::hd::philox_random(9, 0, 0, static_cast<uint64_t>(i));
    const double u = peat::hd::philox_uniform(r.v[0], r.v[1]);
    REQUIRE(u >= 0.0);
    REQUIRE(u < 1.0);
    sum += u;
  }
  // Mean of kN uniforms: 0.5 with standard deviation sqrt(1/12/kN) ~ 0.0009; allow 5 sigma.
  CHECK(std::abs(sum / kN - 0.5) < 0.0046);
}
