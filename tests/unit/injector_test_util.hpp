// Helpers shared by the injector's unit tests: host tensors of the four float
// dtypes, raw storage words, and a plain recomputation of the ground truth
// from the before/after contents.
#pragma once

#include <peat/peat.h>

#include "float_bits.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace peat_test {

inline DLDataType dt(DLDataTypeCode code, int bits) {
  return DLDataType{static_cast<uint8_t>(code), static_cast<uint8_t>(bits), 1};
}
inline DLDataType f16() { return dt(kDLFloat, 16); }
inline DLDataType bf16() { return dt(kDLBfloat, 16); }
inline DLDataType f32() { return dt(kDLFloat, 32); }
inline DLDataType f64() { return dt(kDLFloat, 64); }

// A host tensor owning its storage (raw bytes) and shape.
struct HostTensor {
  std::vector<unsigned char> bytes;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  DLTensor t{};

  HostTensor(DLDataType dtype, std::vector<int64_t> dims) : shape(std::move(dims)) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    bytes.assign(static_cast<std::size_t>(n) * (dtype.bits / 8), 0);
    t.data = bytes.data();
    t.device = DLDevice{kDLCPU, 0};
    t.ndim = static_cast<int32_t>(shape.size());
    t.dtype = dtype;
    t.shape = shape.empty() ? nullptr : shape.data();
  }
  HostTensor(const HostTensor& o) : bytes(o.bytes), shape(o.shape), strides(o.strides), t(o.t) { rebind(); }
  HostTensor& operator=(const HostTensor& o) {
    bytes = o.bytes;
    shape = o.shape;
    strides = o.strides;
    t = o.t;
    rebind();
    return *this;
  }
  void rebind() {
    t.data = bytes.data();
    t.shape = shape.empty() ? nullptr : shape.data();
    t.strides = strides.empty() ? nullptr : strides.data();
  }
  int64_t numel() const { return static_cast<int64_t>(bytes.size()) / (t.dtype.bits / 8); }
  int width() const { return t.dtype.bits; }

  // Storage word of the element at *storage position* i.
  uint64_t word(int64_t i) const {
    uint64_t w = 0;
    std::memcpy(&w, bytes.data() + i * (width() / 8), static_cast<std::size_t>(width() / 8));
    return w;
  }
  void set_word(int64_t i, uint64_t w) { std::memcpy(bytes.data() + i * (width() / 8), &w, static_cast<std::size_t>(width() / 8)); }

  double value(int64_t i) const { return to_double(word(i)); }
  double to_double(uint64_t w) const {
    switch (width()) {
      case 16:
        return t.dtype.code == kDLBfloat ? peat::hd::bf16_to_float(static_cast<uint16_t>(w))
                                         : peat::hd::f16_to_float(static_cast<uint16_t>(w));
      case 32: { float f; uint32_t u = static_cast<uint32_t>(w); std::memcpy(&f, &u, 4); return f; }
      default: { double d; std::memcpy(&d, &w, 8); return d; }
    }
  }
  void set_value(int64_t i, double v) {
    switch (width()) {
      case 16:
        set_word(i, t.dtype.code == kDLBfloat ? peat::hd::float_to_bf16(static_cast<float>(v))
                                              : peat::hd::float_to_f16(static_cast<float>(v)));
        break;
      case 32: { float f = static_cast<float>(v); uint32_t u; std::memcpy(&u, &f, 4); set_word(i, u); break; }
      default: { uint64_t u; std::memcpy(&u, &v, 8); set_word(i, u); break; }
    }
  }
  // Deterministic pseudo-random finite values in about [-4, 4] (no zeros).
  void fill_pattern(uint64_t salt = 1) {
    uint64_t x = 0x9E3779B97F4A7C15ull ^ salt;
    for (int64_t i = 0; i < numel(); ++i) {
      x ^= x << 13; x ^= x >> 7; x ^= x << 17;
      const double u = static_cast<double>(x >> 11) / 9007199254740992.0;
      set_value(i, (u - 0.5) * 8.0 + (u < 0.5 ? -0.01 : 0.01));
    }
  }
};

// Recomputes the truth from before/after (both compact, same order) and
// checks the library's record against it; returns a description of the first
// disagreement, or "" when they agree bit for bit.
inline std::string check_truth(const HostTensor& before, const HostTensor& after, const peat_inject_truth_t& truth,
                               int64_t cols) {
  int64_t changed = 0, first = -1, last = -1, nonfinite = 0;
  int64_t rmin = -1, rmax = -1, cmin = -1, cmax = -1;
  uint64_t hist[64] = {};
  std::vector<int64_t> idx;
  const int w = before.width();
  const auto finite = [&](uint64_t bits) {
    const double v = before.to_double(bits);
    return std::isfinite(v);
  };
  for (int64_t i = 0; i < before.numel(); ++i) {
    const uint64_t a = before.word(i), b = after.word(i);
    if (a == b) continue;
    ++changed;
    if (first < 0) first = i;
    last = i;
    if (finite(a) && !finite(b)) ++nonfinite;
    const int64_t r = i / cols, c = i % cols;
    if (rmin < 0) { rmin = rmax = r; cmin = cmax = c; }
    rmin = std::min(rmin, r); rmax = std::max(rmax, r); cmin = std::min(cmin, c); cmax = std::max(cmax, c);
    for (int bit = 0; bit < w; ++bit) if (((a ^ b) >> bit) & 1u) ++hist[bit];
    if (idx.size() < PEAT_INJECT_TRUTH_CAPACITY) idx.push_back(i);
  }
  if (truth.changed != changed) return "changed " + std::to_string(truth.changed) + " != " + std::to_string(changed);
  if (truth.first_index != first || truth.last_index != last) return "first/last index";
  if (truth.new_nonfinite != nonfinite) return "new_nonfinite";
  if (truth.row_min != rmin || truth.row_max != rmax || truth.col_min != cmin || truth.col_max != cmax) return "bounding box";
  for (int bit = 0; bit < 64; ++bit) if (truth.bit_flips[bit] != hist[bit]) return "bit_flips[" + std::to_string(bit) + "]";
  if (truth.recorded != static_cast<int64_t>(idx.size())) return "recorded";
  for (std::size_t k = 0; k < idx.size(); ++k) {
    const peat_inject_change_t& ch = truth.changes[k];
    if (ch.index != idx[k]) return "changes[" + std::to_string(k) + "].index";
    if (ch.old_bits != before.word(idx[k]) || ch.new_bits != after.word(idx[k])) return "changes bits";
    const double ov = before.value(idx[k]), nv = after.value(idx[k]);
    const bool same_old = std::isnan(ov) ? std::isnan(ch.old_value) : ch.old_value == ov;
    const bool same_new = std::isnan(nv) ? std::isnan(ch.new_value) : ch.new_value == nv;
    if (!same_old || !same_new) return "changes values";
  }
  return "";
}

}  // namespace peat_test
