#include "lib/detector/defaults.hpp"

#include "lib/analyzer/analyze.hpp"
#include "lib/core/error.hpp"
#include "lib/core/versioned_struct.hpp"
#include "lib/detector/detector.hpp"

#include <cstring>

namespace peat::impl::detector {

peat_detect_context_t default_context() noexcept {
  peat_detect_context_t context;
  std::memset(&context, 0, sizeof context);
  context.struct_size = sizeof(peat_detect_context_t);
  context.op_kind = PEAT_OP_KIND_UNKNOWN;
  context.rounding_slack = 4.0;
  return context;
}

peat_detection_t empty_detection() noexcept {
  peat_detection_t detection;
  std::memset(&detection, 0, sizeof detection);
  detection.struct_size = sizeof(peat_detection_t);
  return detection;
}

void write_op_context(peat_detect_context_t* context, const OpContext& inferred) {
  update_versioned(context, zeroed_struct<peat_detect_context_t>(), "context", [&](peat_detect_context_t& c) {
    c.op_kind = inferred.kind;
    c.reduction_length = inferred.reduction_length;
  });
}

OpCall op_call_from_arrays(const char* op, uint64_t n_inputs, const int32_t* input_ndims,
                           const int64_t* const* input_shapes, const peat_attr_t* attrs, uint64_t n_attrs,
                           uint64_t output) {
  if (n_inputs > 0 && (input_ndims == nullptr || input_shapes == nullptr))
    fail(PEAT_STATUS_INVALID_ARGUMENT, "n_inputs is {} but input_ndims or input_shapes is NULL", n_inputs);
  if (n_attrs > 0 && attrs == nullptr) fail(PEAT_STATUS_INVALID_ARGUMENT, "n_attrs is {} but attrs is NULL", n_attrs);
  OpCall call;
  call.op = op;
  call.output = output;
  for (uint64_t i = 0; i < n_inputs; ++i) {
    if (input_ndims[i] < 0 || (input_ndims[i] > 0 && input_shapes[i] == nullptr))
      fail(PEAT_STATUS_INVALID_ARGUMENT, "input {}: ndim {} with shape {}", i, input_ndims[i],
           input_shapes[i] ? "set" : "NULL");
    call.inputs.emplace_back(input_shapes[i], static_cast<std::size_t>(input_ndims[i]));
  }
  call.attrs = std::span<const peat_attr_t>(attrs, n_attrs);
  return call;
}

void require_exact_size(uint32_t got, std::size_t want, const char* name) {
  if (got != want)
    fail(PEAT_STATUS_VERSION_MISMATCH, "{}: struct_size {} is not {} (call its init function)", name, got, want);
}

namespace {

// An older signature is read into a full struct whose new fields are zero.
const peat_signature_t* full_signature(const peat_signature_t* sig, peat_signature_t& buffer, const char* name) {
  if (sig == nullptr) return nullptr;
  buffer = read_versioned(sig, analyzer::empty_signature(), name);
  return &buffer;
}

}  // namespace

void detect_from_c(const peat_signature_t* signature, const peat_detect_context_t* context, peat_detection_t* out) {
  require_arg(signature, "signature");
  require_arg(out, "out");
  require_exact_size(out->struct_size, sizeof(peat_detection_t), "out");
  out->verdict_count = 0;
  peat_signature_t sig_buf, rerun_buf, ref_buf, diff_buf;
  const peat_signature_t* sig = full_signature(signature, sig_buf, "signature");
  peat_detect_context_t ctx =
      read_options(context, "context", [](peat_detect_context_t* c) { *c = default_context(); });
  if (ctx.map != nullptr) require_exact_size(ctx.map->struct_size, sizeof(peat_spatial_map_t), "context.map");
  ctx.rerun = full_signature(ctx.rerun, rerun_buf, "context.rerun");
  ctx.reference = full_signature(ctx.reference, ref_buf, "context.reference");
  ctx.rerun_diff = full_signature(ctx.rerun_diff, diff_buf, "context.rerun_diff");
  peat_detection_t result = empty_detection();
  detect(*sig, ctx, result);
  std::memcpy(out, &result, sizeof result);
}

}  // namespace peat::impl::detector
