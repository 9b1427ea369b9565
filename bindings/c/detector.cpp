// C entry points of peat/detector.h: check, convert, forward.
#include <peat/detector.h>

#include "bindings/c/barrier.hpp"
#include "lib/analyzer/analyze.hpp"
#include "lib/detector/detector.hpp"
#include "lib/detector/op_context.hpp"

#include <algorithm>
#include <cstring>
#include <span>
#include <string>

namespace {

void check_size(uint32_t got, size_t want, const char* name) {
  if (got != want)
    peat::impl::fail(PEAT_STATUS_VERSION_MISMATCH, "{}: struct_size {} is not {} (call its init function)", name, got, want);
}

// A signature by the versioned rule (core/versioned_struct.hpp: this
// library's size or the 0.1 size, before the top-bit histograms): an older
// one is read into a full struct whose new fields are zero, which the
// Detector reads as "absent".
const peat_signature_t* full_signature(const peat_signature_t* sig, peat_signature_t& buffer, const char* name) {
  if (sig == nullptr) return nullptr;
  buffer = peat::impl::read_versioned(sig, peat::impl::analyzer::empty_signature(), name);
  return &buffer;
}

}  // namespace

extern "C" {

PEAT_API void peat_detect_context_init(peat_detect_context_t* context) {
  if (context == nullptr) return;
  std::memset(context, 0, sizeof *context);
  context->struct_size = sizeof(peat_detect_context_t);
  context->op_kind = PEAT_OP_KIND_UNKNOWN;
  context->rounding_slack = 4.0;
}

PEAT_API void peat_detection_init(peat_detection_t* detection) {
  if (detection == nullptr) return;
  std::memset(detection, 0, sizeof *detection);
  detection->struct_size = sizeof(peat_detection_t);
}

PEAT_API peat_status_t peat_detect(const peat_signature_t* signature, const peat_detect_context_t* context,
                                   peat_detection_t* out) {
  return peat::impl::c_call("peat_detect", [&] {
    peat::impl::require_arg(signature, "signature");
    peat::impl::require_arg(out, "out");
    check_size(out->struct_size, sizeof(peat_detection_t), "out");
    out->verdict_count = 0;
    peat_signature_t sig_buf, rerun_buf, ref_buf;
    const peat_signature_t* sig = full_signature(signature, sig_buf, "signature");
    peat_detect_context_t ctx = peat::impl::read_options(context, "context", peat_detect_context_init);
    if (ctx.map != nullptr) check_size(ctx.map->struct_size, sizeof(peat_spatial_map_t), "context.map");
    ctx.rerun = full_signature(ctx.rerun, rerun_buf, "context.rerun");
    ctx.reference = full_signature(ctx.reference, ref_buf, "context.reference");
    peat_signature_t diff_buf;
    ctx.rerun_diff = full_signature(ctx.rerun_diff, diff_buf, "context.rerun_diff");
    peat_detection_t result;
    peat_detection_init(&result);
    peat::impl::detector::detect(*sig, ctx, result);
    std::memcpy(out, &result, sizeof result);
  });
}

PEAT_API peat_status_t peat_detection_render(const peat_detection_t* detection, peat_render_format_t format,
                                             char* buffer, size_t capacity, size_t* out_length) {
  return peat::impl::c_call("peat_detection_render", [&] {
    peat::impl::require_arg(detection, "detection");
    check_size(detection->struct_size, sizeof(peat_detection_t), "detection");
    const std::string text = peat::impl::detector::render(*detection, format);
    if (out_length != nullptr) *out_length = text.size();
    if (capacity < text.size() + 1)
      peat::impl::fail(PEAT_STATUS_BUFFER_TOO_SMALL, "capacity {} is smaller than the {} bytes needed", capacity,
                 text.size() + 1);
    peat::impl::require_arg(buffer, "buffer");
    std::memcpy(buffer, text.c_str(), text.size() + 1);
  });
}

PEAT_API size_t peat_op_family(const char* op, char* out, size_t capacity) {
  if (op == nullptr) {
    if (out != nullptr && capacity > 0) out[0] = '\0';
    return 0;
  }
  const std::string family = peat::impl::detector::op_family(op);
  if (out != nullptr && capacity > 0) {
    const std::size_t n = std::min(family.size(), capacity - 1);
    std::memcpy(out, family.data(), n);
    out[n] = '\0';
  }
  return family.size();
}

PEAT_API peat_status_t peat_detect_context_infer(peat_detect_context_t* context, const char* op, uint64_t n_inputs,
                                                 const int32_t* input_ndims, const int64_t* const* input_shapes,
                                                 const peat_attr_t* attrs, uint64_t n_attrs, uint64_t output,
                                                 int64_t signature_k) {
  return peat::impl::c_call(__func__, [&] {
    peat::impl::require_struct(context, "context");
    peat::impl::require_arg(op, "op");
    if (n_inputs > 0 && (input_ndims == nullptr || input_shapes == nullptr))
      peat::impl::fail(PEAT_STATUS_INVALID_ARGUMENT, "n_inputs is {} but input_ndims or input_shapes is NULL", n_inputs);
    if (n_attrs > 0 && attrs == nullptr) peat::impl::fail(PEAT_STATUS_INVALID_ARGUMENT, "n_attrs is {} but attrs is NULL", n_attrs);
    peat::impl::detector::OpCall call;
    call.op = op;
    call.output = output;
    for (uint64_t i = 0; i < n_inputs; ++i) {
      if (input_ndims[i] < 0 || (input_ndims[i] > 0 && input_shapes[i] == nullptr))
        peat::impl::fail(PEAT_STATUS_INVALID_ARGUMENT, "input {}: ndim {} with shape {}", i, input_ndims[i],
                   input_shapes[i] ? "set" : "NULL");
      call.inputs.emplace_back(input_shapes[i], static_cast<std::size_t>(input_ndims[i]));
    }
    call.attrs = std::span<const peat_attr_t>(attrs, n_attrs);
    const auto ctx = peat::impl::detector::infer_op_context(call, signature_k);
    peat::impl::update_versioned(context, peat::impl::zeroed_struct<peat_detect_context_t>(), "context", [&](auto& c) {
      c.op_kind = ctx.kind;
      c.reduction_length = ctx.reduction_length;
    });
  });
}

PEAT_API const char* peat_op_kind_name(peat_op_kind_t kind) { return peat::impl::detector::op_kind_name(kind); }

PEAT_API const char* peat_float_format_name(peat_float_format_t format) {
  return peat::impl::detector::format_name(format);
}

}  // extern "C"
