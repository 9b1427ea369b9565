#include "lib/detector/op_context.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <utility>

namespace peat::impl::detector {

namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) { return s.size() >= p.size() && s.substr(s.size() - p.size()) == p; }
bool contains(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

bool strip_prefix(std::string& s, std::string_view p) {
  if (!starts_with(s, p) || s.size() == p.size()) return false;
  s.erase(0, p.size());
  return true;
}

bool strip_suffix(std::string& s, std::string_view p) {
  if (!ends_with(s, p) || s.size() == p.size()) return false;
  s.erase(s.size() - p.size());
  return true;
}

// The aten overload packet of a recorded name ("fc/aten::addmm.default" -> "addmm").
std::string_view packet_of(std::string_view op) {
  if (const auto p = op.rfind("::"); p != std::string_view::npos) op.remove_prefix(p + 2);
  if (const auto p = op.find_first_of(". "); p != std::string_view::npos) op = op.substr(0, p);
  return op;
}

const peat_attr_t* find_attr(std::span<const peat_attr_t> attrs, std::string_view key) {
  for (const peat_attr_t& a : attrs)
    if (a.key != nullptr && key == a.key) return &a;
  return nullptr;
}

int64_t int_attr(std::span<const peat_attr_t> attrs, std::string_view key, int64_t fallback) {
  const peat_attr_t* a = find_attr(attrs, key);
  return a != nullptr && a->type == PEAT_ATTR_INT ? a->i : fallback;
}

int64_t product(std::span<const int64_t> s, std::size_t from) {
  int64_t p = 1;
  for (std::size_t i = from; i < s.size(); ++i) p *= s[i];
  return p;
}

int64_t last_extent(const OpCall& c, std::size_t input) {
  return input < c.inputs.size() && !c.inputs[input].empty() ? c.inputs[input].back() : 0;
}

// Which of (grad input, grad weight, grad bias) output `output` of a
// convolution_backward record is: absent gradients (output_mask, peat.torch's
// attribute arg10) are not recorded. -1 when unknown.
int conv_backward_gradient(const OpCall& c) {
  bool mask[3] = {true, true, true};
  if (const peat_attr_t* m = find_attr(c.attrs, "arg10"); m != nullptr && m->type == PEAT_ATTR_INT_ARRAY)
    for (uint64_t i = 0; i < 3; ++i) mask[i] = i < m->n_ints && m->ints[i] != 0;
  uint64_t seen = 0;
  for (int g = 0; g < 3; ++g)
    if (mask[g] && seen++ == c.output) return g;
  return -1;
}

int64_t numel(std::span<const int64_t> shape) { return product(shape, 0); }

// Terms per output of a reduction-like op, from input 0's shape and the
// recorded positional attributes (argN = the op's N-th argument).
int64_t reduction_terms(const OpCall& c, std::string_view family) {
  if (c.inputs.empty() || c.inputs[0].empty()) return 0;
  const auto in = c.inputs[0];
  const auto nd = static_cast<int64_t>(in.size());
  auto dim_extent = [&](int64_t d) { d = d < 0 ? d + nd : d; return d >= 0 && d < nd ? in[static_cast<std::size_t>(d)] : 0; };
  if (family == "softmax") {  // _softmax(self, dim, half_to_float): the softmax dimension
    const peat_attr_t* a = find_attr(c.attrs, "arg1");
    return a != nullptr && a->type == PEAT_ATTR_INT ? dim_extent(a->i) : in.back();
  }
  if (family == "layer_norm") {  // native_layer_norm(input, normalized_shape, ...)
    const peat_attr_t* a = find_attr(c.attrs, "arg1");
    if (a != nullptr && a->type == PEAT_ATTR_INT_ARRAY && a->n_ints > 0) {
      int64_t k = 1;
      for (uint64_t i = 0; i < a->n_ints; ++i) k *= a->ints[i];
      return k;
    }
    return in.back();
  }
  if (family == "batch_norm")  // statistics over N and the spatial extents of each channel
    return nd >= 2 && in[1] > 0 ? numel(in) / in[1] : numel(in);
  if (family == "group_norm") {  // native_group_norm(input, weight, bias, N, C, HxW, group, eps)
    const int64_t groups = std::max<int64_t>(int_attr(c.attrs, "arg6", 1), 1);
    return nd >= 2 && in[0] > 0 ? numel(in) / in[0] / groups : numel(in);
  }
  if (family == "rms_norm") return in.back();
  // sum / mean / losses: over the listed dims, else every element.
  if (const peat_attr_t* a = find_attr(c.attrs, "arg1"); a != nullptr && a->type == PEAT_ATTR_INT_ARRAY && a->n_ints > 0) {
    int64_t k = 1;
    for (uint64_t i = 0; i < a->n_ints; ++i) k *= dim_extent(a->ints[i]);
    return k;
  }
  return numel(in);
}

bool is_elementwise(std::string_view f) {
  static constexpr std::string_view names[] = {
      "relu", "gelu", "add", "mul", "sub", "div", "sigmoid", "tanh", "exp", "log", "erf", "silu", "softplus",
      "sqrt", "rsqrt", "pow", "neg", "abs", "clamp", "hardtanh", "leaky_relu", "elu", "threshold", "where",
      "gelu_backward", "threshold_backward", "sigmoid_backward", "tanh_backward", "silu_backward", "addcmul",
      "addcdiv", "lerp", "dropout", "native_dropout", "mish", "reciprocal", "sin", "cos", "square"};
  for (std::string_view n : names)
    if (f == n) return true;
  return false;
}

OpContext infer(const OpCall& c) {
  OpContext ctx;
  const std::string_view packet = packet_of(c.op);
  const std::string family = op_family(c.op);
  if (const int64_t k = std::max<int64_t>(int_attr(c.attrs, "K", 0), int_attr(c.attrs, "k", 0)); k > 0) {
    ctx.reduction_length = k;  // an explicit K wins (the C trainer and interposers record it)
  }
  if (packet == "convolution_backward") {
    const int g = conv_backward_gradient(c);
    if (g < 0 || c.inputs.size() < 3) return ctx;
    const auto grad_out = c.inputs[0], weight = c.inputs[2];
    ctx.kind = g == 2 ? PEAT_OP_KIND_REDUCTION : PEAT_OP_KIND_CONV;
    if (ctx.reduction_length > 0) return ctx;
    if (g == 0) {  // grad input: C_out / groups * kernel size terms
      const int64_t groups = std::max<int64_t>(int_attr(c.attrs, "arg9", 1), 1);
      ctx.reduction_length = weight.empty() ? 0 : weight[0] / groups * product(weight, 2);
    } else {  // grad weight, grad bias: N * output size terms
      ctx.reduction_length = grad_out.empty() ? 0 : grad_out[0] * product(grad_out, 2);
    }
    return ctx;
  }
  if (family == "gemm" || family == "gemv" || family == "attention") {
    ctx.kind = PEAT_OP_KIND_GEMM;
    if (ctx.reduction_length == 0)  // addmm(bias, a, b), baddbmm, addmv: the product's left operand is input 1
      ctx.reduction_length = packet == "addmm" || packet == "baddbmm" || packet == "addmv" ? last_extent(c, 1)
                                                                                          : last_extent(c, 0);
  } else if (family == "conv") {
    ctx.kind = PEAT_OP_KIND_CONV;
    if (ctx.reduction_length == 0 && c.inputs.size() >= 2) ctx.reduction_length = product(c.inputs[1], 1);
  } else if (family == "softmax" || family == "layer_norm" || family == "batch_norm" || family == "group_norm" ||
             family == "rms_norm" || family == "reduction" || family == "loss") {
    // Reductions: K = the terms each output sums (the normwise rounding bound
    // sqrt(K) u applies; per-element relative errors do not, where results cancel).
    ctx.kind = PEAT_OP_KIND_REDUCTION;
    if (ctx.reduction_length == 0) ctx.reduction_length = reduction_terms(c, family);
  } else if (is_elementwise(family)) {
    ctx.kind = PEAT_OP_KIND_ELEMENTWISE;
  }
  return ctx;
}

}  // namespace

