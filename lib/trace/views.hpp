// The trace reader as the C API shows it (peat/trace.h): the defaults of its
// structs, the C structs filled from a record's FlatBuffer, the filter walk,
// the owned-tensor load and the whole-file verify. The C layer only checks
// its arguments and forwards here.
#pragma once

#include <peat/trace.h>

#include "lib/trace/reader.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace peat::impl::trace {

peat_trace_reader_options_t default_reader_options() noexcept;
peat_trace_filter_t default_filter() noexcept;

// Throws INVALID_ARGUMENT for a slot that is no peat_trace_slot_code value.
void check_slot(peat_trace_slot_t slot);

// peat_trace_open: a reader of `path` with the caller's options (NULL: the
// defaults).
std::unique_ptr<peat_trace_reader> open_reader(const std::string& path, const peat_trace_reader_options_t* options);
// peat_trace_recover: the same in recovery mode; `recovery`, when not NULL,
// has its struct_size checked before the file is opened and then receives
// recovery_view.
std::unique_ptr<peat_trace_reader> recover_reader(const std::string& path, const peat_trace_reader_options_t* options,
                                                  peat_trace_recovery_t* recovery);

peat_trace_recovery_t recovery_view(const Reader& reader);
peat_trace_run_info_t run_info_view(const Reader& reader);
// Tag `index` of the header; throws NOT_FOUND past the last one.
void tag_view(const Reader& reader, uint64_t index, const char** key, const char** value);
peat_trace_record_info_t record_info_view(const Reader& reader, uint64_t index);
// Attribute `attr` of op record `index`; INVALID_ARGUMENT for another kind, NOT_FOUND past the last.
peat_attr_t attr_of(const Reader& reader, uint64_t index, uint64_t attr);
peat_trace_tensor_info_t tensor_info_view(const Reader& reader, uint64_t index, peat_trace_slot_t slot, uint64_t t);

// The first record at or after `start` that `filter` (a full-size struct)
// selects; checks the filter's kinds and phase first (INVALID_ARGUMENT).
std::optional<uint64_t> next_match(const Reader& reader, const peat_trace_filter_t& filter, uint64_t start);

// Decodes a tensor into memory the returned tensor owns (its deleter frees
// it); bounded by the reader's max_tensor_bytes and max_record_bytes.
DLManagedTensor* load_owned(const Reader& reader, uint64_t index, peat_trace_slot_t slot, uint64_t t);

// Checks every tensor payload of the file (bounded memory); returns how many.
uint64_t verify_payloads(const Reader& reader);

}  // namespace peat::impl::trace
