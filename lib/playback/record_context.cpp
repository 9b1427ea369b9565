#include "lib/playback/record_context.hpp"

#include "lib/core/error.hpp"
#include "trace/trace_generated.h"

#include <span>

namespace peat::impl::playback {

namespace {

const char* str(const flatbuffers::String* s) { return s ? s->c_str() : ""; }

const fb::OpInvocation& op_of(const trace::Reader& reader, uint64_t record) {
  const auto* op = reader.entry(record).record->body_as_OpInvocation();
  if (op == nullptr) fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: record {} is not an op record", reader.path(), record);
  return *op;
}

}  // namespace

std::vector<peat_attr_t> record_attrs(const trace::Reader& reader, uint64_t record) {
  std::vector<peat_attr_t> out;
  if (const auto* attrs = op_of(reader, record).attrs()) {
    out.reserve(attrs->size());
    for (const auto* a : *attrs) out.push_back(trace::attr_view(*a));
  }
  return out;
}

detector::OpContext record_op_context(const trace::Reader& reader, uint64_t record, uint64_t output,
                                      int64_t signature_k) {
  const fb::OpInvocation& op = op_of(reader, record);
  const std::vector<peat_attr_t> attrs = record_attrs(reader, record);
  detector::OpCall call;
  call.op = str(op.op());
  call.output = output;
  call.attrs = attrs;
  const uint64_t n = reader.tensor_count(record, PEAT_TRACE_SLOT_INPUT);
  for (uint64_t i = 0; i < n; ++i) {
    const auto* shape = reader.tensor(record, PEAT_TRACE_SLOT_INPUT, i).shape();
    call.inputs.push_back(shape ? std::span<const int64_t>(shape->data(), shape->size()) : std::span<const int64_t>());
  }
  return detector::infer_op_context(call, signature_k);
}

}  // namespace peat::impl::playback
