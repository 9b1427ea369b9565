#include "peat_trainer/tensor.hpp"

#include "philox.h"

#include <algorithm>
#include <cmath>

namespace peat_trainer {

int64_t shape_numel(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

Tensor::Tensor(std::vector<int64_t> dims, float fill) : shape(std::move(dims)) {
  data.assign(static_cast<size_t>(shape_numel(shape)), fill);
}

void Tensor::resize(std::vector<int64_t> dims) {
  shape = std::move(dims);
  data.resize(static_cast<size_t>(shape_numel(shape)));
}

void Tensor::zero() noexcept { std::fill(data.begin(), data.end(), 0.0f); }

std::string Tensor::shape_string() const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

uint32_t Rng::next_u32() noexcept {
  if (left_ == 0) {
    // Counter: element = block index, call = 0, op = stream.
    const auto block = peat::hd::philox_random(seed_, stream_, 0, counter_++);
    for (int i = 0; i < 4; ++i) words_[i] = block.v[i];
    left_ = 4;
  }
  return words_[--left_];
}

double Rng::uniform() noexcept {
  const uint32_t a = next_u32(), b = next_u32();
  return peat::hd::philox_uniform(a, b);
}

double Rng::uniform(double lo, double hi) noexcept { return lo + (hi - lo) * uniform(); }

double Rng::normal() noexcept {
  double u1 = uniform();
  if (u1 < 1e-300) u1 = 1e-300;
  const double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

int64_t Rng::below(int64_t n) noexcept {
  const uint64_t x = (static_cast<uint64_t>(next_u32()) << 32) | next_u32();
  return static_cast<int64_t>(x % static_cast<uint64_t>(n));
}

}  // namespace peat_trainer