std::string normalise_op_name(std::string_view name) {
  std::string s(name);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  // Namespaces: keep the part after the last "::" and the known dotted prefixes.
  if (const auto p = s.rfind("::"); p != std::string::npos && p + 2 < s.size()) s.erase(0, p + 2);
  for (bool again = true; again;) {
    again = false;
    for (std::string_view p : {"torch.ops.aten.", "torch.nn.functional.", "torch.", "aten.", "nn.functional.",
                               "functional.", "nn.", "f.", "tf.", "jax.lax.", "lax."})
      again = again || strip_prefix(s, p);
  }
  // Overload and version suffixes.
  for (bool again = true; again;) {
    again = false;
    for (std::string_view p : {".default", ".out", ".tensor", ".self", ".int", "_v2", "_v3", "_out", "_"})
      again = again || strip_suffix(s, p);
  }
  // Vendor library prefixes (cublasSgemm -> sgemm, cudnnConvolutionForward -> convolutionforward).
  for (std::string_view p : {"cublaslt", "cublas", "hipblaslt", "hipblas", "rocblas_", "rocblas", "cudnn", "miopen",
                             "onednn_", "dnnl_", "mkl_", "cblas_", "oneapi_"})
    if (strip_prefix(s, p)) break;
  while (!s.empty() && (s.front() == '_' || s.front() == '.')) s.erase(0, 1);
  return s.empty() ? std::string(name) : s;
}

