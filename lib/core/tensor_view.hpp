// TensorView: a checked, C++-friendly description of a borrowed DLTensor.
// Built once at the C boundary (or wherever a DLTensor enters the core); the
// numeric code then works on element offsets without re-checking.
#pragma once

#include <peat/core.h>

#include <array>
#include <cstdint>
#include <string_view>

namespace peat::impl {

constexpr int kMaxDims = 32;

// Memory the host reads directly: plain host memory and pinned CUDA/ROCm host
// memory (the CPU backend serves all three).
inline bool is_host(DLDevice device) noexcept {
  return device.device_type == kDLCPU || device.device_type == kDLCUDAHost || device.device_type == kDLROCMHost;
}

struct TensorView {
  const DLTensor* tensor = nullptr;
  std::byte* base = nullptr;  // data + byte_offset
  DLDataType dtype{};
  DLDevice device{};
  int ndim = 0;
  std::array<int64_t, kMaxDims> shape{};
  std::array<int64_t, kMaxDims> strides{};  // in elements; filled for compact tensors too
  int64_t numel = 0;
  bool contiguous = true;  // row-major compact (size-1 dimensions ignored)

  // Element offset (in elements, from base) of the element with row-major linear
  // index `linear` in [0, numel).
  int64_t offset_of(int64_t linear) const noexcept {
    if (contiguous) return linear;
    int64_t offset = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t extent = shape[d];
      offset += (linear % extent) * strides[d];
      linear /= extent;
    }
    return offset;
  }
};

// Validates `tensor` (see peat_tensor_numel) and builds its view. `what` names the
// argument in error messages ("golden", "inputs[2]"). Throws peat::impl::Error.
TensorView make_view(const DLTensor* tensor, std::string_view what);

// Throws SHAPE_MISMATCH unless both views have the same shape.
void require_same_shape(const TensorView& a, std::string_view a_name, const TensorView& b,
                        std::string_view b_name);

}  // namespace peat::impl
