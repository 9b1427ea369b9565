#include "trace/copy.hpp"

#include "core/error.hpp"
#include "trace/writer.hpp"

namespace peat::trace {

namespace {

// Checks every payload of record `i`; "" when all are intact.
std::string check_payloads(const Reader& r, uint64_t i) {
  const uint16_t kind = r.entry(i).kind;
  const int n_slots = kind == PEAT_TRACE_KIND_OP ? 2 : kind == PEAT_TRACE_KIND_CHECKPOINT ? 1 : 0;
  const peat_trace_slot_t slots[2] = {kind == PEAT_TRACE_KIND_CHECKPOINT ? PEAT_TRACE_SLOT_CHECKPOINT : PEAT_TRACE_SLOT_INPUT,
                                      PEAT_TRACE_SLOT_OUTPUT};
  try {
    for (int s = 0; s < n_slots; ++s)
      for (uint64_t t = 0; t < r.tensor_count(i, slots[s]); ++t) r.check_payload(i, slots[s], t);
  } catch (const Error& e) {
    if (e.status() != PEAT_STATUS_CORRUPT_DATA) throw;  // I/O errors stop the copy
    return e.what();
  }
  return {};
}

}  // namespace

CopyResult copy_intact(const Reader& reader, const std::string& out_path) {
  CopyResult result;
  Writer writer(out_path, reader.read_bytes(0, reader.header_bytes()));
  try {
    for (uint64_t i = 0; i < reader.size(); ++i) {
      const RecordEntry& e = reader.entry(i);
      const std::string why = check_payloads(reader, i);
      if (!why.empty()) {
        if (result.dropped++ == 0) result.first_drop = why;
        continue;
      }
      // Files before format 1.1 carry no sequence numbers: the index of the
      // copy numbers its records in order (which such readers ignore).
      writer.append_copy(e.bytes, e.kind, e.has_seq ? e.seq : i, [&](uint64_t at, std::byte* dst, std::size_t n) {
        reader.read_into(e.offset + at, dst, n);
      });
      ++result.written;
    }
    writer.close();
  } catch (...) {
    writer.abandon();
    throw;
  }
  return result;
}

}  // namespace peat::trace
