// The Detector's rules. Each rule is a sufficient condition on the signature
// (and the spatial map when given); docs/error-models.md lists them with the
// source of every threshold. Rules run from the most specific model to the
// least, and the first primary model that holds is ranked first; secondary
// models that also hold (NONFINITE produced by a flip, the rounding noise a
// flip sits on) follow it.
//
// This file holds the entry point: detect() checks its inputs
// (validate_signature, validate_inputs) and runs the Rules (lib/detector/rules.hpp,
// one member function per rule, defined in rules*.cpp by the groups of the
// table); and the names of op kinds and formats.
#include "lib/detector/detector.hpp"

#include "lib/core/dtype.hpp"
#include "lib/core/error.hpp"
#include "lib/detector/rules.hpp"

#include <cmath>
#include <cstdint>
#include <utility>

namespace peat::impl::detector {

void validate_signature(const peat_signature_t& s, const char* name) {
  if (s.count == 0) fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: count is 0 (an empty signature names no error)", name);
  auto more = [&](uint64_t v, uint64_t limit, const char* field, const char* than) {
    if (v > limit)
      fail(PEAT_STATUS_INVALID_ARGUMENT, "{}.{} = {} is larger than {} = {} (inconsistent counts)", name, field, v,
           than, limit);
  };
  more(s.bitwise_mismatch_count, s.count, "bitwise_mismatch_count", "count");
  more(s.value_mismatch_count, s.bitwise_mismatch_count, "value_mismatch_count", "bitwise_mismatch_count");
  more(s.finite_count, s.count, "finite_count", "count");
  more(s.new_nonfinite_count, s.value_mismatch_count, "new_nonfinite_count", "value_mismatch_count");
  more(s.dropped_count, s.value_mismatch_count, "dropped_count", "value_mismatch_count");
  more(s.spurious_count, s.value_mismatch_count, "spurious_count", "value_mismatch_count");
  more(s.sign_flip_count, s.value_mismatch_count, "sign_flip_count", "value_mismatch_count");
  more(s.ratio_count, s.finite_count, "ratio_count", "finite_count");
  more(s.tolerance_fail_count, s.count, "tolerance_fail_count", "count");
  uint64_t ulp = 0, rel = 0, pop = 0;
  for (uint64_t v : s.ulp_hist) ulp += v;
  for (uint64_t v : s.rel_hist) rel += v;
  for (uint64_t v : s.xor_popcount_hist) pop += v;
  if (ulp != s.count) fail(PEAT_STATUS_INVALID_ARGUMENT, "{}.ulp_hist adds up to {}, not count = {}", name, ulp, s.count);
  if (rel != s.count) fail(PEAT_STATUS_INVALID_ARGUMENT, "{}.rel_hist adds up to {}, not count = {}", name, rel, s.count);
  if (pop != s.count)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "{}.xor_popcount_hist adds up to {}, not count = {}", name, pop, s.count);
  if (s.count - s.xor_popcount_hist[0] != s.bitwise_mismatch_count)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "{}.xor_popcount_hist[0] = {} does not match count - bitwise_mismatch_count = {}",
         name, s.xor_popcount_hist[0], s.count - s.bitwise_mismatch_count);
  for (int b = 0; b < PEAT_SIGNATURE_XOR_BITS; ++b) {
    more(s.xor_bit_hist[b], s.bitwise_mismatch_count, "xor_bit_hist[b]", "bitwise_mismatch_count");
    more(s.xor_top_bit_set_hist[b], s.xor_top_bit_hist[b], "xor_top_bit_set_hist[b]", "xor_top_bit_hist[b]");
  }
  // The top-bit histograms are absent (all zero: a 0.1 signature) or count every bitwise mismatch once.
  uint64_t top = 0;
  for (uint64_t v : s.xor_top_bit_hist) top += v;
  if (top != 0 && top != s.bitwise_mismatch_count)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "{}.xor_top_bit_hist adds up to {}, not bitwise_mismatch_count = {}", name, top,
         s.bitwise_mismatch_count);
}
namespace {

// Checks the context and the signatures it refers to (throws naming the field).
void validate_inputs(const peat_signature_t& s, const peat_detect_context_t& ctx) {
  if (ctx.op_kind < PEAT_OP_KIND_UNKNOWN || ctx.op_kind > PEAT_OP_KIND_ELEMENTWISE)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "context.op_kind = {} is not a peat_op_kind_code value (0..4)", ctx.op_kind);
  if (ctx.reduction_length < 0)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "context.reduction_length = {} must be >= 0", ctx.reduction_length);
  if (!(ctx.unit_roundoff >= 0) || !std::isfinite(ctx.unit_roundoff) || ctx.unit_roundoff >= 1)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "context.unit_roundoff = {} must be in [0, 1)", ctx.unit_roundoff);
  if (!(ctx.rounding_slack > 0) || !std::isfinite(ctx.rounding_slack))
    fail(PEAT_STATUS_INVALID_ARGUMENT, "context.rounding_slack = {} must be finite and > 0", ctx.rounding_slack);
  validate_signature(s, "signature");
  const bool needs_k = ctx.op_kind == PEAT_OP_KIND_GEMM || ctx.op_kind == PEAT_OP_KIND_CONV ||
                       ctx.op_kind == PEAT_OP_KIND_REDUCTION;
  if (needs_k && ctx.reduction_length == 0 && s.reduction_length == 0)
    fail(PEAT_STATUS_INVALID_ARGUMENT,
         "context.reduction_length: op kind {} needs K >= 1 (neither the context nor the signature gives it)",
         op_kind_name(ctx.op_kind));
  if (ctx.golden_dtype.bits != 0 && !(ctx.golden_dtype == s.golden_dtype))
    fail(PEAT_STATUS_INVALID_ARGUMENT, "context.golden_dtype {} differs from the signature's {}",
         dtype_name(ctx.golden_dtype), dtype_name(s.golden_dtype));
  require_float(s.golden_dtype, "signature.golden_dtype");
  if (ctx.map != nullptr && ctx.map->mismatch_count > s.count)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "context.map.mismatch_count = {} is larger than signature.count = {}",
         ctx.map->mismatch_count, s.count);
  for (const auto& [other, name] : {std::pair{ctx.rerun, "context.rerun"}, std::pair{ctx.reference, "context.reference"},
                                    std::pair{ctx.rerun_diff, "context.rerun_diff"}}) {
    if (other == nullptr) continue;
    validate_signature(*other, name);
    if (!(other->golden_dtype == s.golden_dtype) && other == ctx.rerun)
      fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: golden dtype {} differs from the signature's {}", name,
           dtype_name(other->golden_dtype), dtype_name(s.golden_dtype));
    if (other->count != s.count)
      fail(PEAT_STATUS_INVALID_ARGUMENT, "{}.count = {} differs from signature.count = {}", name, other->count, s.count);
  }
}

}  // namespace

