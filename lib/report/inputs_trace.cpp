// Reads what the report shows of a trace: run metadata, records per kind and
// op, sizes, steps, scalar series and checkpoints (no tensor payload is read).
// The header, record and tensor fields come from the trace reader's views
// (lib/trace/views.cpp), the one place that decodes them for the C API too.
#include "lib/report/report.hpp"

#include "lib/trace/reader.hpp"
#include "lib/trace/views.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace peat::impl::report {

namespace {
// Adds the raw and encoded bytes of the tensors of `slot` of record `index`.
void add_tensors(const trace::Reader& reader, uint64_t index, peat_trace_slot_t slot, TraceSummary& t,
                 TraceSummary::OpStats* op) {
  const uint64_t n = reader.tensor_count(index, slot);
  for (uint64_t k = 0; k < n; ++k) {
    const peat_trace_tensor_info_t x = trace::tensor_info_view(reader, index, slot, k);
    t.raw_bytes += x.raw_bytes;
    t.encoded_bytes += x.encoded_bytes;
    if (op) {
      ++op->tensors;
      op->raw_bytes += x.raw_bytes;
      op->encoded_bytes += x.encoded_bytes;
    }
  }
}
}  // namespace

TraceSummary read_trace_summary(const std::string& path) {
  // Recovery mode: a trace whose writer was killed is still worth a report.
  trace::Reader reader(path, trace::default_reader_options(), true);
  TraceSummary t;
  t.path = path;
  const peat_trace_run_info_t info = trace::run_info_view(reader);
  t.framework = info.framework;
  t.device = info.device;
  t.vendor = info.vendor;
  t.library_version = info.library_version;
  t.run_name = info.run_name;
  t.rank = info.rank;
  t.world_size = info.world_size;
  t.format_major = info.format_major;
  t.format_minor = info.format_minor;
  t.complete = reader.recovery().complete;
  t.stop_reason = reader.recovery().stop_reason;
  t.file_bytes = reader.recovery().file_bytes;
  bool any_step = false;
  for (uint64_t i = 0; i < reader.size(); ++i) {
    const peat_trace_record_info_t r = trace::record_info_view(reader, i);
    if (r.kind >= 1 && r.kind <= 4) ++t.records[r.kind];
    t.step_min = any_step ? std::min(t.step_min, r.step) : r.step;
    t.step_max = any_step ? std::max(t.step_max, r.step) : r.step;
    any_step = true;
    switch (r.kind) {
      case PEAT_TRACE_KIND_OP: {
        auto& stats = t.ops[r.name];
        ++stats.records;
        add_tensors(reader, i, PEAT_TRACE_SLOT_INPUT, t, &stats);
        add_tensors(reader, i, PEAT_TRACE_SLOT_OUTPUT, t, &stats);
        break;
      }
      case PEAT_TRACE_KIND_CHECKPOINT:
        t.checkpoints.push_back(fmt::format("{} @ step {} ({} tensors)", r.name, r.step, r.n_tensors));
        add_tensors(reader, i, PEAT_TRACE_SLOT_CHECKPOINT, t, nullptr);
        break;
      case PEAT_TRACE_KIND_SCALAR: {
        auto& s = t.scalars[r.name];
        s.label = r.name;
        s.x.push_back(static_cast<double>(r.step));
        s.y.push_back(r.value);
        break;
      }
      default:
        break;
    }
  }
  return t;
}

}  // namespace peat::impl::report
