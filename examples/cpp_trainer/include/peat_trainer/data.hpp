// data.hpp — a procedurally generated image-classification set.
//
// 10 classes of 16x16 grey images (one channel, NHWC), each drawn with random
// position, size, frequency, phase, contrast and additive Gaussian noise:
//   0 horizontal bars   1 vertical bars     2 diagonal bars (/)   3 diagonal bars (\)
//   4 filled disc       5 square outline    6 plus sign           7 checkerboard
//   8 concentric rings  9 random speckles
// Image i of a set is a pure function of (seed, i), so sets are reproducible and
// can be generated in any order or thread split.
#pragma once

#include <cstdint>
#include <vector>

namespace peat_trainer {

struct Dataset {
  int64_t n = 0;
  int height = 0, width = 0, channels = 0;
  int classes = 0;
  std::vector<float> images;    // n * height * width * channels, NHWC
  std::vector<int32_t> labels;  // n, in [0, classes)
  int64_t image_size() const noexcept { return int64_t{height} * width * channels; }
};

struct DataOptions {
  int size = 16;         // image height and width (>= 8)
  double noise = 0.35;   // standard deviation of the additive Gaussian noise
  double contrast_min = 0.5;  // pattern amplitude is drawn from [contrast_min, 1]
};

inline constexpr int kShapeClasses = 10;
const char* shape_class_name(int label) noexcept;

// n images, labels cycling through the classes in a seeded random order.
Dataset make_shapes_dataset(int64_t n, uint64_t seed, const DataOptions& options = {});

// The same images with label y replaced by (y + shift) mod classes: the
// finetuning task (a shifted label set on the same kind of images).
Dataset shift_labels(const Dataset& data, int shift);

}  // namespace peat_trainer
