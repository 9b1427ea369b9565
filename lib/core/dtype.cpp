#include "lib/core/dtype.hpp"

#include "lib/core/error.hpp"

#include <array>

namespace peat::impl {
namespace {

struct NamedType {
  std::string_view name;
  DLDataType dtype;
};

// First entry of each dtype is its canonical name.
constexpr std::array<NamedType, 16> kNames{{
    {"f16", make_dtype(kDLFloat, 16)},   {"float16", make_dtype(kDLFloat, 16)},
    {"bf16", make_dtype(kDLBfloat, 16)}, {"bfloat16", make_dtype(kDLBfloat, 16)},
    {"f32", make_dtype(kDLFloat, 32)},   {"float32", make_dtype(kDLFloat, 32)},
    {"f64", make_dtype(kDLFloat, 64)},   {"float64", make_dtype(kDLFloat, 64)},
    {"i8", make_dtype(kDLInt, 8)},       {"i16", make_dtype(kDLInt, 16)},
    {"i32", make_dtype(kDLInt, 32)},     {"i64", make_dtype(kDLInt, 64)},
    {"u8", make_dtype(kDLUInt, 8)},      {"u16", make_dtype(kDLUInt, 16)},
    {"u32", make_dtype(kDLUInt, 32)},    {"bool", make_dtype(kDLUInt, 1)},
}};

}  // namespace

std::optional<Float> float_kind(DLDataType dtype) noexcept {
  if (dtype.lanes != 1) return std::nullopt;
  if (dtype.code == kDLFloat) {
    switch (dtype.bits) {
      case 16: return Float::F16;
      case 32: return Float::F32;
      case 64: return Float::F64;
      default: return std::nullopt;
    }
  }
  if (dtype.code == kDLBfloat && dtype.bits == 16) return Float::BF16;
  return std::nullopt;
}

Float require_float(DLDataType dtype, std::string_view what) {
  if (auto kind = float_kind(dtype)) return *kind;
  fail(PEAT_STATUS_UNSUPPORTED,
       "{}: dtype {} (code {}, bits {}, lanes {}) is not supported; use f16, bf16, f32 or f64", what,
       dtype_name(dtype), dtype.code, dtype.bits, dtype.lanes);
}

std::optional<DLDataType> dtype_from_name(std::string_view name) noexcept {
  for (const auto& entry : kNames)
    if (entry.name == name) return entry.dtype;
  return std::nullopt;
}

DLDataType require_dtype_name(std::string_view name) {
  const auto dtype = dtype_from_name(name);
  if (!dtype) fail(PEAT_STATUS_INVALID_ARGUMENT, "unknown dtype name '{}'", name);
  return *dtype;
}

const char* dtype_name(DLDataType dtype) noexcept {
  for (const auto& entry : kNames)
    if (entry.dtype == dtype) return entry.name.data();
  return "unknown";
}

std::size_t dtype_size(DLDataType dtype) noexcept {
  return (static_cast<std::size_t>(dtype.bits) * dtype.lanes + 7) / 8;
}

const char* float_name(Float f) noexcept {
  switch (f) {
    case Float::F16: return "f16";
    case Float::BF16: return "bf16";
    case Float::F32: return "f32";
    case Float::F64: return "f64";
  }
  return "unknown";
}

}  // namespace peat::impl
