// libpeat-interpose-cublas.so: LD_PRELOAD interposer for the GEMM entry points
// of cuBLAS. Prototypes come from the real cuBLAS header
// (/usr/local/cuda/include/cublas_api.h), so a signature that drifts in a new
// CUDA release fails to compile instead of corrupting arguments. Each wrapper
// resolves the real function with dlsym(RTLD_NEXT) and routes the call through
// runtime/gemm_route (profiler + runtime injector); with interposition off it
// only adds a flag test. The exported set is fixed by exports.map.
//
// Wrapped: cublasSgemm_v2, cublasDgemm_v2, cublasHgemm, cublasGemmEx,
// cublasSgemmStridedBatched, cublasDgemmStridedBatched,
// cublasGemmStridedBatchedEx. Not wrapped: the pointer-array batched entries
// (cublas*gemmBatched, cublasGemmBatchedEx: their pointer arrays live in
// device memory and would need a synchronous read per call), complex GEMMs,
// and the _64 variants (int64 dimensions) of CUDA 12+.
#include <cublas_api.h>
#include <library_types.h>

#include "backends/interpose/runtime/gemm_route.hpp"
#include "backends/interpose/runtime/runtime.hpp"

#include <dlfcn.h>

#include <limits>

#define PEAT_INTERPOSE_EXPORT extern "C" __attribute__((visibility("default")))

namespace peat::interpose {

const char* const kDefaultBackend = "cuda";
const char* const kInterposerName = "peat-interpose-cublas";

namespace {

char op_char(cublasOperation_t op) {
  switch (op) {
    case CUBLAS_OP_N: return 'N';
    case CUBLAS_OP_T: return 'T';
    case CUBLAS_OP_C: return 'C';
    default: return '?';
  }
}

// cudaDataType -> DLPack; false for the types PEAT does not handle.
bool dl_type(cudaDataType t, DLDataType* out) {
  switch (t) {
    case CUDA_R_16F: *out = f16; return true;
    case CUDA_R_16BF: *out = bf16; return true;
    case CUDA_R_32F: *out = f32; return true;
    case CUDA_R_64F: *out = f64; return true;
    default: *out = DLDataType{kDLOpaqueHandle, 8, 1}; return false;
  }
}

// The type of alpha and beta for a compute type (cuBLAS documentation of cublasGemmEx).
DLDataType scalar_type(cublasComputeType_t c) {
  switch (c) {
    case CUBLAS_COMPUTE_16F:
    case CUBLAS_COMPUTE_16F_PEDANTIC: return f16;
    case CUBLAS_COMPUTE_64F:
    case CUBLAS_COMPUTE_64F_PEDANTIC: return f64;
    case CUBLAS_COMPUTE_32I:
    case CUBLAS_COMPUTE_32I_PEDANTIC: return DLDataType{kDLInt, 32, 1};
    default: return f32;  // the 32F family, fast and emulated modes included
  }
}

// Describes the call's shape and the handle's state (stream, pointer mode, device).
void describe(GemmCall& call, const char* entry, cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb,
              int m, int n, int k, int lda, int ldb, int ldc, int batch, long long sa, long long sb, long long sc) {
  peat_interpose_gemm_t& g = call.attrs;
  g.struct_size = sizeof(peat_interpose_gemm_t);
  g.entry = entry;
  g.vendor = "cublas";
  g.transa = op_char(ta);
  g.transb = op_char(tb);
  if (g.transa == '?' || g.transb == '?') call.supported = false;
  g.m = m, g.n = n, g.k = k;
  g.lda = lda, g.ldb = ldb, g.ldc = ldc, g.ldd = ldc;
  g.batch = batch;
  g.stride_a = batch > 1 ? sa : 0, g.stride_b = batch > 1 ? sb : 0;
  g.stride_c = g.stride_d = batch > 1 ? sc : 0;
  g.compute_type = -1;
  g.handle = handle;
  call.success = CUBLAS_STATUS_SUCCESS;
  using GetStream = cublasStatus_t (*)(cublasHandle_t, cudaStream_t*);
  using GetMode = cublasStatus_t (*)(cublasHandle_t, cublasPointerMode_t*);
  static const auto get_stream = reinterpret_cast<GetStream>(dlsym(RTLD_NEXT, "cublasGetStream_v2"));
  static const auto get_mode = reinterpret_cast<GetMode>(dlsym(RTLD_NEXT, "cublasGetPointerMode_v2"));
  static const auto get_device = reinterpret_cast<int (*)(int*)>(dlsym(RTLD_DEFAULT, "cudaGetDevice"));
  cudaStream_t stream = nullptr;
  if (get_stream != nullptr && get_stream(handle, &stream) == CUBLAS_STATUS_SUCCESS) g.stream = stream;
  cublasPointerMode_t mode = CUBLAS_POINTER_MODE_HOST;
  if (get_mode != nullptr && get_mode(handle, &mode) == CUBLAS_STATUS_SUCCESS && mode == CUBLAS_POINTER_MODE_DEVICE)
    g.scalars_on_device = 1;
  // The program's current device: through its CUDA runtime when that is a
  // shared library, else the driver's current context (static cudart).
  static const auto ctx_device = reinterpret_cast<int (*)(int*)>(dlsym(RTLD_DEFAULT, "cuCtxGetDevice"));
  int device = 0;
  if ((get_device != nullptr && get_device(&device) == 0) || (ctx_device != nullptr && ctx_device(&device) == 0))
    call.device_id = device;
}

void operands(GemmCall& call, DLDataType scalar, const void* alpha, const void* beta, const void* a, DLDataType at,
              const void* b, DLDataType bt, void* c, DLDataType ct) {
  peat_interpose_gemm_t& g = call.attrs;
  if (g.scalars_on_device != 0) {
    g.alpha = g.beta = std::numeric_limits<double>::quiet_NaN();
  } else {
    g.alpha = scalar_to_double(alpha, scalar);
    g.beta = scalar_to_double(beta, scalar);
  }
  call.a = a, call.b = b, call.c = c, call.d = c;
  call.a_type = at, call.b_type = bt, call.c_type = call.d_type = ct;
}

template <class Fn>
Fn next(const char* name) {
  return reinterpret_cast<Fn>(next_symbol(name));
}

}  // namespace
}  // namespace peat::interpose

