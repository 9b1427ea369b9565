// The defaults of the Detector's C structs (peat/detector.h) and the reading of
// peat_detect's inputs by the versioned rule: the C layer forwards here.
#pragma once

#include <peat/detector.h>

#include "lib/detector/op_context.hpp"

#include <cstddef>
#include <cstdint>

namespace peat::impl::detector {

peat_detect_context_t default_context() noexcept;
peat_detection_t empty_detection() noexcept;

// peat_detect: reads the signature and the context's signatures by the
// versioned rule (this library's size or the 0.1 size, whose new fields read as
// absent), checks `out` and the context's map, detects, and fills *out.
void detect_from_c(const peat_signature_t* signature, const peat_detect_context_t* context, peat_detection_t* out);

// Writes an inferred op context (kind and K) into the caller's versioned
// context, leaving its other fields as they are: peat_detect_context_infer and
// peat_playback_detect_context.
void write_op_context(peat_detect_context_t* context, const OpContext& inferred);

// peat_detect_context_infer's call, read from its C arrays (input i has
// input_ndims[i] dims at input_shapes[i]) and checked: NULL arrays with counts,
// negative ndims and NULL shapes are INVALID_ARGUMENT naming the input. The
// call views the caller's arrays; op must be non-NULL.
OpCall op_call_from_arrays(const char* op, uint64_t n_inputs, const int32_t* input_ndims,
                           const int64_t* const* input_shapes, const peat_attr_t* attrs, uint64_t n_attrs,
                           uint64_t output);

// Throws VERSION_MISMATCH unless `got` is this library's struct size `want`.
void require_exact_size(uint32_t got, std::size_t want, const char* name);

}  // namespace peat::impl::detector
