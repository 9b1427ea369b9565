// libpeat-interpose-rocblas.so: LD_PRELOAD interposer for the GEMM entry points
// of rocBLAS and hipBLAS, declared by hand in rocblas_api.h (Debian ships no
// rocBLAS/hipBLAS headers). Same mechanics as the cuBLAS interposer: each
// wrapper resolves the real function with dlsym(RTLD_NEXT) and routes the call
// through runtime/gemm_route. hipBLAS on AMD calls rocBLAS underneath; the
// runtime's re-entry guard makes such a call count once, under its hipBLAS name.
//
// Wrapped: rocblas_{s,d,h}gemm, rocblas_{s,d}gemm_strided_batched,
// rocblas_gemm_ex, rocblas_gemm_strided_batched_ex, hipblas{S,D}gemm,
// hipblas{S,D}gemmStridedBatched. Not wrapped: hipblasGemmEx (its type
// arguments changed from hipblasDatatype_t to hipDataType in hipBLAS 2.0, so
// one hand-written prototype would misread the other release), the
// pointer-array batched entries and complex GEMMs.
#include "backends/interpose/rocblas/rocblas_api.h"

#include "backends/interpose/runtime/gemm_route.hpp"
#include "backends/interpose/runtime/runtime.hpp"

#include <dlfcn.h>

#include <limits>

#define PEAT_INTERPOSE_EXPORT extern "C" __attribute__((visibility("default")))