using namespace peat::interpose;

PEAT_INTERPOSE_EXPORT cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
                                                    cublasOperation_t transb, int m, int n, int k, const float* alpha,
                                                    const float* A, int lda, const float* B, int ldb,
                                                    const float* beta, float* C, int ldc) {
  static const auto real = next<decltype(&cublasSgemm_v2)>("cublasSgemm_v2");
  if (real == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const auto run = [&] { return static_cast<int>(real(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc)); };
  if (!active()) return static_cast<cublasStatus_t>(run());
  GemmCall call;
  describe(call, "cublasSgemm_v2", handle, transa, transb, m, n, k, lda, ldb, ldc, 1, 0, 0, 0);
  operands(call, f32, alpha, beta, A, f32, B, f32, C, f32);
  return static_cast<cublasStatus_t>(route(call, run));
}

PEAT_INTERPOSE_EXPORT cublasStatus_t cublasDgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
                                                    cublasOperation_t transb, int m, int n, int k, const double* alpha,
                                                    const double* A, int lda, const double* B, int ldb,
                                                    const double* beta, double* C, int ldc) {
  static const auto real = next<decltype(&cublasDgemm_v2)>("cublasDgemm_v2");
  if (real == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const auto run = [&] { return static_cast<int>(real(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc)); };
  if (!active()) return static_cast<cublasStatus_t>(run());
  GemmCall call;
  describe(call, "cublasDgemm_v2", handle, transa, transb, m, n, k, lda, ldb, ldc, 1, 0, 0, 0);
  operands(call, f64, alpha, beta, A, f64, B, f64, C, f64);
  return static_cast<cublasStatus_t>(route(call, run));
}

PEAT_INTERPOSE_EXPORT cublasStatus_t cublasHgemm(cublasHandle_t handle, cublasOperation_t transa,
                                                 cublasOperation_t transb, int m, int n, int k, const __half* alpha,
                                                 const __half* A, int lda, const __half* B, int ldb,
                                                 const __half* beta, __half* C, int ldc) {
  static const auto real = next<decltype(&cublasHgemm)>("cublasHgemm");
  if (real == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const auto run = [&] { return static_cast<int>(real(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc)); };
  if (!active()) return static_cast<cublasStatus_t>(run());
  GemmCall call;
  describe(call, "cublasHgemm", handle, transa, transb, m, n, k, lda, ldb, ldc, 1, 0, 0, 0);
  operands(call, f16, alpha, beta, A, f16, B, f16, C, f16);
  return static_cast<cublasStatus_t>(route(call, run));
}

PEAT_INTERPOSE_EXPORT cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                                                  cublasOperation_t transb, int m, int n, int k, const void* alpha,
                                                  const void* A, cudaDataType Atype, int lda, const void* B,
                                                  cudaDataType Btype, int ldb, const void* beta, void* C,
                                                  cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                                                  cublasGemmAlgo_t algo) {
  using Fn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                                cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
  static const auto real = next<Fn>("cublasGemmEx");
  if (real == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const auto run = [&] {
    return static_cast<int>(real(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype,
                                 ldc, computeType, algo));
  };
  if (!active()) return static_cast<cublasStatus_t>(run());
  GemmCall call;
  describe(call, "cublasGemmEx", handle, transa, transb, m, n, k, lda, ldb, ldc, 1, 0, 0, 0);
  DLDataType at, bt, ct;
  const bool ok = dl_type(Atype, &at) & dl_type(Btype, &bt) & dl_type(Ctype, &ct);
  if (!ok) call.supported = false;
  operands(call, scalar_type(computeType), alpha, beta, A, at, B, bt, C, ct);
  call.attrs.compute_type = static_cast<int32_t>(computeType);
  return static_cast<cublasStatus_t>(route(call, run));
}

PEAT_INTERPOSE_EXPORT cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                                               cublasOperation_t transb, int m, int n, int k,
                                                               const float* alpha, const float* A, int lda,
                                                               long long int strideA, const float* B, int ldb,
                                                               long long int strideB, const float* beta, float* C,
                                                               int ldc, long long int strideC, int batchCount) {
  static const auto real = next<decltype(&cublasSgemmStridedBatched)>("cublasSgemmStridedBatched");
  if (real == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const auto run = [&] {
    return static_cast<int>(real(handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C,
                                 ldc, strideC, batchCount));
  };
  if (!active()) return static_cast<cublasStatus_t>(run());
  GemmCall call;
  describe(call, "cublasSgemmStridedBatched", handle, transa, transb, m, n, k, lda, ldb, ldc, batchCount, strideA,
           strideB, strideC);
  operands(call, f32, alpha, beta, A, f32, B, f32, C, f32);
  return static_cast<cublasStatus_t>(route(call, run));
}

PEAT_INTERPOSE_EXPORT cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                                               cublasOperation_t transb, int m, int n, int k,
                                                               const double* alpha, const double* A, int lda,
                                                               long long int strideA, const double* B, int ldb,
                                                               long long int strideB, const double* beta, double* C,
                                                               int ldc, long long int strideC, int batchCount) {
  static const auto real = next<decltype(&cublasDgemmStridedBatched)>("cublasDgemmStridedBatched");
  if (real == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const auto run = [&] {
    return static_cast<int>(real(handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C,
                                 ldc, strideC, batchCount));
  };
  if (!active()) return static_cast<cublasStatus_t>(run());
  GemmCall call;
  describe(call, "cublasDgemmStridedBatched", handle, transa, transb, m, n, k, lda, ldb, ldc, batchCount, strideA,
           strideB, strideC);
  operands(call, f64, alpha, beta, A, f64, B, f64, C, f64);
  return static_cast<cublasStatus_t>(route(call, run));
}

PEAT_INTERPOSE_EXPORT cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k, const void* alpha,
    const void* A, cudaDataType Atype, int lda, long long int strideA, const void* B, cudaDataType Btype, int ldb,
    long long int strideB, const void* beta, void* C, cudaDataType Ctype, int ldc, long long int strideC,
    int batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  using Fn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                const void*, cudaDataType, int, long long int, const void*, cudaDataType, int,
                                long long int, const void*, void*, cudaDataType, int, long long int, int,
                                cublasComputeType_t, cublasGemmAlgo_t);
  static const auto real = next<Fn>("cublasGemmStridedBatchedEx");
  if (real == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const auto run = [&] {
    return static_cast<int>(real(handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb,
                                 strideB, beta, C, Ctype, ldc, strideC, batchCount, computeType, algo));
  };
  if (!active()) return static_cast<cublasStatus_t>(run());
  GemmCall call;
  describe(call, "cublasGemmStridedBatchedEx", handle, transa, transb, m, n, k, lda, ldb, ldc, batchCount, strideA,
           strideB, strideC);
  DLDataType at, bt, ct;
  const bool ok = dl_type(Atype, &at) & dl_type(Btype, &bt) & dl_type(Ctype, &ct);
  if (!ok) call.supported = false;
  operands(call, scalar_type(computeType), alpha, beta, A, at, B, bt, C, ct);
  call.attrs.compute_type = static_cast<int32_t>(computeType);
  return static_cast<cublasStatus_t>(route(call, run));
}
