// Reads what the report shows of a trace: run metadata, records per kind and
// op, sizes, steps, scalar series and checkpoints (no tensor payload is read).
#include "lib/report/report.hpp"

#include "lib/trace/reader.hpp"
#include "trace/trace_generated.h"

#include <algorithm>
#include <fmt/format.h>

namespace peat::impl::report {

namespace {
const char* str(const flatbuffers::String* s) { return s ? s->c_str() : ""; }

template <typename Vec>
void add_tensors(const Vec* tensors, TraceSummary& t, TraceSummary::OpStats* op) {
  if (tensors == nullptr) return;
  for (const auto* x : *tensors) {
    t.raw_bytes += x->raw_bytes();
    t.encoded_bytes += x->encoded_bytes();
    if (op) {
      ++op->tensors;
      op->raw_bytes += x->raw_bytes();
      op->encoded_bytes += x->encoded_bytes();
    }
  }
}
}  // namespace

TraceSummary read_trace_summary(const std::string& path) {
  peat_trace_reader_options_t options;
  peat_trace_reader_options_init(&options);
  // Recovery mode: a trace whose writer was killed is still worth a report.
  trace::Reader reader(path, options, true);
  TraceSummary t;
  t.path = path;
  const auto& info = reader.run_info();
  t.framework = str(info.framework());
  t.device = str(info.device());
  t.vendor = str(info.vendor());
  t.library_version = str(info.library_version());
  t.run_name = str(info.run_name());
  t.rank = info.rank();
  t.world_size = info.world_size();
  t.format_major = reader.format_major();
  t.format_minor = reader.format_minor();
  t.complete = reader.recovery().complete;
  t.stop_reason = reader.recovery().stop_reason;
  t.file_bytes = reader.recovery().file_bytes;
  bool any_step = false;
  for (uint64_t i = 0; i < reader.size(); ++i) {
    const auto& e = reader.entry(i);
    if (e.kind >= 1 && e.kind <= 4) ++t.records[e.kind];
    const int64_t step = reader.step_of(i);
    t.step_min = any_step ? std::min(t.step_min, step) : step;
    t.step_max = any_step ? std::max(t.step_max, step) : step;
    any_step = true;
    switch (e.kind) {
      case PEAT_TRACE_KIND_OP: {
        const auto* op = e.record->body_as_OpInvocation();
        auto& stats = t.ops[str(op->op())];
        ++stats.records;
        add_tensors(op->inputs(), t, &stats);
        add_tensors(op->outputs(), t, &stats);
        break;
      }
      case PEAT_TRACE_KIND_CHECKPOINT: {
        const auto* cp = e.record->body_as_Checkpoint();
        const uint64_t n = cp->tensors() ? cp->tensors()->size() : 0;
        t.checkpoints.push_back(fmt::format("{} @ step {} ({} tensors)", str(cp->name()), cp->step(), n));
        add_tensors(cp->tensors(), t, nullptr);
        break;
      }
      case PEAT_TRACE_KIND_SCALAR: {
        const auto* sc = e.record->body_as_Scalar();
        auto& s = t.scalars[str(sc->name())];
        s.label = str(sc->name());
        s.x.push_back(static_cast<double>(sc->step()));
        s.y.push_back(sc->value());
        break;
      }
      default:
        break;
    }
  }
  return t;
}

}  // namespace peat::impl::report
