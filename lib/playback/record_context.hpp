// A recorded op call as the Detector's context sees it: the record's op
// name, input shapes and attributes through the one rule of
// detector/op_context. Playback, the C API (peat_playback_detect_context),
// the CLI and Python all take an op record's context from here.
#pragma once

#include <peat/trace.h>

#include "lib/detector/op_context.hpp"
#include "lib/trace/reader.hpp"

#include <cstdint>
#include <vector>

namespace peat::impl::playback {

// The attributes of op record `record` as peat_attr_t (pointing into the
// reader's buffers, valid while it is open). Throws INVALID_ARGUMENT when the
// record is not an op record, NOT_FOUND for a bad index.
std::vector<peat_attr_t> record_attrs(const trace::Reader& reader, uint64_t record);

// The context of output `output` of op record `record` (see
// detector::infer_op_context; signature_k as there).
detector::OpContext record_op_context(const trace::Reader& reader, uint64_t record, uint64_t output,
                                      int64_t signature_k);

}  // namespace peat::impl::playback
