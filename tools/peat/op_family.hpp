// Op-name normalisation and clustering for `peat compare`: op names that
// denote the same operation on different stacks (aten::mm, mm,
// cublasSgemm_v2, hipblasSgemm, gemm, matmul, sgemm) map to one family
// ("gemm"). The rules are listed in docs/cli.md.
#pragma once

#include <peat/detector.h>

#include <string>
#include <string_view>

namespace peat_cli {

// Lower case; namespace prefixes ("aten::", "torch.", "torch.ops.aten.",
// "at::", "c10::", "nn.", "f.", "functional.") and overload or version
// suffixes (".default", ".out", ".tensor", "_v2", "_v3", "_out", "_ex" after a
// library name) removed; vendor library prefixes (cublas, cublaslt, hipblas,
// hipblaslt, rocblas, cudnn, miopen, onednn, dnnl, mkl, oneapi) removed.
std::string normalise_op_name(std::string_view name);

// The family of an op name: "gemm", "conv", "attention", "softmax",
// "layer_norm", "batch_norm", "embedding", "gemv", or the normalised name
// itself when no rule matches.
std::string op_family(std::string_view name);

// The detector's op kind of a family (gemm -> GEMM, conv -> CONV, softmax /
// norms -> REDUCTION, ...; UNKNOWN otherwise).
peat_op_kind_t op_kind_of_family(const std::string& family);

// Layer path as compared across stacks: lower case, a leading "model." or
// "module." (wrappers such as DataParallel add one) removed.
std::string normalise_layer(std::string_view layer);

}  // namespace peat_cli
