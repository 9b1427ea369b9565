// The one rule for an op call's Detector context (lib/detector/op_context):
// kind and reduction length K from the recorded name, input shapes and
// attributes, the same for the CLI, Python and peat.torch.
#include "detector/op_context.hpp"

#include <peat/detector.h>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace peat::impl::detector;

namespace {

OpContext infer(const char* op, std::vector<std::vector<int64_t>> shapes, std::vector<peat_attr_t> attrs = {},
                uint64_t output = 0, int64_t signature_k = 0) {
  static std::vector<std::vector<int64_t>> keep;  // the spans point here
  keep = std::move(shapes);
  OpCall call;
  call.op = op;
  for (const auto& s : keep) call.inputs.emplace_back(s.data(), s.size());
  static std::vector<peat_attr_t> keep_attrs;
  keep_attrs = std::move(attrs);
  call.attrs = keep_attrs;
  call.output = output;
  return infer_op_context(call, signature_k);
}

peat_attr_t int_attr(const char* key, int64_t v) {
  peat_attr_t a{};
  a.key = key;
  a.type = PEAT_ATTR_INT;
  a.i = v;
  return a;
}

}  // namespace

TEST_CASE("op context: the GEMM family's K is the product's inner extent", "[detector]") {
  CHECK(infer("fc/aten::mm", {{16, 128}, {128, 10}}).reduction_length == 128);
  CHECK(infer("fc/aten::addmm", {{10}, {16, 128}, {128, 10}}).reduction_length == 128);  // addmm(bias, a, b)
  CHECK(infer("attn/aten::baddbmm", {{4, 5, 5}, {4, 5, 8}, {4, 8, 5}}).reduction_length == 8);
  CHECK(infer("aten::bmm", {{4, 5, 8}, {4, 8, 5}}).reduction_length == 8);
  CHECK(infer("aten::linear", {{16, 64}, {10, 64}}).reduction_length == 64);
  CHECK(infer("cublasSgemm_v2", {{16, 32}, {32, 8}}).kind == PEAT_OP_KIND_GEMM);
  CHECK(infer("gemm", {{16, 32}}, {int_attr("K", 77)}).reduction_length == 77);  // an explicit K wins
  CHECK(infer("fc/aten::mm", {{16, 128}, {128, 10}}).kind == PEAT_OP_KIND_GEMM);
  // no K from anywhere: UNKNOWN, unless the signature carries one
  CHECK(infer("gemm", {}).kind == PEAT_OP_KIND_UNKNOWN);
  CHECK(infer("gemm", {}, {}, 0, 32).kind == PEAT_OP_KIND_GEMM);
}

TEST_CASE("op context: convolutions and each convolution_backward output", "[detector]") {
  const auto c = infer("conv1/aten::convolution", {{8, 3, 12, 12}, {16, 3, 3, 3}, {16}});
  CHECK(c.kind == PEAT_OP_KIND_CONV);
  CHECK(c.reduction_length == 27);
  // convolution_backward(grad_out [N, C_out, H, W], input, weight [C_out, C_in/g, kh, kw], ...)
  const std::vector<std::vector<int64_t>> shapes = {{8, 16, 12, 12}, {8, 3, 12, 12}, {16, 3, 3, 3}};
  peat_attr_t groups = int_attr("arg9", 1);
  const auto gi = infer("conv2/aten::convolution_backward", shapes, {groups}, 0);
  CHECK(gi.kind == PEAT_OP_KIND_CONV);
  CHECK(gi.reduction_length == 16 * 9);
  const auto gw = infer("conv2/aten::convolution_backward", shapes, {groups}, 1);
  CHECK(gw.kind == PEAT_OP_KIND_CONV);
  CHECK(gw.reduction_length == 8 * 144);
  const auto gb = infer("conv2/aten::convolution_backward", shapes, {groups}, 2);
  CHECK(gb.kind == PEAT_OP_KIND_REDUCTION);
  CHECK(gb.reduction_length == 8 * 144);
  // output_mask [False, True, True]: output 0 is the weight gradient
  const int64_t mask[3] = {0, 1, 1};
  peat_attr_t m{};
  m.key = "arg10";
  m.type = PEAT_ATTR_INT_ARRAY;
  m.ints = mask;
  m.n_ints = 3;
  const auto first = infer("conv1/aten::convolution_backward", shapes, {groups, m}, 0);
  CHECK(first.kind == PEAT_OP_KIND_CONV);
  CHECK(first.reduction_length == 8 * 144);
  CHECK(infer("conv1/aten::convolution_backward", shapes, {groups, m}, 1).kind == PEAT_OP_KIND_REDUCTION);
  CHECK(infer("conv1/aten::convolution_backward", shapes, {groups, m}, 2).kind == PEAT_OP_KIND_UNKNOWN);
}

TEST_CASE("op context: kinds of the other families", "[detector]") {
  CHECK(infer("aten::_softmax", {{4, 10}}, {}, 0, 10).kind == PEAT_OP_KIND_REDUCTION);
  CHECK(infer("norm/aten::native_layer_norm", {{4, 10}}, {}, 0, 10).kind == PEAT_OP_KIND_REDUCTION);
  CHECK(infer("aten::relu", {{4, 10}}).kind == PEAT_OP_KIND_ELEMENTWISE);
  CHECK(infer("my_custom_op", {{4, 10}}).kind == PEAT_OP_KIND_UNKNOWN);
  CHECK(op_family("aten::mm.out") == "gemm");
  CHECK(normalise_op_name("aten::mm.out") == "mm");
  CHECK(normalise_op_name("index") == "index");
}

TEST_CASE("op context: the C API checks, infers and names families", "[detector]") {
  peat_detect_context_t ctx;
  peat_detect_context_init(&ctx);
  const int64_t a[2] = {16, 128}, b[2] = {128, 10}, bias[1] = {10};
  const int64_t* shapes[3] = {bias, a, b};
  const int32_t ndims[3] = {1, 2, 2};
  REQUIRE(peat_detect_context_infer(&ctx, "fc/aten::addmm", 3, ndims, shapes, nullptr, 0, 0, 0) == PEAT_STATUS_OK);
  CHECK(ctx.op_kind == PEAT_OP_KIND_GEMM);
  CHECK(ctx.reduction_length == 128);
  CHECK(peat_detect_context_infer(&ctx, nullptr, 0, nullptr, nullptr, nullptr, 0, 0, 0) ==
        PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(peat_detect_context_infer(&ctx, "mm", 2, nullptr, shapes, nullptr, 0, 0, 0) == PEAT_STATUS_INVALID_ARGUMENT);
  ctx.struct_size = 8;
  CHECK(peat_detect_context_infer(&ctx, "mm", 0, nullptr, nullptr, nullptr, 0, 0, 0) == PEAT_STATUS_VERSION_MISMATCH);
  char buf[5];
  CHECK(peat_op_family("cublasSgemm_v2", buf, sizeof buf) == 4);
  CHECK(std::string(buf) == "gemm");
  CHECK(peat_op_family("aten::native_layer_norm", buf, sizeof buf) == 10);
  CHECK(std::string(buf) == "laye");  // truncated, NUL-terminated
  CHECK(peat_op_family(nullptr, buf, sizeof buf) == 0);
  CHECK(buf[0] == '\0');
}