void detect(const peat_signature_t& s, const peat_detect_context_t& ctx, peat_detection_t& out) {
  out.verdict_count = 0;
  validate_inputs(s, ctx);
  out.elements = s.count;
  out.mismatches = s.value_mismatch_count;
  rules::Rules(s, ctx, out).run();
}

const char* op_kind_name(peat_op_kind_t kind) noexcept {
  switch (kind) {
    case PEAT_OP_KIND_UNKNOWN: return "unknown";
    case PEAT_OP_KIND_GEMM: return "gemm";
    case PEAT_OP_KIND_CONV: return "conv";
    case PEAT_OP_KIND_REDUCTION: return "reduction";
    case PEAT_OP_KIND_ELEMENTWISE: return "elementwise";
    default: return "unknown";
  }
}

const char* format_name(peat_float_format_t format) noexcept {
  switch (format) {
    case -1: return "none";
    case PEAT_FORMAT_BF16: return "bf16";
    case PEAT_FORMAT_FP16: return "fp16";
    case PEAT_FORMAT_TF32: return "tf32";
    case PEAT_FORMAT_FP8_E4M3: return "fp8_e4m3";
    case PEAT_FORMAT_FP8_E5M2: return "fp8_e5m2";
    default: return "unknown";
  }
}

}  // namespace peat::impl::detector
