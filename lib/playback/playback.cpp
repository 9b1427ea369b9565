// Playback FI (see playback.hpp and peat/playback.h): options, the candidate,
// and the run, which drives each selected record through the stages
// (stages.cpp) serially or in a oneTBB pipeline and collects the results in
// record order.
#include "lib/playback/work.hpp"

#include "lib/analyzer/analyze.hpp"
#include "lib/analyzer/defaults.hpp"
#include "lib/core/error.hpp"
#include "lib/core/sanitizers.hpp"
#include "lib/core/tensor_view.hpp"
#include "lib/core/versioned_struct.hpp"
#include "lib/injector/kernel_symbol.hpp"
#include "lib/trace/views.hpp"

#include <tbb/parallel_pipeline.h>
#include <tbb/task_arena.h>

#include <atomic>
#include <memory>

namespace peat::impl::playback {

namespace {

// Under ThreadSanitizer (lib/core/sanitizers.hpp) the same stages run in the
// serial loop: the results are identical (collection is in record order in
// both). A TSan run of the pipeline with a mutex held around each stage
// (making TBB's hand-offs visible) reported races only inside TBB's own filter
// start-up, none in playback's stages.
constexpr bool kSerialPipeline = kThreadSanitizer;
}  // namespace

Playback::Playback(const trace::Reader& reader, const peat_playback_options_t& options)
    : reader_(reader), options_(options) {
  if (options_.attrs_mode != PEAT_PLAYBACK_ATTRS_LIST && options_.attrs_mode != PEAT_PLAYBACK_ATTRS_NULL)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "options.attrs_mode {} is not a peat_playback_attrs_mode_code value (0..1)",
         options_.attrs_mode);
  if (options_.thread_safe != 0 && options_.thread_safe != 1)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "options.thread_safe is {}; it must be 0 or 1", options_.thread_safe);
  if (options_.run_twice != 0 && options_.run_twice != 1)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "options.run_twice is {}; it must be 0 or 1", options_.run_twice);
  if (options_.max_in_flight < 1 || options_.max_in_flight > 1024)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "options.max_in_flight {} is outside [1, 1024]", options_.max_in_flight);
  if (options_.num_threads < 0)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "options.num_threads {} is negative", options_.num_threads);
  if (options_.isolate != 0 && options_.isolate != 1)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "options.isolate is {}; it must be 0 or 1", options_.isolate);
  if (options_.partition_world < 1 || options_.partition_world > 65536)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "options.partition_world {} is outside [1, 65536]", options_.partition_world);
  if (options_.partition_rank >= options_.partition_world)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "options.partition_rank {} is not below partition_world {}",
         options_.partition_rank, options_.partition_world);

  filter_ = read_options(options_.filter, "options.filter", [](peat_trace_filter_t* f) { *f = trace::default_filter(); });
  constexpr uint32_t kOp = 1u << PEAT_TRACE_KIND_OP;
  constexpr uint32_t kKnown = kOp | (1u << PEAT_TRACE_KIND_CHECKPOINT) | (1u << PEAT_TRACE_KIND_SCALAR) |
                              (1u << PEAT_TRACE_KIND_STEP);
  if ((filter_.kinds & ~kKnown) != 0)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "options.filter->kinds 0x{:x} has bits that name no record kind", filter_.kinds);
  if (filter_.kinds != 0 && (filter_.kinds & kOp) == 0)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "options.filter->kinds 0x{:x} excludes op records, the only ones replayed",
         filter_.kinds);
  filter_.kinds = kOp;
  if (filter_.phase < -1 || filter_.phase > PEAT_PHASE_OTHER)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "options.filter->phase {} is not -1 or a peat_phase_code value (0..3)",
         filter_.phase);
  if (filter_.step_min > filter_.step_max)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "options.filter: step_min {} is above step_max {}", filter_.step_min,
         filter_.step_max);
  if (filter_.op_glob != nullptr) {
    glob_ = filter_.op_glob;
    filter_.op_glob = glob_.c_str();
  }
  options_.filter = nullptr;

  config_ = analyzer::read_config(options_.config, "options.config");
  options_.config = nullptr;
  {  // check the config's fields now (resolved against a one-element f32 tensor)
    float one = 1.0f;
    int64_t shape = 1;
    DLTensor probe{};
    probe.data = &one;
    probe.device = DLDevice{kDLCPU, 0};
    probe.ndim = 1;
    probe.dtype = DLDataType{kDLFloat, 32, 1};
    probe.shape = &shape;
    peat_signature_config_t check = config_;
    check.spatial_rows = check.spatial_cols = 0;
    check.index_base = 0;
    try {
      (void)analyzer::resolve_config(make_view(&probe, "probe"), check);
    } catch (const Error& e) {
      fail(e.status(), "options.config: {}", e.what());
    }
  }
}

