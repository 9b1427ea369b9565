// Playback FI (see playback.hpp and peat/playback.h).
#include "lib/playback/playback.hpp"
#include "lib/playback/isolate.hpp"
#include "lib/playback/record_context.hpp"

#include "lib/analyzer/analyze.hpp"
#include "lib/analyzer/defaults.hpp"
#include "lib/core/error.hpp"
#include "lib/core/strided_copy.hpp"
#include "lib/core/status.hpp"
#include "lib/core/tensor_view.hpp"
#include "lib/core/versioned_struct.hpp"
#include "lib/detector/detector.hpp"
#include "lib/injector/kernel_symbol.hpp"
#include "lib/trace/reader.hpp"
#include "lib/trace/record.hpp"
#include "trace/trace_generated.h"
#include "lib/trace/views.hpp"

#include <nlohmann/json.hpp>
#include <tbb/parallel_pipeline.h>
#include <tbb/task_arena.h>

#include <atomic>
#include <memory>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unordered_map>

namespace peat::impl::playback {

namespace {

// Under ThreadSanitizer, oneTBB's runtime (a Debian library, not instrumented)
// hides the hand-off of records between pipeline stages and threads, and every
// pipelined run reports false races. The TSan build runs the same stages in
// the serial loop: the results are identical (collection is in record order
// in both). A TSan run of the pipeline with a mutex held around each stage
// (making TBB's hand-offs visible) reported races only inside TBB's own filter
// start-up, none in playback's stages.
#if defined(__SANITIZE_THREAD__)
constexpr bool kSerialPipeline = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr bool kSerialPipeline = true;
#else
constexpr bool kSerialPipeline = false;
#endif
#else
constexpr bool kSerialPipeline = false;
#endif

const char* str(const flatbuffers::String* s) { return s ? s->c_str() : ""; }

std::string shape_text(int32_t ndim, const int64_t* shape) {
  std::string out = "[";
  for (int32_t d = 0; d < ndim; ++d) out += (d ? ", " : "") + std::to_string(shape ? shape[d] : -1);
  return out + "]";
}

struct Buffer {
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // empty: compact row-major
  DLDataType dtype{};
  std::size_t bytes = 0;         // of the compact payload
  std::size_t storage = 0;       // bytes of `data`: the span of the strided layout
  std::size_t first = 0;         // byte offset in `data` of the element at index 0
  std::unique_ptr<std::byte[]> data;