namespace peat::interpose {

const char* const kDefaultBackend = "hip";
const char* const kInterposerName = "peat-interpose-rocblas";

namespace {

char op_char(int op) {  // rocblas_operation and hipblasOperation_t share 111/112/113
  switch (op) {
    case 111: return 'N';
    case 112: return 'T';
    case 113: return 'C';
    default: return '?';
  }
}

bool dl_type(rocblas_datatype t, DLDataType* out) {
  switch (t) {
    case rocblas_datatype_f16_r: *out = f16; return true;
    case rocblas_datatype_bf16_r: *out = bf16; return true;
    case rocblas_datatype_f32_r: *out = f32; return true;
    case rocblas_datatype_f64_r: *out = f64; return true;
    default: *out = DLDataType{kDLOpaqueHandle, 8, 1}; return false;
  }
}

// alpha and beta have the compute type (rocblas_gemm_ex documentation).
DLDataType scalar_type(rocblas_datatype compute) {
  switch (compute) {
    case rocblas_datatype_f16_r: return f16;
    case rocblas_datatype_f64_r: return f64;
    case rocblas_datatype_i32_r: return DLDataType{kDLInt, 32, 1};
    default: return f32;
  }
}

struct Shape {
  int m, n, k, lda, ldb, ldc, ldd, batch;
  int64_t sa, sb, sc, sd;
};

void describe(GemmCall& call, const char* entry, const char* vendor, void* handle, int ta, int tb, const Shape& s,
              void* stream, bool scalars_on_device) {
  peat_interpose_gemm_t& g = call.attrs;
  g.struct_size = sizeof(peat_interpose_gemm_t);
  g.entry = entry;
  g.vendor = vendor;
  g.transa = op_char(ta);
  g.transb = op_char(tb);
  if (g.transa == '?' || g.transb == '?') call.supported = false;
  g.m = s.m, g.n = s.n, g.k = s.k;
  g.lda = s.lda, g.ldb = s.ldb, g.ldc = s.ldc, g.ldd = s.ldd;
  g.batch = s.batch;
  const bool batched = s.batch > 1;
  g.stride_a = batched ? s.sa : 0, g.stride_b = batched ? s.sb : 0;
  g.stride_c = batched ? s.sc : 0, g.stride_d = batched ? s.sd : 0;
  g.compute_type = -1;
  g.handle = handle;
  g.stream = stream;
  g.scalars_on_device = scalars_on_device ? 1 : 0;
  call.success = 0;  // rocblas_status_success == HIPBLAS_STATUS_SUCCESS == 0
  static const auto get_device = reinterpret_cast<int (*)(int*)>(dlsym(RTLD_DEFAULT, "hipGetDevice"));
  int device = 0;
  if (get_device != nullptr && get_device(&device) == 0) call.device_id = device;
}

void describe_rocblas(GemmCall& call, const char* entry, rocblas_handle h, rocblas_operation ta, rocblas_operation tb,
                      const Shape& s) {
  using GetStream = rocblas_status (*)(rocblas_handle, hipStream_t*);
  using GetMode = rocblas_status (*)(rocblas_handle, rocblas_pointer_mode*);
  static const auto get_stream = reinterpret_cast<GetStream>(dlsym(RTLD_NEXT, "rocblas_get_stream"));
  static const auto get_mode = reinterpret_cast<GetMode>(dlsym(RTLD_NEXT, "rocblas_get_pointer_mode"));
  hipStream_t stream = nullptr;
  if (get_stream != nullptr && get_stream(h, &stream) != rocblas_status_success) stream = nullptr;
  rocblas_pointer_mode mode = rocblas_pointer_mode_host;
  if (get_mode != nullptr && get_mode(h, &mode) != rocblas_status_success) mode = rocblas_pointer_mode_host;
  describe(call, entry, "rocblas", h, ta, tb, s, stream, mode == rocblas_pointer_mode_device);
}

void describe_hipblas(GemmCall& call, const char* entry, hipblasHandle_t h, hipblasOperation_t ta,
                      hipblasOperation_t tb, const Shape& s) {
  using GetStream = hipblasStatus_t (*)(hipblasHandle_t, hipStream_t*);
  using GetMode = hipblasStatus_t (*)(hipblasHandle_t, hipblasPointerMode_t*);
  static const auto get_stream = reinterpret_cast<GetStream>(dlsym(RTLD_NEXT, "hipblasGetStream"));
  static const auto get_mode = reinterpret_cast<GetMode>(dlsym(RTLD_NEXT, "hipblasGetPointerMode"));
  hipStream_t stream = nullptr;
  if (get_stream != nullptr && get_stream(h, &stream) != HIPBLAS_STATUS_SUCCESS) stream = nullptr;
  hipblasPointerMode_t mode = HIPBLAS_POINTER_MODE_HOST;
  if (get_mode != nullptr && get_mode(h, &mode) != HIPBLAS_STATUS_SUCCESS) mode = HIPBLAS_POINTER_MODE_HOST;
  describe(call, entry, "hipblas", h, ta, tb, s, stream, mode == HIPBLAS_POINTER_MODE_DEVICE);
}

void operands(GemmCall& call, DLDataType scalar, const void* alpha, const void* beta, const void* a, DLDataType at,
              const void* b, DLDataType bt, const void* c, DLDataType ct, void* d, DLDataType dt) {
  peat_interpose_gemm_t& g = call.attrs;
  if (g.scalars_on_device != 0) {
    g.alpha = g.beta = std::numeric_limits<double>::quiet_NaN();
  } else {
    g.alpha = scalar_to_double(alpha, scalar);
    g.beta = scalar_to_double(beta, scalar);
  }
  call.a = a, call.b = b, call.c = c, call.d = d;
  call.a_type = at, call.b_type = bt, call.c_type = ct, call.d_type = dt;
}

template <class Fn>
Fn next(const char* name) {
  return reinterpret_cast<Fn>(next_symbol(name));
}

}  // namespace
}  // namespace peat::interpose

using namespace peat::interpose;

