// C entry points of peat/core.h: check, convert, forward.
#include <peat/core.h>

#include "barrier.hpp"
#include "core/dtype.hpp"
#include "core/status.hpp"
#include "core/tensor_view.hpp"
#include "core/version.hpp"

#include <cmath>

extern "C" {

PEAT_API uint32_t peat_version_number(void) { return peat::kVersionNumber; }
PEAT_API const char* peat_version_string(void) { return peat::version_string(); }
PEAT_API uint32_t peat_abi_version(void) { return peat::kAbiVersion; }

PEAT_API const char* peat_status_string(peat_status_t status) { return peat::status_name(status); }
PEAT_API const char* peat_last_error_message(void) { return peat::last_error(); }
PEAT_API void peat_clear_last_error(void) { peat::clear_last_error(); }

PEAT_API peat_status_t peat_dtype_from_name(const char* name, DLDataType* out) {
  return peat::c_call(__func__, [&] {
    peat::require_arg(name, "name");
    peat::require_arg(out, "out");
    auto dtype = peat::dtype_from_name(name);
    if (!dtype) peat::fail(PEAT_STATUS_INVALID_ARGUMENT, "unknown dtype name '{}'", name);
    *out = *dtype;
  });
}

PEAT_API const char* peat_dtype_name(DLDataType dtype) { return peat::dtype_name(dtype); }
PEAT_API size_t peat_dtype_size(DLDataType dtype) { return peat::dtype_size(dtype); }
PEAT_API int peat_dtype_is_supported_float(DLDataType dtype) { return peat::float_kind(dtype) ? 1 : 0; }

PEAT_API peat_status_t peat_dtype_mantissa_bits(DLDataType dtype, int32_t* out_bits,
                                                double* out_unit_roundoff) {
  return peat::c_call(__func__, [&] {
    peat::require_arg(out_bits, "out_bits");
    const peat::Float kind = peat::require_float(dtype, "dtype");
    const int bits = peat::mantissa_bits(kind);
    *out_bits = bits;
    if (out_unit_roundoff) *out_unit_roundoff = std::ldexp(1.0, -(bits + 1));
  });
}

PEAT_API peat_status_t peat_tensor_numel(const DLTensor* tensor, int64_t* out_numel) {
  return peat::c_call(__func__, [&] {
    peat::require_arg(out_numel, "out_numel");
    *out_numel = peat::make_view(tensor, "tensor").numel;
  });
}

}  // extern "C"
