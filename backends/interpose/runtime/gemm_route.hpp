// The vendor-neutral half of the library interposers: one intercepted GEMM is
// routed to libpeat's profiler and runtime injector through the public C API
// (peat/session.h, profiler.h, injector.h, backend.h). The vendor wrappers
// (cublas/, rocblas/) only translate their arguments into a GemmCall and hand
// over a callable that runs the real library function.
#pragma once

#include "backends/interpose/peat_interpose.h"

#include <dlpack/dlpack.h>

#include <cstdint>

namespace peat::interpose {

// One GEMM call, D = alpha * op(A) * op(B) + beta * C, column-major.
struct GemmCall {
  peat_interpose_gemm_t attrs{};  // what the candidate sees (entry, dims, scalars, handle, stream)
  DLDataType a_type{}, b_type{}, c_type{}, d_type{};
  bool supported = true;          // false: a dtype PEAT does not handle (counted, passed through)
  const void* a = nullptr;
  const void* b = nullptr;
  const void* c = nullptr;
  void* d = nullptr;              // == c for in-place GEMMs
  int success = 0;                // the vendor's success status
  int32_t device_id = 0;          // the device the handle works on
};

// Runs the real function: returns the vendor status.
using RealFn = int (*)(void* ctx);

// Routes one call: counts it, asks the injector what to do, runs the real
// function (or the candidate), records it when sampled. Never throws; any
// PEAT problem is logged once and the real function runs as without PEAT.
int route_gemm(GemmCall& call, RealFn real, void* ctx);

template <class F>
int route(GemmCall& call, const F& real) {
  return route_gemm(call, [](void* p) -> int { return (*static_cast<const F*>(p))(); }, const_cast<F*>(&real));
}

// True when interposition is on and the calling thread is not already inside
// an intercepted call: the wrappers check it first and otherwise call the
// real function directly, without describing the call.
bool active();

// True while the calling thread is inside an intercepted call, so that a
// vendor library calling another intercepted entry point (hipBLAS calling
// rocBLAS) is counted once.
bool in_intercepted_call();

// The resolved next definition of `name` (dlsym(RTLD_NEXT)), or NULL with one
// line on stderr / the log.
void* next_symbol(const char* name);

// Widens a scalar of dtype `t` at host address p to double (NaN if unknown).
double scalar_to_double(const void* p, DLDataType t);

// DLPack dtypes.
constexpr DLDataType f16{kDLFloat, 16, 1}, bf16{kDLBfloat, 16, 1}, f32{kDLFloat, 32, 1}, f64{kDLFloat, 64, 1};

}  // namespace peat::interpose
