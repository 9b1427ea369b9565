// tensor.hpp — the trainer's dense float tensor and its counter-based RNG.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace peat_trainer {

// A contiguous row-major float tensor. Activations are NHWC: [batch, height, width, channels].
struct Tensor {
  std::vector<int64_t> shape;
  std::vector<float> data;

  Tensor() = default;
  explicit Tensor(std::vector<int64_t> dims, float fill = 0.0f);
  int64_t numel() const noexcept { return static_cast<int64_t>(data.size()); }
  int64_t dim(size_t i) const { return shape.at(i); }
  float* ptr() noexcept { return data.data(); }
  const float* ptr() const noexcept { return data.data(); }
  // Sets the shape (and size, zero-filling new elements); keeps the allocation when it fits.
  void resize(std::vector<int64_t> dims);
  void zero() noexcept;
  std::string shape_string() const;
};

int64_t shape_numel(const std::vector<int64_t>& dims);

// A stream of random numbers from Philox4x32-10 (backends/common/philox.h) keyed
// by (seed, stream): the same (seed, stream) gives the same numbers on every
// platform and compiler (no std:: distributions involved).
class Rng {
 public:
  Rng(uint64_t seed, uint32_t stream) noexcept : seed_(seed), stream_(stream) {}
  uint32_t next_u32() noexcept;
  double uniform() noexcept;                     // [0, 1)
  double uniform(double lo, double hi) noexcept; // [lo, hi)
  double normal() noexcept;                      // standard normal (Box-Muller)
  int64_t below(int64_t n) noexcept;             // integer in [0, n), n > 0

 private:
  uint64_t seed_;
  uint32_t stream_;
  uint64_t counter_ = 0;
  uint32_t words_[4] = {0, 0, 0, 0};
  int left_ = 0;
};

}  // namespace peat_trainer