std::string op_family(std::string_view name) {
  const std::string s = normalise_op_name(name);
  // Exact names first, then substrings; first match wins.
  static const std::array<std::pair<std::string_view, std::string_view>, 16> exact = {{
      {"mm", "gemm"}, {"bmm", "gemm"}, {"addmm", "gemm"}, {"baddbmm", "gemm"}, {"matmul", "gemm"},
      {"linear", "gemm"}, {"dense", "gemm"}, {"dot_general", "gemm"}, {"einsum", "gemm"},
      {"mv", "gemv"}, {"addmv", "gemv"}, {"conv", "conv"}, {"convolution", "conv"},
      {"sdpa", "attention"}, {"mha", "attention"}, {"embedding", "embedding"},
  }};
  for (const auto& [n, f] : exact)
    if (s == n) return std::string(f);
  if (contains(s, "gemv")) return "gemv";
  if (contains(s, "gemm") || contains(s, "matmul")) return "gemm";
  if (contains(s, "conv")) return "conv";
  if (contains(s, "attention") || contains(s, "attn")) return "attention";
  if (contains(s, "softmax")) return "softmax";
  if (contains(s, "layer_norm") || contains(s, "layernorm")) return "layer_norm";
  if (contains(s, "batch_norm") || contains(s, "batchnorm")) return "batch_norm";
  if (contains(s, "group_norm") || contains(s, "groupnorm")) return "group_norm";
  if (contains(s, "rms_norm") || contains(s, "rmsnorm")) return "rms_norm";
  if (s == "sum" || s == "mean" || s == "norm" || s == "linalg_vector_norm" || s == "var" || s == "std" ||
      s == "var_mean" || s == "logsumexp" || s == "prod")
    return "reduction";
  if (ends_with(s, "_loss") || s == "cross_entropy" || s == "nll_loss2d" || s == "binary_cross_entropy_with_logits")
    return "loss";
  return s;
}

OpContext infer_op_context(const OpCall& call, int64_t signature_k) {
  OpContext ctx = infer(call);
  if (ctx.reduction_length < 0) ctx.reduction_length = 0;
  const bool needs_k =
      ctx.kind == PEAT_OP_KIND_GEMM || ctx.kind == PEAT_OP_KIND_CONV || ctx.kind == PEAT_OP_KIND_REDUCTION;
  if (needs_k && ctx.reduction_length == 0 && signature_k <= 0) ctx.kind = PEAT_OP_KIND_UNKNOWN;
  return ctx;
}

}  // namespace peat::impl::detector
