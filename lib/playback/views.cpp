// See views.hpp.
#include "lib/playback/views.hpp"

#include "lib/core/versioned_struct.hpp"

namespace peat::impl::playback {

peat_playback_options_t default_options() noexcept {
  auto o = zeroed_struct<peat_playback_options_t>();
  o.attrs_mode = PEAT_PLAYBACK_ATTRS_NULL;
  o.max_in_flight = 4;
  o.timeout_ms = 10000;
  o.partition_rank = 0;
  o.partition_world = 1;
  return o;
}

peat_playback_summary_t summary_view(const Summary& s) {
  auto out = zeroed_struct<peat_playback_summary_t>();
  out.cancelled = s.cancelled ? 1 : 0;
  out.selected = s.selected;
  out.done = s.done;
  out.ok = s.ok;
  out.failed = s.failed;
  out.exact = s.exact;
  out.mismatched = s.mismatched;
  out.nondeterministic = s.nondeterministic;
  return out;
}

peat_playback_result_t result_view(const Result& r) {
  auto out = zeroed_struct<peat_playback_result_t>();
  out.status = r.status;
  out.record = r.record;
  out.op = r.op.c_str();
  out.module_path = r.module_path.c_str();
  out.step = r.step;
  out.call_index = r.call_index;
  out.phase = r.phase;
  out.deterministic = r.deterministic;
  out.n_outputs = r.n_outputs;
  out.elements = r.elements;
  out.bitwise_mismatches = r.bitwise_mismatches;
  out.tolerance_failures = r.tolerance_failures;
  out.message = r.message.c_str();
  return out;
}

peat_playback_group_t group_view(const Group& g, peat_playback_group_kind_t kind) {
  auto out = zeroed_struct<peat_playback_group_t>();
  out.kind = kind;
  out.name = g.name.c_str();
  out.records = g.records;
  out.ok = g.ok;
  out.failed = g.failed;
  out.exact = g.exact;
  out.nondeterministic = g.nondeterministic;
  out.n_outputs = g.n_outputs;
  return out;
}

}  // namespace peat::impl::playback
