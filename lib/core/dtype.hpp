// The element types PEAT works on, as a small C++ enum derived from DLPack's
// DLDataType. Numeric parts switch on peat::impl::Float to pick a template instance.
#pragma once

#include <peat/core.h>

#include <cmath>
#include <cstddef>
#include <optional>
#include <string_view>

namespace peat::impl {

enum class Float { F16, BF16, F32, F64 };

// The storage code of backends/common (hd::kStoreF16 ...): the same order.
constexpr int32_t store_code(Float f) noexcept { return static_cast<int32_t>(f); }

// The supported float kind of a DLDataType, or nullopt (lanes != 1, other codes).
std::optional<Float> float_kind(DLDataType dtype) noexcept;

// Like float_kind, but throws PEAT_STATUS_UNSUPPORTED naming `what` (an argument
// name) and the dtype when it is not one of f16, bf16, f32, f64.
Float require_float(DLDataType dtype, std::string_view what);

std::optional<DLDataType> dtype_from_name(std::string_view name) noexcept;
// Like dtype_from_name, but throws PEAT_STATUS_INVALID_ARGUMENT for an unknown name.
DLDataType require_dtype_name(std::string_view name);
const char* dtype_name(DLDataType dtype) noexcept;
std::size_t dtype_size(DLDataType dtype) noexcept;

constexpr DLDataType make_dtype(DLDataTypeCode code, int bits) {
  return DLDataType{static_cast<uint8_t>(code), static_cast<uint8_t>(bits), 1};
}
constexpr bool operator==(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

constexpr int mantissa_bits(Float f) {
  switch (f) {
    case Float::F16: return 10;
    case Float::BF16: return 7;
    case Float::F32: return 23;
    case Float::F64: return 52;
  }
  return 0;
}
// The unit roundoff u = 2^-(p+1) of round-to-nearest in a format of p stored
// mantissa bits (f32: 2^-24).
inline double unit_roundoff(Float f) { return std::ldexp(1.0, -(mantissa_bits(f) + 1)); }
constexpr std::size_t float_size(Float f) {
  switch (f) {
    case Float::F16: case Float::BF16: return 2;
    case Float::F32: return 4;
    case Float::F64: return 8;
  }
  return 0;
}
const char* float_name(Float f) noexcept;

}  // namespace peat::impl
