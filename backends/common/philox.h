// philox.h — Philox4x32-10, the counter-based generator behind every random
// choice PEAT makes (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
// SC'11; the constants are those of Random123).
//
// A counter-based generator has no state to share: the random word for element i
// of call c of op o under seed s is a pure function of (s, o, c, i). That is what
// makes an injection spec give the same bits on every run, thread split and
// backend (DESIGN.md §6). The key is the 64-bit seed; the counter is
// (element low, element high, call, op).
#pragma once

#include "backends/common/peat_hd.h"

#include <cstdint>

namespace peat::hd {

struct Philox4x32 {
  uint32_t v[4];
};

PEAT_HD void philox_mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  const uint64_t product = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(product >> 32);
  lo = static_cast<uint32_t>(product);
}

// One Philox4x32-10 block: 10 rounds over the counter with the key bumped by the
// Weyl constants between rounds.
PEAT_HD Philox4x32 philox4x32_10(Philox4x32 counter, uint32_t key0, uint32_t key1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  uint32_t* c = counter.v;
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    philox_mulhilo(kM0, c[0], hi0, lo0);
    philox_mulhilo(kM1, c[2], hi1, lo1);
    const uint32_t n0 = hi1 ^ c[1] ^ key0;
    const uint32_t n2 = hi0 ^ c[3] ^ key1;
    c[0] = n0;
    c[1] = lo1;
    c[2] = n2;
    c[3] = lo0;
    key0 += kW0;
    key1 += kW1;
  }
  return counter;
}

// The four random words for (seed, op, call, element).
PEAT_HD Philox4x32 philox_random(uint64_t seed, uint32_t op, uint32_t call, uint64_t element) {
  Philox4x32 counter{{static_cast<uint32_t>(element), static_cast<uint32_t>(element >> 32), call, op}};
  return philox4x32_10(counter, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

// A uniform double in [0, 1) from two words (53 random bits).
PEAT_HD double philox_uniform(uint32_t w0, uint32_t w1) {
  const uint64_t bits = (static_cast<uint64_t>(w0) << 21) ^ (static_cast<uint64_t>(w1) >> 11);
  return static_cast<double>(bits & ((uint64_t{1} << 53) - 1)) * (1.0 / 9007199254740992.0);
}

}  // namespace peat::hd
