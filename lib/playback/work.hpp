// What one record carries through playback's stages (load, execute, analyze,
// collect): its tensors as buffers, its attributes and its result. Internal to
// lib/playback/ (playback.cpp runs the stages, stages.cpp holds them).
#pragma once

#include "lib/playback/playback.hpp"

#include "lib/core/status.hpp"
#include "lib/trace/reader.hpp"
#include "trace/trace_generated.h"

#include <fmt/format.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace peat::impl::playback {

// A FlatBuffers string as C text ("" when absent).
inline const char* str(const flatbuffers::String* s) { return s ? s->c_str() : ""; }

// "[2, 3]": a shape in messages.
inline std::string shape_text(int32_t ndim, const int64_t* shape) {
  std::string out = "[";
  for (int32_t d = 0; d < ndim; ++d) out += (d ? ", " : "") + std::to_string(shape ? shape[d] : -1);
  return out + "]";
}

struct Buffer {
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // empty: compact row-major
  DLDataType dtype{};
  std::size_t bytes = 0;         // of the compact payload
  std::size_t storage = 0;       // bytes of `data`: the span of the strided layout
  std::size_t first = 0;         // byte offset in `data` of the element at index 0
  std::unique_ptr<std::byte[]> data;

  void allocate() {  // zero-filled
    if (storage == 0) storage = bytes;
    data = std::make_unique<std::byte[]>(storage > 0 ? storage : 1);
  }
  DLTensor view() {
    DLTensor t{};
    t.data = data.get() + first;
    t.device = DLDevice{kDLCPU, 0};
    t.ndim = static_cast<int32_t>(shape.size());
    t.dtype = dtype;
    t.shape = shape.empty() ? nullptr : shape.data();
    t.strides = strides.empty() ? nullptr : strides.data();
    t.byte_offset = 0;
    return t;
  }
};

// A record-level failure: status + message; thrown inside a stage, caught by it.
struct RecordError {
  peat_status_t status;
  std::string message;
};


struct Playback::Work {
  uint64_t record = 0;
  Result result;
  std::vector<peat_attr_t> attrs;
  std::vector<Buffer> inputs, golden, runs[2];
  std::vector<DLTensor> input_views;
  bool failed() const noexcept { return result.status != PEAT_STATUS_OK; }
  void fail_with(peat_status_t status, const std::string& what, const trace::Reader& reader) {
    result.status = status;
    result.message = fmt::format("{}: record {} (op '{}'): {}", reader.path(), record, result.op, what);
  }
};

}  // namespace peat::impl::playback