Playback::~Playback() { release_library(); }

void Playback::release_library() noexcept {
  injector::close_kernel_library(library_);
  library_ = nullptr;
}

void Playback::set_candidate(peat_kernel_fn fn, void* ctx, std::string origin) {
  if (fn == nullptr) fail(PEAT_STATUS_INVALID_ARGUMENT, "argument 'fn' is NULL");
  release_library();
  fn_ = fn;
  ctx_ = ctx;
  origin_ = std::move(origin);
}

void Playback::set_candidate_symbol(std::string_view spec, void* ctx) {
  const injector::KernelSymbol loaded = injector::load_kernel_symbol(spec);  // throws: old candidate stays
  release_library();
  fn_ = loaded.fn;
  ctx_ = ctx;
  origin_ = std::string(spec);
  library_ = loaded.library;
}

void Playback::add_to(Grouping& grouping, const std::string& name, const Result& result) {
  auto [it, inserted] = grouping.ids.try_emplace(name, static_cast<uint32_t>(grouping.groups.size()));
  if (inserted) {
    grouping.groups.push_back(Group{});
    grouping.groups.back().name = name;
  }
  const uint32_t id = it->second;
  Group& g = grouping.groups[id];
  ++g.records;
  if (result.status != PEAT_STATUS_OK) {
    ++g.failed;
    return;
  }
  ++g.ok;
  if (result.bitwise_mismatches == 0) ++g.exact;
  if (result.deterministic == 0) ++g.nondeterministic;
  g.n_outputs = std::max<uint64_t>(g.n_outputs, result.n_outputs);
  while (g.aggregators.size() < result.n_outputs) {
    peat_aggregator_options_t o = analyzer::default_aggregator_options();
    o.max_ops = kCompares;
    o.series_capacity = 2;
    g.aggregators.push_back(std::make_unique<analyzer::Aggregator>(o));
  }
  if (g.tallies.size() < result.n_outputs) g.tallies.resize(result.n_outputs);
  for (std::size_t i = 0; i < result.verdicts.size(); ++i) {
    VerdictTally& t = g.tallies[i];
    ++t.records;
    const Result::CallVerdict& v = result.verdicts[i];
    if (v.model >= 0 && v.model < static_cast<int32_t>(t.counts.size())) ++t.counts[static_cast<std::size_t>(v.model)];
    if (v.bit >= 0 && v.bit < 64) t.bits |= uint64_t{1} << v.bit;
  }
  const int compares = options_.run_twice ? kCompares : 1;
  for (std::size_t i = 0; i < result.n_outputs; ++i)
    for (int w = 0; w < compares; ++w)
      try {
        g.aggregators[i]->add(static_cast<uint32_t>(w), result.step, result.call_index, result.signatures[i][w]);
      } catch (const Error&) {
        // Not mergeable with the group's earlier records (another golden dtype or
        // tolerance for this output): the record stays in the counts, not in the merge.
      }
}

