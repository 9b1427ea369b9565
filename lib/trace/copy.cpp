#include "lib/trace/copy.hpp"

#include "lib/core/error.hpp"
#include "lib/trace/writer.hpp"

#include <algorithm>
#include <vector>

namespace peat::impl::trace {

namespace {

// Checks every payload of record `i`; "" when all are intact. A reference
// (format 1.2) or a delta's base (1.3) must lie in a record already copied (`copied`: their sequence
// numbers, increasing): one left out would leave it dangling in the copy.
std::string check_payloads(const Reader& r, uint64_t i, const std::vector<uint64_t>& copied) {
  const uint16_t kind = r.entry(i).kind;
  const int n_slots = kind == PEAT_TRACE_KIND_OP ? 2 : kind == PEAT_TRACE_KIND_CHECKPOINT ? 1 : 0;
  const peat_trace_slot_t slots[2] = {kind == PEAT_TRACE_KIND_CHECKPOINT ? PEAT_TRACE_SLOT_CHECKPOINT : PEAT_TRACE_SLOT_INPUT,
                                      PEAT_TRACE_SLOT_OUTPUT};
  try {
    for (int s = 0; s < n_slots; ++s)
      for (uint64_t t = 0; t < r.tensor_count(i, slots[s]); ++t) {
        r.check_payload(i, slots[s], t);
        // The records its bytes come from: a reference's target, and (format
        // 1.3) the base of the delta it is or refers to.
        const TensorLoc loc = r.resolve(i, slots[s], t);
        const std::optional<TensorLoc> base = r.base(loc.index, loc.slot, loc.t);
        for (const uint64_t from : {loc.index, base ? base->index : i}) {
          if (from == i) continue;
          const uint64_t seq = r.entry(from).seq;
          if (!std::binary_search(copied.begin(), copied.end(), seq))
            return fmt::format("{}: record {} at byte {}: {}[{}] refers to the record numbered {}, which is left out "
                               "of the copy", r.path(), i, r.entry(i).offset, slot_name(slots[s]), t, seq);
        }
      }
  } catch (const Error& e) {
    if (e.status() != PEAT_STATUS_CORRUPT_DATA) throw;  // I/O errors stop the copy
    return e.what();
  }
  return {};
}

}  // namespace

CopyResult copy_intact(const Reader& reader, const std::string& out_path) {
  CopyResult result;
  std::vector<uint64_t> copied;  // sequence numbers of the records copied so far
  Writer writer(out_path, reader.read_bytes(0, reader.header_bytes()));
  try {
    for (uint64_t i = 0; i < reader.size(); ++i) {
      const RecordEntry& e = reader.entry(i);
      const std::string why = check_payloads(reader, i, copied);
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
      if (e.has_seq) copied.push_back(e.seq);
    }
    writer.close();
  } catch (...) {
    writer.abandon();
    throw;
  }
  return result;
}

}  // namespace peat::impl::trace
