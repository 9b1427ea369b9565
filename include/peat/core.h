/*
 * peat/core.h — versions, status codes, error messages and dtype helpers.
 *
 * Every other PEAT header includes this one. It compiles as C11 and as C++.
 *
 * Conventions used by every PEAT function (documented once here):
 *  - A fallible function returns peat_status_t. PEAT_STATUS_OK (0) is success.
 *  - On failure the calling thread's last-error message is set to a sentence that
 *    names the argument, file, record or field at fault; read it with
 *    peat_last_error_message(). A successful call does not clear it.
 *  - Output pointers are written only on success.
 *  - What the library allocates, the library frees (each object has a destroy
 *    function that accepts NULL).
 *  - Option structs begin with `uint32_t struct_size`, filled by the matching
 *    peat_<x>_options_init(). A struct smaller than the library's (from an older
 *    header) is accepted and the missing fields take their defaults; a larger one
 *    (from a newer header) is refused with PEAT_STATUS_VERSION_MISMATCH.
 *  - No function aborts or lets a C++ exception escape.
 */
#ifndef PEAT_CORE_H
#define PEAT_CORE_H

#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- export -- */

/* PEAT_API marks every exported function. The library is built with
 * -fvisibility=hidden, so only PEAT_API functions are visible to users. */
#if defined(_WIN32)
#  if defined(PEAT_BUILDING_LIBRARY)
#    define PEAT_API __declspec(dllexport)
#  else
#    define PEAT_API __declspec(dllimport)
#  endif
#elif defined(__GNUC__)
#  define PEAT_API __attribute__((visibility("default")))
#else
#  define PEAT_API
#endif

/* --------------------------------------------------------------- version -- */

#define PEAT_VERSION_MAJOR 0
#define PEAT_VERSION_MINOR 2
#define PEAT_VERSION_PATCH 0
/* MAJOR*10000 + MINOR*100 + PATCH, as zstd does: 0.1.0 -> 100. */
#define PEAT_VERSION_NUMBER \
  (PEAT_VERSION_MAJOR * 10000 + PEAT_VERSION_MINOR * 100 + PEAT_VERSION_PATCH)
/* The ABI version is the SONAME suffix: libpeat.so.<PEAT_ABI_VERSION>. It changes
 * only on an incompatible ABI change (see docs/abi-policy.md). */
#define PEAT_ABI_VERSION 0

/* Version of the library actually loaded, as PEAT_VERSION_NUMBER computes it.
 * Compare with PEAT_VERSION_NUMBER to detect a header/library mismatch.
 * Thread-safe; never fails. */
PEAT_API uint32_t peat_version_number(void);

/* Version of the loaded library as "MAJOR.MINOR.PATCH". Static storage, never
 * NULL, never freed by the caller. Thread-safe. */
PEAT_API const char* peat_version_string(void);

/* ABI version of the loaded library (PEAT_ABI_VERSION it was built with).
 * Thread-safe; never fails. */
PEAT_API uint32_t peat_abi_version(void);

/* ---------------------------------------------------------------- status -- */

/* Status codes. Values are explicit and are never renumbered; new codes are
 * only appended. peat_status_t is a fixed-width int32_t so that it has the same
 * size in every language binding. */
typedef int32_t peat_status_t;
enum peat_status_code {
  PEAT_STATUS_OK = 0,
  /* An argument is NULL, out of range or inconsistent with another one. */
  PEAT_STATUS_INVALID_ARGUMENT = 1,
  /* An allocation failed, or a declared size exceeds a memory limit. */
  PEAT_STATUS_OUT_OF_MEMORY = 2,
  /* A feature, plugin or device is not present on this machine. */
  PEAT_STATUS_UNAVAILABLE = 3,
  /* Valid request that this build or backend does not support (e.g. a dtype). */
  PEAT_STATUS_UNSUPPORTED = 4,
  /* A struct_size, file format version or plugin ABI does not match. */
  PEAT_STATUS_VERSION_MISMATCH = 5,
  /* Shapes, element counts or dtypes of related tensors do not agree. */
  PEAT_STATUS_SHAPE_MISMATCH = 6,
  /* Named thing (file, symbol, op, record, key) does not exist. */
  PEAT_STATUS_NOT_FOUND = 7,
  /* Reading or writing a file failed (ENOSPC, EIO, permissions, ...). */
  PEAT_STATUS_IO_ERROR = 8,
  /* Input data (a trace, a record) is malformed: bad magic, checksum, bounds. */
  PEAT_STATUS_CORRUPT_DATA = 9,
  /* A caller-provided buffer is too small; the required size is reported. */
  PEAT_STATUS_BUFFER_TOO_SMALL = 10,
  /* The call is not allowed in the object's current state (e.g. after close). */
  PEAT_STATUS_BAD_STATE = 11,
  /* The operation was cancelled by the caller (progress callback). */
  PEAT_STATUS_CANCELLED = 12,
  /* The operation exceeded its time limit. */
  PEAT_STATUS_TIMEOUT = 13,
  /* A user-supplied callback or kernel reported failure. */
  PEAT_STATUS_CALLBACK_FAILED = 14,
  /* A bug in PEAT: an invariant did not hold. Please report it. */
  PEAT_STATUS_INTERNAL = 15
};

/* Short English name of a status, e.g. "invalid argument". Unknown values give
 * "unknown status". Static storage, never NULL. Thread-safe. */
PEAT_API const char* peat_status_string(peat_status_t status);

/* The message of the last failed PEAT call on the calling thread, e.g.
 * "peat_analyze: golden: 2-D tensor has shape [3, 4] but candidate has [4, 3]".
 * Empty string ("") when no call on this thread has failed yet. The pointer is
 * owned by the library and stays valid until the next failing PEAT call on the
 * same thread. Never NULL. Thread-safe (thread-local storage). */