// The typed GEMMs of both libraries share one shape: (handle, ta, tb, m, n, k,
// alpha, A, lda, B, ldb, beta, C, ldc), and the strided-batched ones add the
// three strides and the batch count.
#define PEAT_TYPED_GEMM(Status, Name, Handle, Op, T, DL, Describe, NotInit)                                          \
  PEAT_INTERPOSE_EXPORT Status Name(Handle handle, Op transa, Op transb, int m, int n, int k, const T* alpha,        \
                                    const T* A, int lda, const T* B, int ldb, const T* beta, T* C, int ldc) {        \
    static const auto real = next<decltype(&Name)>(#Name);                                                           \
    if (real == nullptr) return NotInit;                                                                             \
    const auto run = [&] { return static_cast<int>(real(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb,     \
                                                        beta, C, ldc)); };                                           \
    if (!active()) return static_cast<Status>(run());                                                                \
    GemmCall call;                                                                                                   \
    Describe(call, #Name, handle, transa, transb, Shape{m, n, k, lda, ldb, ldc, ldc, 1, 0, 0, 0, 0});                \
    operands(call, DL, alpha, beta, A, DL, B, DL, C, DL, C, DL);                                                     \
    return static_cast<Status>(route(call, run));                                                                    \
  }

#define PEAT_STRIDED_GEMM(Status, Name, Handle, Op, T, DL, Describe, NotInit)                                        \
  PEAT_INTERPOSE_EXPORT Status Name(Handle handle, Op transa, Op transb, int m, int n, int k, const T* alpha,        \
                                    const T* A, int lda, int64_t sa, const T* B, int ldb, int64_t sb, const T* beta, \
                                    T* C, int ldc, int64_t sc, int batch) {                                          \
    static const auto real = next<decltype(&Name)>(#Name);                                                           \
    if (real == nullptr) return NotInit;                                                                             \
    const auto run = [&] { return static_cast<int>(real(handle, transa, transb, m, n, k, alpha, A, lda, sa, B, ldb, \
                                                        sb, beta, C, ldc, sc, batch)); };                            \
    if (!active()) return static_cast<Status>(run());                                                                \
    GemmCall call;                                                                                                   \
    Describe(call, #Name, handle, transa, transb, Shape{m, n, k, lda, ldb, ldc, ldc, batch, sa, sb, sc, sc});        \
    operands(call, DL, alpha, beta, A, DL, B, DL, C, DL, C, DL);                                                     \
    return static_cast<Status>(route(call, run));                                                                    \
  }

PEAT_TYPED_GEMM(rocblas_status, rocblas_sgemm, rocblas_handle, rocblas_operation, float, f32, describe_rocblas,
                rocblas_status_internal_error)
PEAT_TYPED_GEMM(rocblas_status, rocblas_dgemm, rocblas_handle, rocblas_operation, double, f64, describe_rocblas,
                rocblas_status_internal_error)
PEAT_TYPED_GEMM(rocblas_status, rocblas_hgemm, rocblas_handle, rocblas_operation, rocblas_half, f16, describe_rocblas,
                rocblas_status_internal_error)
PEAT_STRIDED_GEMM(rocblas_status, rocblas_sgemm_strided_batched, rocblas_handle, rocblas_operation, float, f32,
                  describe_rocblas, rocblas_status_internal_error)
PEAT_STRIDED_GEMM(rocblas_status, rocblas_dgemm_strided_batched, rocblas_handle, rocblas_operation, double, f64,
                  describe_rocblas, rocblas_status_internal_error)
PEAT_TYPED_GEMM(hipblasStatus_t, hipblasSgemm, hipblasHandle_t, hipblasOperation_t, float, f32, describe_hipblas,
                HIPBLAS_STATUS_NOT_INITIALIZED)
PEAT_TYPED_GEMM(hipblasStatus_t, hipblasDgemm, hipblasHandle_t, hipblasOperation_t, double, f64, describe_hipblas,
                HIPBLAS_STATUS_NOT_INITIALIZED)
PEAT_STRIDED_GEMM(hipblasStatus_t, hipblasSgemmStridedBatched, hipblasHandle_t, hipblasOperation_t, float, f32,
                  describe_hipblas, HIPBLAS_STATUS_NOT_INITIALIZED)
PEAT_STRIDED_GEMM(hipblasStatus_t, hipblasDgemmStridedBatched, hipblasHandle_t, hipblasOperation_t, double, f64,
                  describe_hipblas, HIPBLAS_STATUS_NOT_INITIALIZED)

PEAT_INTERPOSE_EXPORT rocblas_status rocblas_gemm_ex(rocblas_handle handle, rocblas_operation transA,
                                                     rocblas_operation transB, rocblas_int m, rocblas_int n,
                                                     rocblas_int k, const void* alpha, const void* a,
                                                     rocblas_datatype a_type, rocblas_int lda, const void* b,
                                                     rocblas_datatype b_type, rocblas_int ldb, const void* beta,
                                                     const void* c, rocblas_datatype c_type, rocblas_int ldc, void* d,
                                                     rocblas_datatype d_type, rocblas_int ldd,
                                                     rocblas_datatype compute_type, rocblas_gemm_algo algo,
                                                     int32_t solution_index, uint32_t flags) {
  static const auto real = next<decltype(&rocblas_gemm_ex)>("rocblas_gemm_ex");
  if (real == nullptr) return rocblas_status_internal_error;
  const auto run = [&] {
    return static_cast<int>(real(handle, transA, transB, m, n, k, alpha, a, a_type, lda, b, b_type, ldb, beta, c,
                                 c_type, ldc, d, d_type, ldd, compute_type, algo, solution_index, flags));
  };
  if (!active()) return static_cast<rocblas_status>(run());
  GemmCall call;
  describe_rocblas(call, "rocblas_gemm_ex", handle, transA, transB, Shape{m, n, k, lda, ldb, ldc, ldd, 1, 0, 0, 0, 0});
  DLDataType at, bt, ct, dt;
  if (!(dl_type(a_type, &at) & dl_type(b_type, &bt) & dl_type(c_type, &ct) & dl_type(d_type, &dt)))
    call.supported = false;
  operands(call, scalar_type(compute_type), alpha, beta, a, at, b, bt, c, ct, d, dt);
  call.attrs.compute_type = static_cast<int32_t>(compute_type);
  return static_cast<rocblas_status>(route(call, run));
}

PEAT_INTERPOSE_EXPORT rocblas_status rocblas_gemm_strided_batched_ex(
    rocblas_handle handle, rocblas_operation transA, rocblas_operation transB, rocblas_int m, rocblas_int n,
    rocblas_int k, const void* alpha, const void* a, rocblas_datatype a_type, rocblas_int lda, rocblas_stride stride_a,
    const void* b, rocblas_datatype b_type, rocblas_int ldb, rocblas_stride stride_b, const void* beta, const void* c,
    rocblas_datatype c_type, rocblas_int ldc, rocblas_stride stride_c, void* d, rocblas_datatype d_type,
    rocblas_int ldd, rocblas_stride stride_d, rocblas_int batch_count, rocblas_datatype compute_type,
    rocblas_gemm_algo algo, int32_t solution_index, uint32_t flags) {
  static const auto real = next<decltype(&rocblas_gemm_strided_batched_ex)>("rocblas_gemm_strided_batched_ex");
  if (real == nullptr) return rocblas_status_internal_error;
  const auto run = [&] {
    return static_cast<int>(real(handle, transA, transB, m, n, k, alpha, a, a_type, lda, stride_a, b, b_type, ldb,
                                 stride_b, beta, c, c_type, ldc, stride_c, d, d_type, ldd, stride_d, batch_count,
                                 compute_type, algo, solution_index, flags));
  };
  if (!active()) return static_cast<rocblas_status>(run());
  GemmCall call;
  describe_rocblas(call, "rocblas_gemm_strided_batched_ex", handle, transA, transB,
                   Shape{m, n, k, lda, ldb, ldc, ldd, batch_count, stride_a, stride_b, stride_c, stride_d});
  DLDataType at, bt, ct, dt;
  if (!(dl_type(a_type, &at) & dl_type(b_type, &bt) & dl_type(c_type, &ct) & dl_type(d_type, &dt)))
    call.supported = false;
  operands(call, scalar_type(compute_type), alpha, beta, a, at, b, bt, c, ct, d, dt);
  call.attrs.compute_type = static_cast<int32_t>(compute_type);
  return static_cast<rocblas_status>(route(call, run));
}
