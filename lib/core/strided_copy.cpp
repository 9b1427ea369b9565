#include "lib/core/strided_copy.hpp"

#include <array>
#include <cstring>

namespace peat::impl {

namespace {

constexpr int kMaxCopyDims = 32;

// An odometer over the outer dimensions and a tight loop over the innermost
// one: a transposed GEMM operand is a strided view, and copying one must not
// cost a division and a memcpy call per element on the training thread.
// Gather when kToCompact, scatter otherwise.
template <typename T, bool kToCompact>
void copy_rows(std::byte* strided_bytes, std::byte* compact_bytes, int ndim, const int64_t* shape,
               const int64_t* strides, int64_t numel) noexcept {
  T* strided = reinterpret_cast<T*>(strided_bytes);
  T* compact = reinterpret_cast<T*>(compact_bytes);
  const int last = ndim - 1;
  const int64_t cols = shape[last], step = strides[last];
  std::array<int64_t, kMaxCopyDims> index{};
  int64_t row_offset = 0;
  for (int64_t done = 0; done < numel; done += cols) {
    T* row = strided + row_offset;
    if constexpr (kToCompact) {
      for (int64_t j = 0; j < cols; ++j) compact[j] = row[j * step];
    } else {
      for (int64_t j = 0; j < cols; ++j) row[j * step] = compact[j];
    }
    compact += cols;
    for (int d = last - 1; d >= 0; --d) {  // next row: advance the odometer
      row_offset += strides[d];
      if (++index[d] < shape[d]) break;
      row_offset -= strides[d] * shape[d];
      index[d] = 0;
    }
  }
}

template <bool kToCompact>
void copy(std::byte* strided, std::byte* compact, int ndim, const int64_t* shape, const int64_t* strides,
          int64_t numel, std::size_t es) noexcept {
  if (numel <= 0) return;
  if (ndim == 0) {
    if constexpr (kToCompact) std::memcpy(compact, strided, es);
    else std::memcpy(strided, compact, es);
    return;
  }
  switch (es) {
    case 1: return copy_rows<uint8_t, kToCompact>(strided, compact, ndim, shape, strides, numel);
    case 2: return copy_rows<uint16_t, kToCompact>(strided, compact, ndim, shape, strides, numel);
    case 4: return copy_rows<uint32_t, kToCompact>(strided, compact, ndim, shape, strides, numel);
    case 8: return copy_rows<uint64_t, kToCompact>(strided, compact, ndim, shape, strides, numel);
    default: break;
  }
  for (int64_t i = 0; i < numel; ++i) {  // other element sizes: one element at a time
    int64_t linear = i, offset = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      offset += (linear % shape[d]) * strides[d];
      linear /= shape[d];
    }
    std::byte* s = strided + offset * static_cast<int64_t>(es);
    std::byte* c = compact + static_cast<std::size_t>(i) * es;
    if constexpr (kToCompact) std::memcpy(c, s, es);
    else std::memcpy(s, c, es);
  }
}

}  // namespace

bool strided_span(int ndim, const int64_t* shape, const int64_t* strides, int64_t* out_min,
                  int64_t* out_max) noexcept {
  int64_t lo = 0, hi = 0;
  bool empty = false;
  for (int d = 0; d < ndim; ++d) empty = empty || shape[d] == 0;
  if (!empty) {
    for (int d = 0; d < ndim; ++d) {
      int64_t reach = 0;
      if (__builtin_mul_overflow(shape[d] - 1, strides[d], &reach)) return false;
      if (reach < 0 ? __builtin_add_overflow(lo, reach, &lo) : __builtin_add_overflow(hi, reach, &hi)) return false;
    }
  }
  *out_min = lo;
  *out_max = hi;
  return true;
}

bool is_row_major(int ndim, const int64_t* shape, const int64_t* strides) noexcept {
  int64_t expected = 1;
  for (int d = ndim - 1; d >= 0; --d) {
    if (strides[d] != expected) return false;
    expected *= shape[d];
  }
  return true;
}

void row_major_strides(int ndim, const int64_t* shape, int64_t* out) noexcept {
  int64_t s = 1;
  for (int d = ndim - 1; d >= 0; --d) {
    out[d] = s;
    s *= shape[d];
  }
}

void gather_strided(const std::byte* first, int ndim, const int64_t* shape, const int64_t* strides,
                    int64_t numel, std::size_t es, std::byte* compact) noexcept {
  copy<true>(const_cast<std::byte*>(first), compact, ndim, shape, strides, numel, es);
}

void scatter_strided(const std::byte* compact, int ndim, const int64_t* shape, const int64_t* strides,
                     int64_t numel, std::size_t es, std::byte* first) noexcept {
  copy<false>(first, const_cast<std::byte*>(compact), ndim, shape, strides, numel, es);
}

}  // namespace peat::impl
