// Profiler::Job: one record on its way from the record call to the file, and
// the constants the profiler's parts share (see profiler.hpp).
#pragma once

#include "lib/profiler/profiler.hpp"

#include "lib/core/error.hpp"

#include <atomic>
#include <memory>
#include <string>
#include <vector>

namespace peat::impl::profiler {

inline constexpr uint64_t kRecordOverhead = 256;  // queue-byte estimate of a record's metadata

struct Profiler::Job {
  // A tensor of the record taking part in content addressing.
  struct Content {
    enum Kind { kStored, kRefOther, kRefSelf };
    trace::ContentKey key;
    peat_trace_slot_t slot = PEAT_TRACE_SLOT_INPUT;
    uint32_t index = 0;
    Kind kind = kStored;
    TensorArg source;  // borrowed while the record call runs (a copy when a reference falls through)
    DeltaKey base_key;  // its position for XOR deltas (format 1.3)
    std::shared_ptr<const ByteBuffer> keep;  // set: a copy to become its position's base
  };
  uint64_t name_key = 0;  // record name part of DeltaKey: op id or checkpoint_key_name
  uint64_t seq = 0;
  std::vector<Content> contents;
  std::vector<uint64_t> ref_targets;  // numbers of the other records its references name
  trace::RecordData data;
  uint64_t bytes = kRecordOverhead;
  const peat_backend_api_t* api = nullptr;  // for staging tickets
  std::vector<void*> tickets;
  trace::EncodedRecord encoded;
  std::atomic<bool> claimed{false};  // a thread has started encoding it
  bool done = false;
  bool ok = true;
  std::string error;

  void wait_tickets() {
    std::string first_error;
    for (void* t : tickets) {
      if (api->stage_wait(t) != PEAT_STATUS_OK && first_error.empty()) {
        const char* m = api->last_error ? api->last_error() : nullptr;
        first_error = m ? m : "stage_wait failed";
      }
    }
    tickets.clear();
    if (!first_error.empty()) fail(PEAT_STATUS_IO_ERROR, "device-to-host staging failed: {}", first_error);
  }
  ~Job() {
    try {
      if (!tickets.empty()) wait_tickets();
    } catch (...) {
    }
  }
};

}  // namespace peat::impl::profiler
