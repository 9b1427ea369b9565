#include "lib/core/tensor_view.hpp"

#include "lib/core/dtype.hpp"
#include "lib/core/error.hpp"

#include <fmt/ranges.h>

#include <limits>
#include <span>

namespace peat::impl {

TensorView make_view(const DLTensor* tensor, std::string_view what) {
  if (tensor == nullptr) fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: tensor is NULL", what);
  TensorView view;
  view.tensor = tensor;
  view.dtype = tensor->dtype;
  view.device = tensor->device;
  if (tensor->ndim < 0 || tensor->ndim > kMaxDims)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: ndim {} is outside [0, {}]", what, tensor->ndim, kMaxDims);
  view.ndim = tensor->ndim;
  if (view.ndim > 0 && tensor->shape == nullptr)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: shape is NULL but ndim is {}", what, view.ndim);
  const std::size_t elem = dtype_size(tensor->dtype);
  if (elem == 0)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: dtype has zero size (bits {}, lanes {})", what,
         tensor->dtype.bits, tensor->dtype.lanes);

  int64_t numel = 1;
  for (int d = 0; d < view.ndim; ++d) {
    const int64_t extent = tensor->shape[d];
    if (extent < 0) fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: shape[{}] is negative ({})", what, d, extent);
    if (extent != 0 && numel > std::numeric_limits<int64_t>::max() / extent)
      fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: element count overflows int64", what);
    numel *= extent;
    view.shape[d] = extent;
  }
  view.numel = numel;

  // Strides in elements: DLPack's own, or compact row-major when NULL.
  int64_t expected = 1;
  for (int d = view.ndim - 1; d >= 0; --d) {
    const int64_t stride = tensor->strides ? tensor->strides[d] : expected;
    view.strides[d] = stride;
    if (view.shape[d] != 1 && stride != expected) view.contiguous = false;
    expected *= view.shape[d];
  }

  if (tensor->byte_offset % elem != 0)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: byte_offset {} is not a multiple of the element size {}",
         what, tensor->byte_offset, elem);
  if (numel > 0 && tensor->data == nullptr)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: data is NULL but the tensor has {} elements", what, numel);
  view.base = static_cast<std::byte*>(tensor->data) + tensor->byte_offset;
  return view;
}

void require_same_shape(const TensorView& a, std::string_view a_name, const TensorView& b,
                        std::string_view b_name) {
  const std::span<const int64_t> sa(a.shape.data(), a.ndim), sb(b.shape.data(), b.ndim);
  if (a.ndim == b.ndim && std::equal(sa.begin(), sa.end(), sb.begin())) return;
  fail(PEAT_STATUS_SHAPE_MISMATCH, "{} has shape [{}] but {} has shape [{}]", a_name,
       fmt::join(sa, ", "), b_name, fmt::join(sb, ", "));
}

}  // namespace peat::impl
