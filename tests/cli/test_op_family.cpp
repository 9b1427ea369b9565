// The op-name clustering of `peat compare` (tools/peat/op_family.hpp, through
// the library's peat_op_family). Op kinds and K: tests/unit/test_op_context.cpp.
#include "op_family.hpp"

#include <catch2/catch.hpp>

using namespace peat::cli;

TEST_CASE("op names of one GEMM on several stacks fall into the gemm family") {
  for (const char* name : {"aten::mm", "mm", "cublasSgemm_v2", "gemm", "matmul", "sgemm", "aten::addmm.default",
                           "hipblasSgemm", "rocblas_sgemm", "cublasGemmEx", "cublasLtMatmul", "torch.matmul", "aten::bmm",
                           "linear", "gemm.fc1", "GEMM"})
    CHECK(op_family(name) == "gemm");
}

TEST_CASE("convolutions, attention and norms have their own families") {
  CHECK(op_family("aten::convolution") == "conv");
  CHECK(op_family("cudnnConvolutionForward") == "conv");
  CHECK(op_family("miopenConvolutionForward") == "conv");
  CHECK(op_family("conv2d") == "conv");
  CHECK(op_family("aten::_scaled_dot_product_attention") == "attention");
  CHECK(op_family("flash_attn_fwd") == "attention");
  CHECK(op_family("aten::native_layer_norm") == "layer_norm");
  CHECK(op_family("aten::_softmax") == "softmax");
  CHECK(op_family("cublasSgemv_v2") == "gemv");
  CHECK(op_family("aten::mv") == "gemv");
}

TEST_CASE("names without a rule keep their normalised form") {
  CHECK(op_family("aten::relu_") == "relu");
  CHECK(op_family("aten::add.Tensor") == "add");
  CHECK(op_family("my_custom_op") == "my_custom_op");
  CHECK(op_family("aten::mm.out") == "gemm");
  CHECK(op_family("index") == "index");  // no suffix rule eats real names
}

TEST_CASE("layers lose wrapper prefixes") {
  CHECK(normalise_layer("module.Encoder.Layer3") == "encoder.layer3");
  CHECK(normalise_layer("model.fc1") == "fc1");
  CHECK(normalise_layer("fc1") == "fc1");
}
