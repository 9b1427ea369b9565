#include "op_family.hpp"

#include <algorithm>
#include <array>
#include <cctype>

namespace peat_cli {

namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) { return s.size() >= p.size() && s.substr(s.size() - p.size()) == p; }

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

bool contains(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

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
  return s;
}

peat_op_kind_t op_kind_of_family(const std::string& family) {
  if (family == "gemm" || family == "gemv" || family == "attention") return PEAT_OP_KIND_GEMM;
  if (family == "conv") return PEAT_OP_KIND_CONV;
  if (family == "softmax" || family == "layer_norm" || family == "batch_norm") return PEAT_OP_KIND_REDUCTION;
  if (family == "relu" || family == "gelu" || family == "add" || family == "mul" || family == "sigmoid" || family == "tanh")
    return PEAT_OP_KIND_ELEMENTWISE;
  return PEAT_OP_KIND_UNKNOWN;
}

std::string normalise_layer(std::string_view layer) {
  std::string s(layer);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (std::string_view p : {"model.", "module."})
    if (starts_with(s, p)) {
      s.erase(0, p.size());
      break;
    }
  return s;
}

}  // namespace peat_cli
