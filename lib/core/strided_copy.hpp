// Copies between a strided layout and compact row-major order, and the storage
// extent a strided layout spans. One home for both directions: the profiler
// gathers a strided view into a trace payload (compact), and playback scatters
// a payload back into a buffer laid out with the recorded strides, so that a
// candidate sees the operands exactly as the golden kernel did (a BLAS picks
// another kernel, with other rounding, for a transposed operand).
#pragma once

#include <cstddef>
#include <cstdint>

namespace peat::impl {

// The element offsets, relative to the first element (index 0 in every
// dimension), of the lowest and highest addressed elements of a layout with
// `ndim` extents `shape` and element strides `strides` (any signs, zero for
// broadcast dimensions). For numel 0 both are 0. Returns false when an offset
// overflows int64.
bool strided_span(int ndim, const int64_t* shape, const int64_t* strides, int64_t* out_min,
                  int64_t* out_max) noexcept;

// Whether `strides` are the compact row-major strides of `shape` (size-1
// dimensions compared too: a caller that passed other strides for them is
// recorded as it was).
bool is_row_major(int ndim, const int64_t* shape, const int64_t* strides) noexcept;

// Fills `out` (ndim entries) with the compact row-major strides of `shape`.
void row_major_strides(int ndim, const int64_t* shape, int64_t* out) noexcept;

// Gathers the `numel` elements of size `es` bytes of the strided layout whose
// first element is at `first` into `compact`, in row-major order.
void gather_strided(const std::byte* first, int ndim, const int64_t* shape, const int64_t* strides,
                    int64_t numel, std::size_t es, std::byte* compact) noexcept;

// The inverse: writes the row-major `compact` elements into the strided layout
// whose first element is at `first`. Elements that share a location (zero
// strides) are written more than once; the last write wins.
void scatter_strided(const std::byte* compact, int ndim, const int64_t* shape, const int64_t* strides,
                     int64_t numel, std::size_t es, std::byte* first) noexcept;

}  // namespace peat::impl
