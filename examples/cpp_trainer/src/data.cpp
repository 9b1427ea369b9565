#include "peat_trainer/data.hpp"

#include "peat_trainer/tensor.hpp"

#include <cmath>
#include <stdexcept>

namespace peat_trainer {

namespace {

constexpr double kPi = 3.14159265358979323846;

const char* const kNames[kShapeClasses] = {"horizontal bars", "vertical bars", "diagonal bars /", "diagonal bars \\",
                                           "filled disc",     "square outline", "plus sign",      "checkerboard",
                                           "rings",           "speckles"};

// Draws image `index` of class `label` into out[size*size] (one channel).
void draw(int label, int size, const DataOptions& opt, Rng& rng, float* out) {
  const double amp = rng.uniform(opt.contrast_min, 1.0);
  const double offset = rng.uniform(-0.2, 0.2);
  const double lo = size * 0.3, hi = size * 0.7;
  const double cx = rng.uniform(lo, hi), cy = rng.uniform(lo, hi);
  double angle = 0, period = 0, phase = 0, radius = 0, half = 0, arm = 0, cell = 0, ox = 0, oy = 0;
  switch (label) {
    case 0: case 1: case 2: case 3: {
      const double base[4] = {0.0, kPi / 2, kPi / 4, -kPi / 4};
      angle = base[label] + rng.uniform(-0.2, 0.2);
      period = rng.uniform(3.0, 6.0);
      phase = rng.uniform(0.0, 2 * kPi);
      break;
    }
    case 4: radius = rng.uniform(size * 0.15, size * 0.32); break;
    case 5: half = rng.uniform(size * 0.18, size * 0.36); break;
    case 6: arm = rng.uniform(size * 0.2, size * 0.38); break;
    case 7: cell = rng.uniform(2.0, 4.0); ox = rng.uniform(0.0, 4.0); oy = rng.uniform(0.0, 4.0); break;
    case 8: period = rng.uniform(3.0, 5.0); phase = rng.uniform(0.0, 2 * kPi); break;
    default: break;
  }
  for (int y = 0; y < size; ++y) {
    for (int x = 0; x < size; ++x) {
      const double dx = x - cx, dy = y - cy;
      double p = 0;
      switch (label) {
        case 0: case 1: case 2: case 3: {
          const double u = y * std::cos(angle) + x * std::sin(angle);
          p = 0.5 + 0.5 * std::sin(2 * kPi * u / period + phase);
          break;
        }
        case 4: p = std::hypot(dx, dy) < radius ? 1 : 0; break;
        case 5: {
          const double m = std::max(std::fabs(dx), std::fabs(dy));
          p = (m <= half && m >= half - 1.3) ? 1 : 0;
          break;
        }
        case 6: p = ((std::fabs(dx) < 1.0 && std::fabs(dy) < arm) || (std::fabs(dy) < 1.0 && std::fabs(dx) < arm)) ? 1 : 0; break;
        case 7: p = ((static_cast<int>(std::floor((x + ox) / cell)) + static_cast<int>(std::floor((y + oy) / cell))) & 1) ? 1 : 0; break;
        case 8: p = 0.5 + 0.5 * std::sin(2 * kPi * std::hypot(dx, dy) / period + phase); break;
        default: p = rng.uniform() < 0.15 ? 1 : 0; break;
      }
      out[y * size + x] = static_cast<float>(offset + amp * (p - 0.5) + opt.noise * rng.normal());
    }
  }
}

}  // namespace

const char* shape_class_name(int label) noexcept {
  return label >= 0 && label < kShapeClasses ? kNames[label] : "?";
}

Dataset make_shapes_dataset(int64_t n, uint64_t seed, const DataOptions& options) {
  if (n < 0 || options.size < 8) throw std::invalid_argument("make_shapes_dataset: n must be >= 0 and size >= 8");
  Dataset d;
  d.n = n;
  d.height = d.width = options.size;
  d.channels = 1;
  d.classes = kShapeClasses;
  d.images.resize(static_cast<size_t>(n * d.image_size()));
  d.labels.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    Rng rng(seed, static_cast<uint32_t>(i));
    const int label = static_cast<int>(i % kShapeClasses);
    d.labels[static_cast<size_t>(i)] = label;
    draw(label, options.size, options, rng, d.images.data() + i * d.image_size());
  }
  return d;
}

Dataset shift_labels(const Dataset& data, int shift) {
  Dataset d = data;
  for (auto& y : d.labels) y = static_cast<int32_t>(((y + shift) % d.classes + d.classes) % d.classes);
  return d;
}

}  // namespace peat_trainer
