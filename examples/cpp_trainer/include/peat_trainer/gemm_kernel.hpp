// gemm_kernel.hpp — a GemmCall as a PEAT kernel call (peat_kernel_fn), following
// the GEMM convention of examples/candidates/peat_gemm_kernel.h.
//
// This is the bridge PEAT's injector and profiler need at the seam: GemmTensors
// describes the call's operands as DLTensor views (no copies), and
// golden_gemm_kernel is the golden GEMM under the peat_kernel_fn signature, so a
// dispatcher can hand both to peat_injector_dispatch:
//
//   void gemm(const GemmCall& call) override {
//     GemmTensors t(call);
//     GoldenKernelContext golden{&call, &golden_gemm_};
//     peat_injector_dispatch(injector_, op_ids_[call.op_index], t.inputs, 2, t.outputs, 1, &t.attrs,
//                            golden_gemm_kernel, &golden, nullptr, nullptr);
//   }
#pragma once

#include "gemm.hpp"
#include "peat_gemm_kernel.h"

namespace peat_trainer {

// The operands of one GemmCall as DLTensors: inputs[0] = op(A) [M, K],
// inputs[1] = op(B) [K, N] (transposes as strides), outputs[0] = C [M, N],
// attrs = {alpha, beta}. Views of the call's buffers, valid while they are;
// not copyable (the tensors point at this object's shape arrays).
struct GemmTensors {
  DLTensor inputs[2];
  DLTensor outputs[1];
  peat_gemm_attrs_t attrs;
  int64_t shapes[3][2];
  int64_t strides[3][2];

  explicit GemmTensors(const GemmCall& call);
  GemmTensors(const GemmTensors&) = delete;
  GemmTensors& operator=(const GemmTensors&) = delete;
};

// ctx of golden_gemm_kernel: the call it stands for (op name, step, ... are
// taken from there) and the golden dispatcher that computes it.
struct GoldenKernelContext {
  const GemmCall* call = nullptr;  // may be null: then only the tensors describe the call
  GemmDispatcher* golden = nullptr;
};

// The golden GEMM as a peat_kernel_fn. The operands are read from the tensors,
// not from ctx->call, so it computes whatever outputs PEAT hands it (a scratch
// copy when PEAT runs golden and candidate side by side). Returns 0, or 1 when
// ctx or the tensors do not follow the convention. Never throws.
extern "C" int32_t golden_gemm_kernel(void* ctx, const DLTensor* inputs, int32_t n_in, DLTensor* outputs, int32_t n_out,
                                      const void* attrs);

// Runs a peat_kernel_fn GEMM for `call` (what a candidate adapter receives from PEAT).
// Returns the kernel's status.
int32_t run_gemm_kernel(peat_gemm_kernel_fn kernel, void* ctx, const GemmCall& call);

}  // namespace peat_trainer
