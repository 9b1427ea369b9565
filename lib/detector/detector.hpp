// The Detector: sufficient conditions on an error signature -> ranked verdicts
// (see include/peat/detector.h and docs/error-models.md for every rule).
#pragma once
#include <peat/detector.h>

#include <string>

namespace peat::impl::detector {

// Checks the inputs (throws peat::impl::Error with the field at fault) and fills
// *out. `context` has already been read into a full-size struct.
void detect(const peat_signature_t& signature, const peat_detect_context_t& context, peat_detection_t& out);

// Checks that a signature's counts are consistent; `name` names it in errors.
void validate_signature(const peat_signature_t& signature, const char* name);

// Renders a detection (TEXT, JSON, CSV). Throws INVALID_ARGUMENT on an unknown
// format or a verdict_count out of range.
std::string render(const peat_detection_t& detection, peat_render_format_t format);

const char* op_kind_name(peat_op_kind_t kind) noexcept;
const char* format_name(peat_float_format_t format) noexcept;

}  // namespace peat::impl::detector