void Playback::count(const Result& r) {
  Summary& s = summary_;
  ++s.done;
  if (r.status == PEAT_STATUS_OK) {
    ++s.ok;
    if (r.bitwise_mismatches == 0) ++s.exact; else ++s.mismatched;
    if (r.deterministic == 0) ++s.nondeterministic;
  } else {
    ++s.failed;
  }
  add_to(by_op_, r.op, r);
  add_to(by_layer_, r.module_path, r);
}

bool Playback::collect(Work& work) {
  count(work.result);
  results_.push_back(std::move(work.result));
  const Summary& s = summary_;
  if (options_.progress != nullptr && options_.progress(options_.progress_user, s.done, s.selected) != 0) return false;
  return true;
}

// -------------------------------------------------------------------- run --

peat_kernel_fn Playback::candidate() const {
  if (fn_ == nullptr)
    fail(PEAT_STATUS_BAD_STATE, "no candidate is set (peat_playback_set_candidate or _set_candidate_symbol)");
  return fn_;
}

peat_status_t Playback::run() {
  (void)candidate();  // BAD_STATE without one
  results_.clear();
  summary_ = Summary{};
  by_op_ = Grouping{};
  by_layer_ = Grouping{};

  merged_shares_.assign(options_.partition_world, false);
  merged_shares_[options_.partition_rank] = true;
  ran_ = true;
  const std::vector<uint64_t> selected = selected_records();
  summary_.selected = selected.size();
  results_.reserve(selected.size());

  bool cancelled = false;
  if (!options_.thread_safe || kSerialPipeline) {
    for (const uint64_t index : selected) {
      Work work;
      work.record = index;
      load(work);
      execute(work);
      analyze(work);
      if (!collect(work)) {
        cancelled = true;
        break;
      }
    }
  } else {
    std::size_t next = 0;
    std::atomic<bool> stop{false};
    using WorkPtr = std::shared_ptr<Work>;
    const auto stage = [](void (Playback::*step)(Work&) const, const Playback* self) {
      return [step, self](WorkPtr w) {
        (self->*step)(*w);
        return w;
      };
    };
    const auto body = [&] {
      tbb::parallel_pipeline(
          options_.max_in_flight,
          tbb::make_filter<void, WorkPtr>(tbb::filter_mode::serial_in_order,
                                          [&](tbb::flow_control& fc) -> WorkPtr {
                                            if (next >= selected.size() || stop.load(std::memory_order_relaxed)) {
                                              fc.stop();
                                              return nullptr;
                                            }
                                            auto work = std::make_shared<Work>();
                                            work->record = selected[next++];
                                            return work;
                                          }) &
              tbb::make_filter<WorkPtr, WorkPtr>(tbb::filter_mode::parallel, stage(&Playback::load, this)) &
              tbb::make_filter<WorkPtr, WorkPtr>(tbb::filter_mode::parallel, stage(&Playback::execute, this)) &
              tbb::make_filter<WorkPtr, WorkPtr>(tbb::filter_mode::parallel, stage(&Playback::analyze, this)) &
              tbb::make_filter<WorkPtr, void>(tbb::filter_mode::serial_in_order, [&](WorkPtr w) {
                if (stop.load(std::memory_order_relaxed)) return;  // in flight when cancelled: dropped
                if (!collect(*w)) stop.store(true, std::memory_order_relaxed);
              }));
    };
    if (options_.num_threads > 0) {
      tbb::task_arena arena(options_.num_threads);
      arena.execute(body);
    } else {
      body();
    }
    cancelled = stop.load();
  }
  summary_.cancelled = cancelled;
  if (cancelled)
    fail(PEAT_STATUS_CANCELLED, "{}: playback cancelled by the progress callback after {} of {} records",
         reader_.path(), summary_.done, summary_.selected);
  return PEAT_STATUS_OK;
}

}  // namespace peat::impl::playback
