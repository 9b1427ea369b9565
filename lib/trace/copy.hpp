// Copying the intact records of a trace into a new, complete trace
// (peat_trace_copy_intact, `peat verify --recover`).
#pragma once

#include "lib/trace/reader.hpp"

#include <cstdint>
#include <string>

namespace peat::impl::trace {

struct CopyResult {
  uint64_t written = 0;
  uint64_t dropped = 0;     // records left out for a damaged payload
  std::string first_drop;   // why the first one was left out ("" when none)
};

// Writes `out_path`: the header and every record of `reader` whose payloads
// decode to their checksums, byte for byte (every field and its sequence
// number kept), then a footer. Payloads are checked in bounded memory.
CopyResult copy_intact(const Reader& reader, const std::string& out_path);

}  // namespace peat::impl::trace