  void allocate() {  // zero-filled
    if (storage == 0) storage = bytes;
    data = std::make_unique<std::byte[]>(storage > 0 ? storage : 1);
  }
  DLTensor view() {
    DLTensor t{};
    t.data = data.get() + first;
    t.device = DLDevice{kDLCPU, 0};
    t.ndim = static_cast<int32_t>(shape.size());
    t.dtype = dtype;
    t.shape = shape.empty() ? nullptr : shape.data();
    t.strides = strides.empty() ? nullptr : strides.data();
    t.byte_offset = 0;
    return t;
  }
};

// A record-level failure: status + message; thrown inside a stage, caught by it.
struct RecordError {
  peat_status_t status;
  std::string message;
};

}  // namespace

struct Playback::Work {
  uint64_t record = 0;
  Result result;
  std::vector<peat_attr_t> attrs;
  std::vector<Buffer> inputs, golden, runs[2];
  std::vector<DLTensor> input_views;
  bool failed() const noexcept { return result.status != PEAT_STATUS_OK; }
  void fail_with(peat_status_t status, const std::string& what, const trace::Reader& reader) {
    result.status = status;
    result.message = fmt::format("{}: record {} (op '{}'): {}", reader.path(), record, result.op, what);
  }
};

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
  if (fn == nullptr) fail(PEAT_STATUS_INVALID_ARGUMENT, "the candidate function is NULL");
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

// ----------------------------------------------------------------- stages --

void Playback::load(Work& work) const {
  const trace::RecordEntry& entry = reader_.entry(work.record);
  const auto* op = entry.record->body_as_OpInvocation();
  Result& r = work.result;
  r.record = work.record;
  r.op = str(op->op());
  r.module_path = str(op->module_path());
  r.step = op->step();
  r.call_index = op->call_index();
  r.phase = op->phase();
  try {
    work.attrs = record_attrs(reader_, work.record);
    // The per-record memory cap (reader option max_record_bytes): inputs and
    // golden outputs, plus the outputs of each run, are held at once.
    reader_.check_record_bytes(work.record, options_.run_twice ? 3 : 2);
    const auto fill = [&](peat_trace_slot_t slot, std::vector<Buffer>& into, bool read) {
      const uint64_t n = reader_.tensor_count(work.record, slot);
      into.resize(n);
      for (uint64_t t = 0; t < n; ++t) {
        const auto& info = reader_.tensor(work.record, slot, t);
        Buffer& b = into[t];
        if (info.shape()) b.shape.assign(info.shape()->begin(), info.shape()->end());
        b.dtype = DLDataType{info.dtype_code(), info.dtype_bits(), info.dtype_lanes()};
        if (info.raw_bytes() > reader_.max_tensor_bytes())
          throw RecordError{PEAT_STATUS_OUT_OF_MEMORY,
                            fmt::format("{} {} needs {} bytes, above the reader's max_tensor_bytes ({})",
                                        slot == PEAT_TRACE_SLOT_INPUT ? "input" : "output", t, info.raw_bytes(),
                                        reader_.max_tensor_bytes())};
        b.bytes = static_cast<std::size_t>(info.raw_bytes());
        // Inputs get the layout they were recorded with (the golden kernel's
        // view of them); outputs are compact, as the candidate contract says.
        if (slot == PEAT_TRACE_SLOT_INPUT && info.strides() != nullptr && b.bytes > 0) {
          b.strides.assign(info.strides()->begin(), info.strides()->end());
          int64_t lo = 0, hi = 0;  // the span was checked at open
          strided_span(static_cast<int>(b.shape.size()), b.shape.data(), b.strides.data(), &lo, &hi);
          const std::size_t es = trace::element_size(b.dtype);
          const uint64_t span = static_cast<uint64_t>(hi - lo + 1) * es;
          if (span > reader_.max_tensor_bytes())
            throw RecordError{PEAT_STATUS_OUT_OF_MEMORY,
                              fmt::format("input {} spans {} bytes in its recorded layout, above the reader's "
                                          "max_tensor_bytes ({})",
                                          t, span, reader_.max_tensor_bytes())};
          b.storage = static_cast<std::size_t>(span);
          b.first = static_cast<std::size_t>(-lo) * es;
          b.allocate();
          std::vector<std::byte> compact(b.bytes);
          reader_.load(work.record, slot, t, compact.data(), compact.size());
          scatter_strided(compact.data(), static_cast<int>(b.shape.size()), b.shape.data(), b.strides.data(),
                          static_cast<int64_t>(b.bytes / es), es, b.data.get() + b.first);
          continue;
        }
        b.allocate();
        if (read) reader_.load(work.record, slot, t, b.data.get(), b.bytes);
      }
    };
    fill(PEAT_TRACE_SLOT_INPUT, work.inputs, true);
    fill(PEAT_TRACE_SLOT_OUTPUT, work.golden, true);
    r.n_outputs = work.golden.size();
    const int runs = options_.run_twice ? 2 : 1;
    for (int k = 0; k < runs; ++k) {
      work.runs[k].resize(work.golden.size());
      for (std::size_t i = 0; i < work.golden.size(); ++i) {
        Buffer& b = work.runs[k][i];
        b.shape = work.golden[i].shape;
        b.dtype = work.golden[i].dtype;
        b.bytes = work.golden[i].bytes;
        b.allocate();
      }
    }
    work.input_views.reserve(work.inputs.size());
    for (Buffer& b : work.inputs) work.input_views.push_back(b.view());
  } catch (const RecordError& e) {
    work.fail_with(e.status, e.message, reader_);
  } catch (const Error& e) {  // the reader's message names file, record and offset already
    work.result.status = e.status();
    work.result.message = fmt::format("{} (op '{}')", e.what(), r.op);
  } catch (const std::bad_alloc&) {
    work.fail_with(PEAT_STATUS_OUT_OF_MEMORY, "out of memory while loading the tensors", reader_);
  }
}

void Playback::execute(Work& work) const {
  if (work.failed()) return;
  const int runs = options_.run_twice ? 2 : 1;
  for (int k = 0; k < runs; ++k) {
    std::vector<Buffer>& outs = work.runs[k];
    std::vector<DLTensor> views;
    views.reserve(outs.size());
    for (Buffer& b : outs) views.push_back(b.view());
    peat_playback_attrs_t attrs{};
    attrs.struct_size = sizeof(attrs);
    attrs.attrs = work.attrs.empty() ? nullptr : work.attrs.data();
    attrs.n_attrs = work.attrs.size();
    attrs.op = work.result.op.c_str();
    attrs.module_path = work.result.module_path.c_str();
    attrs.step = work.result.step;
    attrs.call_index = work.result.call_index;
    attrs.phase = work.result.phase;
    attrs.run = k;
    const void* attrs_arg = options_.attrs_mode == PEAT_PLAYBACK_ATTRS_LIST ? &attrs : nullptr;
    if (options_.isolate) {
      // A forked worker with guard pages and a time limit (isolate.hpp): the
      // worker checks the views itself, so the checks below do not apply.
      std::vector<std::size_t> bytes;
      bytes.reserve(outs.size());
      for (const Buffer& b : outs) bytes.push_back(b.bytes);
      const IsolatedOutcome o = run_isolated(
          fn_, ctx_, work.input_views.empty() ? nullptr : work.input_views.data(),
          static_cast<int32_t>(work.input_views.size()), views.empty() ? nullptr : views.data(),
          bytes, static_cast<int32_t>(views.size()), attrs_arg, options_.timeout_ms, origin_);
      if (o.status != PEAT_STATUS_OK) {
        work.fail_with(o.status, fmt::format("{} (run {}, isolated)", o.message, k + 1), reader_);
        return;
      }
      continue;
    }
    int32_t rc = 0;
    try {
      rc = fn_(ctx_, work.input_views.empty() ? nullptr : work.input_views.data(),
               static_cast<int32_t>(work.input_views.size()), views.empty() ? nullptr : views.data(),
               static_cast<int32_t>(views.size()), attrs_arg);
    } catch (...) {
      work.fail_with(PEAT_STATUS_CALLBACK_FAILED, fmt::format("candidate {} threw an exception (run {})", origin_, k + 1),
                     reader_);
      return;
    }
    if (rc != 0) {
      work.fail_with(PEAT_STATUS_CALLBACK_FAILED, fmt::format("candidate {} returned {} (run {})", origin_, rc, k + 1),
                     reader_);
      return;
    }
    for (std::size_t i = 0; i < views.size(); ++i) {
      const DLTensor& v = views[i];
      const Buffer& b = outs[i];
      const int32_t ndim = static_cast<int32_t>(b.shape.size());
      bool same = v.ndim == ndim && v.data == b.data.get() && v.byte_offset == 0 && v.strides == nullptr &&
                  v.dtype.code == b.dtype.code && v.dtype.bits == b.dtype.bits && v.dtype.lanes == b.dtype.lanes &&
                  v.device.device_type == kDLCPU;
      if (same && ndim > 0) same = v.shape != nullptr && std::equal(b.shape.begin(), b.shape.end(), v.shape);
      if (!same) {
        const int32_t shown = v.ndim >= 0 && v.ndim <= kMaxDims && (v.shape != nullptr || v.ndim == 0) ? v.ndim : 0;
        work.fail_with(PEAT_STATUS_SHAPE_MISMATCH,
                       fmt::format("candidate {} left output {} as shape {} dtype {}:{}:{} (run {}); the recorded "
                                   "output is shape {} dtype {}:{}:{} in the buffer playback gave",
                                   origin_, i, shape_text(shown, v.shape), v.dtype.code, v.dtype.bits, v.dtype.lanes,
                                   k + 1, shape_text(ndim, b.shape.data()), b.dtype.code, b.dtype.bits,
                                   b.dtype.lanes),
                       reader_);
        return;
      }
    }
  }
}

void Playback::analyze(Work& work) const {
  if (work.failed()) return;
  Result& r = work.result;
  const std::size_t n = work.golden.size();
  r.signatures.assign(n, {analyzer::empty_signature(), analyzer::empty_signature(), analyzer::empty_signature()});
  std::size_t i = 0;
  try {
    for (; i < n; ++i) {
      DLTensor g = work.golden[i].view(), c1 = work.runs[0][i].view();
      const TensorView gv = make_view(&g, "golden"), c1v = make_view(&c1, "candidate");
      auto& sigs = r.signatures[i];
      analyzer::analyze(gv, c1v, config_, sigs[PEAT_PLAYBACK_FIRST_VS_GOLDEN], nullptr);
      r.elements += sigs[0].count;
      r.bitwise_mismatches += sigs[0].bitwise_mismatch_count;
      r.tolerance_failures += sigs[0].tolerance_fail_count;
      if (options_.run_twice) {
        DLTensor c2 = work.runs[1][i].view();
        const TensorView c2v = make_view(&c2, "second run");
        analyzer::analyze(gv, c2v, config_, sigs[PEAT_PLAYBACK_SECOND_VS_GOLDEN], nullptr);
        analyzer::analyze(c1v, c2v, config_, sigs[PEAT_PLAYBACK_SECOND_VS_FIRST], nullptr);
      }
    }
    if (options_.run_twice) {
      bool equal = true;
      for (std::size_t k = 0; k < n; ++k)
        if (std::memcmp(work.runs[0][k].data.get(), work.runs[1][k].data.get(), work.runs[0][k].bytes) != 0)
          equal = false;
      r.deterministic = equal ? 1 : 0;
    }
  } catch (const Error& e) {
    r.signatures.clear();
    r.elements = r.bitwise_mismatches = r.tolerance_failures = 0;
    work.fail_with(e.status(), fmt::format("output {}: analyzer: {}", i, e.what()), reader_);
    return;
  }
  judge_calls(work);
}

// The Detector on one call's output, with the record's own context (op kind
// and K from its op name, shapes and attributes) and, with run_twice, the
// second run as the rerun. Throws what peat_detect throws.
peat_detection_t Playback::detect_call(const Result& r, std::size_t output, const peat_spatial_map_t* map) const {
  if (output < r.detections.size() && r.detections[output] != nullptr && map == nullptr) return *r.detections[output];
  const auto& sigs = r.signatures[output];
  const peat_signature_t& sig = sigs[PEAT_PLAYBACK_FIRST_VS_GOLDEN];
  peat_detect_context_t ctx;
  peat_detect_context_init(&ctx);
  const auto oc = record_op_context(reader_, r.record, output, sig.reduction_length);
  ctx.op_kind = oc.kind;
  ctx.reduction_length = oc.reduction_length;
  ctx.map = map;
  if (options_.run_twice) {
    ctx.rerun = &sigs[PEAT_PLAYBACK_SECOND_VS_GOLDEN];
    ctx.rerun_diff = &sigs[PEAT_PLAYBACK_SECOND_VS_FIRST];  // the two runs compared elementwise
  }
  peat_detection_t out;
  peat_detection_init(&out);
  detector::detect(sig, ctx, out);
  return out;
}

// Per-call verdicts: each call judged alone, so that a fault that hits every
// call differently (one flipped bit per call, in another element each time)
// is named per call, where the merged signature of the calls would look like
// a stuck bit or many flips.
//
// A mismatching output is judged with a spatial map (REGION and lanes need
// one), built in a second pass over that output only: over the natural 2-D
// view (rows x last extent), counting the pairs that fail the tolerance, or
// every bitwise mismatch where the tolerance fails none (tiny values, such as
// gradients, that any atol swallows).
void Playback::judge_calls(Work& work) const {
  Result& r = work.result;
  r.verdicts.assign(r.signatures.size(), Result::CallVerdict{});
  r.detections.assign(r.signatures.size(), nullptr);
  for (std::size_t i = 0; i < r.signatures.size(); ++i) {
    const peat_signature_t& sig = r.signatures[i][PEAT_PLAYBACK_FIRST_VS_GOLDEN];
    if (sig.count == 0) continue;
    peat_spatial_map_t map;
    peat_spatial_map_init(&map);
    try {
      const peat_spatial_map_t* used = nullptr;
      if (sig.bitwise_mismatch_count > 0) {
        peat_signature_config_t cfg = config_;
        cfg.map_mismatch = sig.tolerance_fail_count > 0 ? PEAT_MISMATCH_TOLERANCE : PEAT_MISMATCH_BITWISE;
        DLTensor g = work.golden[i].view(), c1 = work.runs[0][i].view();
        peat_signature_t again;
        analyzer::analyze(make_view(&g, "golden"), make_view(&c1, "candidate"), cfg, again, &map);
        used = &map;
      }
      const peat_detection_t d = detect_call(r, i, used);
      if (d.verdict_count > 0) r.verdicts[i] = {d.verdicts[0].model, d.verdicts[0].bit};
      if (used != nullptr) r.detections[i] = std::make_shared<const peat_detection_t>(d);
    } catch (const Error&) {
      // not judged (counted in the tally's records only)
    }
    analyzer::release_map(map);
  }
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
    peat_aggregator_options_t o;
    peat_aggregator_options_init(&o);
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

bool Playback::collect(Work& work) {
  Result& r = work.result;
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
  results_.push_back(std::move(r));
  if (options_.progress != nullptr && options_.progress(options_.progress_user, s.done, s.selected) != 0) return false;
  return true;
}

// -------------------------------------------------------------------- run --

peat_status_t Playback::run() {
  if (fn_ == nullptr)
    fail(PEAT_STATUS_BAD_STATE, "no candidate is set (peat_playback_set_candidate or _set_candidate_symbol)");
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

// ---------------------------------------------------------------- results --

const Result& Playback::result(uint64_t index) const {
  if (index >= results_.size())
    fail(PEAT_STATUS_NOT_FOUND, "result {} does not exist (the last run has {})", index, results_.size());
  return results_[index];
}

namespace {
void check_which(peat_playback_compare_t which, bool run_twice) {
  if (which < PEAT_PLAYBACK_FIRST_VS_GOLDEN || which > PEAT_PLAYBACK_SECOND_VS_FIRST)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "which {} is not a peat_playback_compare_code value (0..2)", which);
  if (which != PEAT_PLAYBACK_FIRST_VS_GOLDEN && !run_twice)
    fail(PEAT_STATUS_NOT_FOUND, "comparison {} needs options.run_twice = 1", which);
}
void check_kind(peat_playback_group_kind_t kind) {
  if (kind != PEAT_PLAYBACK_BY_OP && kind != PEAT_PLAYBACK_BY_LAYER)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "kind {} is not a peat_playback_group_kind_code value (0..1)", kind);
}
}  // namespace

const peat_signature_t& Playback::result_signature(uint64_t index, uint64_t output,
                                                   peat_playback_compare_t which) const {
  check_which(which, run_twice());
  const Result& r = result(index);
  if (r.status != PEAT_STATUS_OK)
    fail(PEAT_STATUS_NOT_FOUND, "result {} (record {}) was not compared: {}", index, r.record, r.message);
  if (output >= r.signatures.size())
    fail(PEAT_STATUS_NOT_FOUND, "result {} has {} outputs; there is no output {}", index, r.signatures.size(), output);
  return r.signatures[output][which];
}

const Playback::Grouping& Playback::grouping(peat_playback_group_kind_t kind) const {
  check_kind(kind);
  return kind == PEAT_PLAYBACK_BY_OP ? by_op_ : by_layer_;
}

uint64_t Playback::group_count(peat_playback_group_kind_t kind) const { return grouping(kind).groups.size(); }

const Group& Playback::group(peat_playback_group_kind_t kind, uint64_t index) const {
  const Grouping& g = grouping(kind);
  if (index >= g.groups.size())
    fail(PEAT_STATUS_NOT_FOUND, "group {} does not exist (there are {})", index, g.groups.size());
  return g.groups[index];
}

peat_signature_t Playback::group_signature(peat_playback_group_kind_t kind, uint64_t index, uint64_t output,
                                           peat_playback_compare_t which) const {
  check_which(which, run_twice());
  const Group& g = group(kind, index);
  if (output >= g.n_outputs)
    fail(PEAT_STATUS_NOT_FOUND, "group '{}' has {} outputs; there is no output {}", g.name, g.n_outputs, output);
  return g.aggregators[output]->signature(static_cast<uint32_t>(which));
}

peat_playback_verdicts_t Playback::group_verdicts(peat_playback_group_kind_t kind, uint64_t index,
                                                 uint64_t output) const {
  const Group& g = group(kind, index);
  if (output >= g.n_outputs)
    fail(PEAT_STATUS_NOT_FOUND, "output {} of group '{}' does not exist (it has {})", output, g.name, g.n_outputs);
  peat_playback_verdicts_t out{};
  out.struct_size = sizeof out;
  out.top_model = -1;
  if (output >= g.tallies.size()) return out;
  const VerdictTally& t = g.tallies[output];
  out.records = t.records;
  out.bits = t.bits;
  uint64_t judged = 0;
  for (std::size_t m = 0; m < t.counts.size(); ++m) {
    out.counts[m] = t.counts[m];
    judged += t.counts[m];
  }
  out.judged = judged;
  // The anomaly leads: the most frequent model other than the floors (EXACT,
  // ROUNDING, REDUCED_PRECISION); the most frequent floor when there is none.
  const auto most = [&](bool floors) {
    int32_t best = -1;
    for (std::size_t m = 0; m < t.counts.size(); ++m) {
      const bool floor = m == PEAT_ERROR_MODEL_EXACT || m == PEAT_ERROR_MODEL_ROUNDING ||
                         m == PEAT_ERROR_MODEL_REDUCED_PRECISION;
      if (floor != floors || t.counts[m] == 0) continue;
      if (best < 0 || t.counts[m] > t.counts[static_cast<std::size_t>(best)]) best = static_cast<int32_t>(m);
    }
    return best;
  };
  out.top_model = most(false);
  if (out.top_model < 0) out.top_model = most(true);
  return out;
}

peat_detection_t Playback::result_detection(uint64_t index, uint64_t output) const {
  if (index >= results_.size())
    fail(PEAT_STATUS_NOT_FOUND, "result {} does not exist (the last run has {})", index, results_.size());
  const Result& r = results_[index];
  if (r.status != PEAT_STATUS_OK)
    fail(PEAT_STATUS_NOT_FOUND, "result {} (record {}) was not compared: {}", index, r.record, r.message);
  if (output >= r.signatures.size())
    fail(PEAT_STATUS_NOT_FOUND, "output {} of result {} does not exist (it has {})", output, index, r.signatures.size());
  return detect_call(r, output);
}

// The recorded name of output `i` of `record` ("grad_weight"; "" when none).
std::string Playback::output_name(uint64_t record, std::size_t i) const {
  if (i >= reader_.tensor_count(record, PEAT_TRACE_SLOT_OUTPUT)) return {};
  return str(reader_.tensor(record, PEAT_TRACE_SLOT_OUTPUT, i).name());
}

void Playback::write_jsonl(const std::string& path, bool append) const {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty() && !std::filesystem::is_directory(parent))
    fail(PEAT_STATUS_NOT_FOUND, "cannot write '{}': directory '{}' does not exist", path, parent.string());
  std::ofstream out(path, append ? std::ios::app : std::ios::trunc);
  if (!out) fail(PEAT_STATUS_IO_ERROR, "cannot open '{}' for writing: {}", path, std::strerror(errno));
  const auto figures = [&](const peat_signature_t& s, nlohmann::json& j) {
    j["elements"] = s.count;
    j["bitwise_mismatches"] = s.bitwise_mismatch_count;
    j["tolerance_failures"] = s.tolerance_fail_count;
    j["new_nonfinite"] = s.new_nonfinite_count;
    j["max_abs_error"] = s.max_abs_error;
    j["max_rel_error"] = s.max_rel_error;
  };
  for (const Result& r : results_) {
    nlohmann::json j;
    j["type"] = "record";
    j["record"] = r.record;
    j["op"] = r.op;
    j["layer"] = r.module_path;
    j["phase"] = r.phase;
    j["step"] = r.step;
    j["call"] = r.call_index;
    j["status"] = status_name(r.status);
    j["message"] = r.message;
    j["deterministic"] = r.deterministic;
    nlohmann::json outs = nlohmann::json::array();
    for (std::size_t i = 0; i < r.signatures.size(); ++i) {
      const auto& sigs = r.signatures[i];
      nlohmann::json o;
      o["name"] = output_name(r.record, i);
      figures(sigs[PEAT_PLAYBACK_FIRST_VS_GOLDEN], o);
      if (run_twice()) o["repeat_mismatches"] = sigs[PEAT_PLAYBACK_SECOND_VS_FIRST].bitwise_mismatch_count;
      outs.push_back(std::move(o));
    }
    j["outputs"] = std::move(outs);
    out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  }
  std::unordered_map<std::string, uint64_t> first_ok;  // op -> its first compared record: names the outputs
  for (const Result& r : results_)
    if (r.status == PEAT_STATUS_OK) first_ok.emplace(r.op, r.record);
  for (const auto kind : {PEAT_PLAYBACK_BY_OP, PEAT_PLAYBACK_BY_LAYER}) {
    const Grouping& grp = grouping(kind);
    for (const Group& g : grp.groups) {
      const auto named = kind == PEAT_PLAYBACK_BY_OP ? first_ok.find(g.name) : first_ok.end();
      nlohmann::json j;
      j["type"] = kind == PEAT_PLAYBACK_BY_OP ? "op" : "layer";
      j["name"] = g.name;
      j["records"] = g.records;
      j["ok"] = g.ok;
      j["failed"] = g.failed;
      j["exact"] = g.exact;
      j["nondeterministic"] = g.nondeterministic;
      nlohmann::json outs = nlohmann::json::array();
      for (uint64_t i = 0; i < g.n_outputs; ++i) {
        nlohmann::json o;
        o["name"] = named != first_ok.end() ? output_name(named->second, i) : std::string();
        figures(g.aggregators[i]->signature(PEAT_PLAYBACK_FIRST_VS_GOLDEN), o);
        if (run_twice())
          o["repeat_mismatches"] = g.aggregators[i]->signature(PEAT_PLAYBACK_SECOND_VS_FIRST).bitwise_mismatch_count;
        outs.push_back(std::move(o));
      }
      j["outputs"] = std::move(outs);
      out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    }
  }
  out.flush();
  if (!out) fail(PEAT_STATUS_IO_ERROR, "writing '{}' failed: {}", path, std::strerror(errno));
}

}  // namespace peat::impl::playback
