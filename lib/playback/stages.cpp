// Playback's per-record stages: load a record's tensors (inputs in their
// recorded layout), execute the candidate on them (once, or twice with
// run_twice), analyze each output against the golden.
#include "lib/playback/work.hpp"

#include "lib/playback/isolate.hpp"
#include "lib/playback/record_context.hpp"
#include "lib/analyzer/analyze.hpp"
#include "lib/analyzer/defaults.hpp"
#include "lib/core/error.hpp"
#include "lib/core/strided_copy.hpp"
#include "lib/core/tensor_view.hpp"
#include "lib/trace/record.hpp"

#include <algorithm>
#include <cstring>

namespace peat::impl::playback {

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

}  // namespace peat::impl::playback
