// C entry points of peat/detector.h: check, convert, forward.
#include <peat/detector.h>

#include "bindings/c/barrier.hpp"
#include "lib/detector/defaults.hpp"
#include "lib/detector/detector.hpp"
#include "lib/detector/op_context.hpp"

#include <string>

using namespace peat::impl;  // the C layer forwards to the core (lib/)

extern "C" {

PEAT_API void peat_detect_context_init(peat_detect_context_t* p) { if (p) *p = detector::default_context(); }
PEAT_API void peat_detection_init(peat_detection_t* p) { if (p) *p = detector::empty_detection(); }

PEAT_API peat_status_t peat_detect(const peat_signature_t* signature, const peat_detect_context_t* context,
                                   peat_detection_t* out) {
  return c_call(__func__, [&] { detector::detect_from_c(signature, context, out); });
}

PEAT_API peat_status_t peat_detection_render(const peat_detection_t* detection, peat_render_format_t format,
                                             char* buffer, size_t capacity, size_t* out_length) {
  return c_call(__func__, [&] {
    require_arg(detection, "detection");
    detector::require_exact_size(detection->struct_size, sizeof(peat_detection_t), "detection");
    copy_text_out(detector::render(*detection, format), buffer, capacity, out_length, "the rendering");
  });
}

PEAT_API size_t peat_op_family(const char* op, char* out, size_t capacity) {
  const std::string family = op ? detector::op_family(op) : std::string();
  copy_c_string(family, out, capacity);
  return family.size();
}

PEAT_API peat_status_t peat_detect_context_infer(peat_detect_context_t* context, const char* op, uint64_t n_inputs,
                                                 const int32_t* input_ndims, const int64_t* const* input_shapes,
                                                 const peat_attr_t* attrs, uint64_t n_attrs, uint64_t output,
                                                 int64_t signature_k) {
  return c_call(__func__, [&] {
    require_struct(context, "context");
    require_arg(op, "op");
    const detector::OpCall call =
        detector::op_call_from_arrays(op, n_inputs, input_ndims, input_shapes, attrs, n_attrs, output);
    detector::write_op_context(context, detector::infer_op_context(call, signature_k));
  });
}

PEAT_API const char* peat_op_kind_name(peat_op_kind_t kind) { return detector::op_kind_name(kind); }
PEAT_API const char* peat_float_format_name(peat_float_format_t format) { return detector::format_name(format); }

}  // extern "C"
