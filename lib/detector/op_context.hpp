// What the Detector knows of an op call besides its signature -- the op's
// kind and reduction length K -- inferred from the recorded op name, input
// shapes and attributes. One home for the rule: the C API
// (peat_detect_context_infer, peat_op_family), the CLI, Python and
// peat.torch all go through it. The rules are listed in
// docs/error-models.md ("Op contexts").
#pragma once

#include <peat/detector.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace peat::impl::detector {

// Lower case; namespace prefixes ("aten::", "torch.", "nn.functional.", ...),
// overload or version suffixes (".default", ".out", "_v2", ...) and vendor
// library prefixes (cublas, hipblas, rocblas, cudnn, miopen, onednn, mkl,
// ...) removed: the op as any stack names it ("cublasSgemm_v2" -> "sgemm").
std::string normalise_op_name(std::string_view name);

// The family of an op name: "gemm", "gemv", "conv", "attention", "softmax",
// "layer_norm", "batch_norm", "group_norm", "rms_norm", "reduction", "loss",
// "embedding", or the normalised name itself when no rule matches.
std::string op_family(std::string_view name);

// One recorded call, as far as the context needs it.
struct OpCall {
  std::string_view op;                           // recorded name ("fc/aten::addmm")
  std::vector<std::span<const int64_t>> inputs;  // input shapes, in recorded order
  std::span<const peat_attr_t> attrs;            // recorded attributes
  uint64_t output = 0;                           // which output is judged
};

struct OpContext {
  peat_op_kind_t kind = PEAT_OP_KIND_UNKNOWN;
  int64_t reduction_length = 0;  // K; 0 = unknown
};

// The op kind and K of output `call.output`. A kind that needs K (GEMM, CONV,
// REDUCTION) comes with K > 0, or falls back to UNKNOWN unless
// `signature_k` (the signature's own reduction_length) is > 0.
OpContext infer_op_context(const OpCall& call, int64_t signature_k = 0);

}  // namespace peat::impl::detector
