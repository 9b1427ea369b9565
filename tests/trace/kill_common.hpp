// The deterministic content the kill-test child records, so the parent can
// check every recovered record bit for bit.
#pragma once

#include <cstdint>
#include <vector>

namespace peat_kill {

// Op record i carries an f32 tensor of elements(i) values value(i, j), then
// the tensor of record i - 1 again (of record 0 for record 0).
// Every 3rd record is large (4 MiB), so that kills also land inside a write.
inline int64_t elements(uint64_t i) {
  return i % 3 == 2 ? (int64_t{1} << 20) : 1 + static_cast<int64_t>((i * 7919u) % 3000u);
}
inline float value(uint64_t i, int64_t j) {
  return static_cast<float>(static_cast<int64_t>(i) * 3 - j) * 0.015625f;
}
// Bytes from which the profiler stores a repeated tensor as a reference.
inline constexpr int64_t kReferenceMinBytes = 4096;
inline std::vector<float> tensor(uint64_t i) {
  std::vector<float> v(static_cast<std::size_t>(elements(i)));
  for (int64_t j = 0; j < elements(i); ++j) v[static_cast<std::size_t>(j)] = value(i, j);
  return v;
}

// inputs[2] of record i (trials with the zstd codec): version i of a weight,
// each a small relative update of the one before, so the profiler writes it
// as an XOR delta (format 1.3) against the version it stored whole.
inline constexpr int64_t kWeightElements = 2048;
inline std::vector<float> weight(uint64_t i) {
  std::vector<float> v(static_cast<std::size_t>(kWeightElements));
  uint32_t h = 12345u;
  for (std::size_t j = 0; j < v.size(); ++j) {
    h = h * 1664525u + 1013904223u;
    const float w0 = (static_cast<float>(h >> 8) / 8388608.f - 1.f) * 0.05f;
    v[j] = w0 * (1.f + 1e-4f * static_cast<float>((i * (j + 1)) % 7));
  }
  return v;
}

}  // namespace peat_kill
