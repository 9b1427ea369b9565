// Reads typed values off the front of a fuzz input. Past the end every read
// yields zeros, so a harness never needs to check lengths itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace peat::fuzz {

class Input {
 public:
  Input(const uint8_t* data, std::size_t size) : p_(data), n_(size) {}

  template <typename T>
  T take() {
    T v{};
    const std::size_t k = sizeof(T) < n_ ? sizeof(T) : n_;
    if (k > 0) std::memcpy(&v, p_, k);
    p_ += k;
    n_ -= k;
    return v;
  }
  // A value in [0, bound) (0 when bound == 0).
  uint64_t below(uint64_t bound) { return bound == 0 ? 0 : take<uint64_t>() % bound; }
  uint8_t byte() { return take<uint8_t>(); }
  std::vector<uint8_t> bytes(std::size_t count) {
    const std::size_t k = count < n_ ? count : n_;
    std::vector<uint8_t> out(p_, p_ + k);
    p_ += k;
    n_ -= k;
    return out;
  }
  std::vector<uint8_t> rest() { return bytes(n_); }
  std::size_t left() const { return n_; }
  const uint8_t* data() const { return p_; }

 private:
  const uint8_t* p_;
  std::size_t n_;
};

}  // namespace peat::fuzz
