// C entry points of peat/core.h: check, convert, forward.
#include <peat/core.h>

#include "bindings/c/barrier.hpp"
#include "lib/core/dtype.hpp"
#include "lib/core/status.hpp"
#include "lib/core/tensor_view.hpp"
#include "lib/core/error_model.hpp"
#include "lib/core/version.hpp"

using namespace peat::impl;  // the C layer forwards to the core (lib/)

extern "C" {

PEAT_API uint32_t peat_version_number(void) { return kVersionNumber; }
PEAT_API const char* peat_version_string(void) { return version_string(); }
PEAT_API uint32_t peat_abi_version(void) { return kAbiVersion; }
PEAT_API const char* peat_status_string(peat_status_t status) { return status_name(status); }
PEAT_API const char* peat_error_model_name(peat_error_model_t model) { return error_model_name(model); }
PEAT_API const char* peat_last_error_message(void) { return last_error(); }
PEAT_API void peat_clear_last_error(void) { clear_last_error(); }

PEAT_API peat_status_t peat_dtype_from_name(const char* name, DLDataType* out) {
  return c_call(__func__, [&] {
    require_arg(name, "name");
    require_arg(out, "out");
    *out = require_dtype_name(name);
  });
}

PEAT_API const char* peat_dtype_name(DLDataType dtype) { return dtype_name(dtype); }
PEAT_API size_t peat_dtype_size(DLDataType dtype) { return dtype_size(dtype); }
PEAT_API int peat_dtype_is_supported_float(DLDataType dtype) { return float_kind(dtype) ? 1 : 0; }

PEAT_API peat_status_t peat_dtype_mantissa_bits(DLDataType dtype, int32_t* out_bits, double* out_unit_roundoff) {
  return c_call(__func__, [&] {
    require_arg(out_bits, "out_bits");
    const Float kind = require_float(dtype, "dtype");
    *out_bits = mantissa_bits(kind);
    if (out_unit_roundoff) *out_unit_roundoff = unit_roundoff(kind);
  });
}

PEAT_API peat_status_t peat_tensor_numel(const DLTensor* tensor, int64_t* out_numel) {
  return c_call(__func__, [&] {
    require_arg(out_numel, "out_numel");
    *out_numel = make_view(tensor, "tensor").numel;
  });
}

}  // extern "C"
