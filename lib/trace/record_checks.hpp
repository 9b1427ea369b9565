// Checks of one record's FlatBuffer metadata against its frame: what the
// reader requires of a record before it lists it (docs/trace-format.md).
#pragma once

#include <cstdint>
#include <string>

namespace flatbuffers {
class String;
}
namespace peat::fb {
struct Record;
}

namespace peat::impl::trace {

// "" when the string is absent or valid UTF-8 (the writer writes nothing else);
// otherwise what is wrong, prefixed by `what`.
std::string check_str(const flatbuffers::String* s, const std::string& what);

// Checks a verified record's body against its frame kind and payload length
// (`minor`: the file's format minor, which decides whether tensor references
// (1.2) and XOR-delta tensors (1.3) are legal); "" when sound.
std::string check_body(const fb::Record* rec, uint16_t kind, uint64_t payload_len, uint16_t minor);

// Decoded bytes of all tensors of a checked record (sizes checked, no overflow
// past INT64_MAX each; the sum saturates).
uint64_t raw_total_of(const fb::Record* rec, uint16_t kind);

}  // namespace peat::impl::trace
