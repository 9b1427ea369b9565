#include "peat_trainer/gemm_kernel.hpp"

namespace peat_trainer {

GemmTensors::GemmTensors(const GemmCall& c) {
  peat_gemm_tensor(&inputs[0], shapes[0], strides[0], c.A, c.M, c.K, c.trans_a ? 1 : 0, c.lda);
  peat_gemm_tensor(&inputs[1], shapes[1], strides[1], c.B, c.K, c.N, c.trans_b ? 1 : 0, c.ldb);
  peat_gemm_tensor(&outputs[0], shapes[2], strides[2], c.C, c.M, c.N, 0, c.ldc);
  attrs.struct_size = sizeof(peat_gemm_attrs_t);
  attrs.alpha = c.alpha;
  attrs.beta = c.beta;
}

extern "C" int32_t golden_gemm_kernel(void* ctx, const DLTensor* inputs, int32_t n_in, DLTensor* outputs, int32_t n_out,
                                      const void* attrs) {
  auto* g = static_cast<GoldenKernelContext*>(ctx);
  if (g == nullptr || g->golden == nullptr) return 1;
  peat_gemm_args_t a;
  if (peat_gemm_args_of(inputs, n_in, outputs, n_out, attrs, &a) != 0) return 1;
  GemmCall call = g->call ? *g->call : GemmCall{};
  call.M = a.a.rows;
  call.N = a.b.cols;
  call.K = a.a.cols;
  call.trans_a = a.a.trans != 0;
  call.trans_b = a.b.trans != 0;
  call.alpha = a.alpha;
  call.beta = a.beta;
  call.A = a.a.data;
  call.lda = a.a.ld;
  call.B = a.b.data;
  call.ldb = a.b.ld;
  call.C = a.c.data;
  call.ldc = a.c.ld;
  try {
    g->golden->gemm(call);
  } catch (...) {
    return 1;
  }
  return 0;
}

int32_t run_gemm_kernel(peat_gemm_kernel_fn kernel, void* ctx, const GemmCall& call) {
  GemmTensors t(call);
  return kernel(ctx, t.inputs, 2, t.outputs, 1, &t.attrs);
}

}  // namespace peat_trainer