PEAT_API const char* peat_last_error_message(void);

/* Clears the calling thread's last-error message (sets it to ""). */
PEAT_API void peat_clear_last_error(void);

/* ----------------------------------------------------------------- dtype -- */

/* PEAT names the element types it works on with DLPack's DLDataType
 * (code, bits, lanes). The types every part supports are f16, bf16, f32, f64
 * with lanes == 1. These helpers exist as functions (not macros) so that
 * language bindings such as Python ctypes can call them. */

/* Fills *out with the DLDataType named by `name`: "f16"/"float16",
 * "bf16"/"bfloat16", "f32"/"float32", "f64"/"float64", "i8", "i16", "i32", "i64",
 * "u8", "bool". Errors: NULL argument or unknown name -> INVALID_ARGUMENT. */
PEAT_API peat_status_t peat_dtype_from_name(const char* name, DLDataType* out);

/* Canonical short name of a dtype ("f32", "bf16", ...), or "unknown" when PEAT
 * has no name for it. Static storage, never NULL. Thread-safe. */
PEAT_API const char* peat_dtype_name(DLDataType dtype);

/* Size of one element in bytes (bits * lanes rounded up to bytes); 0 when the
 * dtype is malformed (bits == 0 or lanes == 0). */
PEAT_API size_t peat_dtype_size(DLDataType dtype);

/* 1 when the dtype is a floating-point type that PEAT's numeric parts
 * (analyzer, injector, detector) support: f16, bf16, f32, f64 with one lane;
 * 0 otherwise. */
PEAT_API int peat_dtype_is_supported_float(DLDataType dtype);

/* Number of explicitly stored mantissa bits of a supported float dtype
 * (f16: 10, bf16: 7, f32: 23, f64: 52) and its unit roundoff u = 2^-(bits+1).
 * Errors: unsupported dtype or NULL output -> UNSUPPORTED / INVALID_ARGUMENT. */
PEAT_API peat_status_t peat_dtype_mantissa_bits(DLDataType dtype, int32_t* out_bits,
                                                double* out_unit_roundoff);

/* ------------------------------------------------------------ error models -- */

/* The classes of error PEAT names (DESIGN.md §6). The injector labels each
 * injection with the class it produces (peat_inject_truth_t.model); the
 * Detector returns the same codes as verdicts. Values are never renumbered. */
typedef int32_t peat_error_model_t;
enum peat_error_model_code {
  PEAT_ERROR_MODEL_EXACT = 0,             /* bitwise identical */
  PEAT_ERROR_MODEL_ROUNDING = 1,          /* accumulation order / FMA: a few ULP, low mantissa bits */
  PEAT_ERROR_MODEL_REDUCED_PRECISION = 2, /* rounded to a narrower format (tf32, fp16, bf16, fp8) */
  PEAT_ERROR_MODEL_BITFLIP_SINGLE = 3,    /* one bit of one element */
  PEAT_ERROR_MODEL_BITFLIP_MULTI = 4,     /* several bits or several elements */
  PEAT_ERROR_MODEL_STUCK_AT = 5,          /* one bit forced to 0 or 1 (on all elements or a lane) */
  PEAT_ERROR_MODEL_REGION = 6,            /* rows, columns, tiles, the edge tile */
  PEAT_ERROR_MODEL_DROPPED_WRITES = 7,    /* zeros or stale values where results belong */
  PEAT_ERROR_MODEL_SCALING = 8,           /* candidate = alpha * golden */
  PEAT_ERROR_MODEL_NONFINITE = 9,         /* new NaN / Inf, overflow, flush */
  PEAT_ERROR_MODEL_NONDETERMINISM = 10,   /* two candidate runs on the same input differ */
  PEAT_ERROR_MODEL_GARBAGE = 11,          /* values unrelated to the golden ones */
  PEAT_ERROR_MODEL_UNKNOWN = 12
};

/* The model's name ("BITFLIP_SINGLE", ...); "unknown" for an unknown value.
 * Static storage, never NULL. Thread-safe. */
PEAT_API const char* peat_error_model_name(peat_error_model_t model);

/* Narrow float formats: of the injector's PRECISION model (PEAT_INJECT_PRECISION)
 * and of the Detector's REDUCED_PRECISION verdicts. */
typedef int32_t peat_float_format_t;
enum peat_float_format_code {
  PEAT_FORMAT_BF16 = 0,    /* 8-bit exponent, 7 mantissa bits, Inf */
  PEAT_FORMAT_FP16 = 1,    /* IEEE binary16: 5-bit exponent, 10 mantissa bits, max 65504 */
  PEAT_FORMAT_TF32 = 2,    /* 8-bit exponent, 10 mantissa bits (f32 range) */
  PEAT_FORMAT_FP8_E4M3 = 3, /* OCP E4M3FN: 4-bit exponent, 3 mantissa bits, max 448, no Inf */
  PEAT_FORMAT_FP8_E5M2 = 4  /* OCP E5M2: 5-bit exponent, 2 mantissa bits, max 57344, Inf */
};

/* ---------------------------------------------------------------- tensor -- */

/* Validates a borrowed tensor view and returns its element count. Checks: the
 * pointer is not NULL; 0 <= ndim <= 32; shape is not NULL when ndim > 0 and no
 * dimension is negative; the element count fits int64; data is not NULL when
 * the count is non-zero; the dtype has a non-zero size; byte_offset is a
 * multiple of the element size. strides may be NULL (compact row-major) and
 * may be any values otherwise (negative and zero strides are legal views).
 * Errors: INVALID_ARGUMENT with a message naming the failed check. */
PEAT_API peat_status_t peat_tensor_numel(const DLTensor* tensor, int64_t* out_numel);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PEAT_CORE_H */
