// Candidate dispatch: runs what the schedule decides for one op call, keeps the
// golden result when the candidate fails, compares golden with candidate (or
// with the injected output) through the analyzer, and logs the firing.
#include "lib/injector/injector.hpp"

#include "lib/analyzer/analyze.hpp"
#include "lib/analyzer/defaults.hpp"
#include "lib/analyzer/sums.hpp"
#include "lib/backend/backend.hpp"
#include "lib/core/dtype.hpp"
#include "lib/core/error.hpp"
#include "lib/injector/inject.hpp"
#include "lib/session/session.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <vector>

namespace peat::impl::injector {

namespace {

// A compact tensor with the shape and dtype of `like`, allocated by the
// backend serving like's device, freed on destruction.
class Scratch {
 public:
  explicit Scratch(const DLTensor& like) {
    const TensorView view = make_view(&like, "output");
    backend_ = &backend::Registry::instance().for_device(like.device.device_type);
    shape_.assign(like.shape, like.shape + like.ndim);
    tensor_ = DLTensor{};
    tensor_.device = like.device;
    tensor_.ndim = like.ndim;
    tensor_.dtype = like.dtype;
    tensor_.shape = shape_.empty() ? nullptr : shape_.data();
    const std::size_t bytes = static_cast<std::size_t>(view.numel) * dtype_size(like.dtype);
    void* data = nullptr;
    backend_->check(backend_->api().alloc(like.device.device_id, bytes, &data), "alloc");
    tensor_.data = data;
  }
  ~Scratch() {
    if (tensor_.data != nullptr) backend_->api().free(tensor_.device.device_id, tensor_.data);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  DLTensor& tensor() noexcept { return tensor_; }

 private:
  backend::Backend* backend_ = nullptr;
  std::vector<int64_t> shape_;
  DLTensor tensor_{};
};

// Element-wise copy of host tensors of the same shape and dtype.
void copy_into(const DLTensor& dst, const DLTensor& src) {
  const TensorView d = make_view(&dst, "destination"), s = make_view(&src, "source");
  const std::size_t size = dtype_size(d.dtype);
  if (is_host(d.device) && is_host(s.device)) {
    for (int64_t k = 0; k < d.numel; ++k)
      std::memcpy(d.base + d.offset_of(k) * static_cast<int64_t>(size), s.base + s.offset_of(k) * static_cast<int64_t>(size),
                  size);
    return;
  }
  if (!d.contiguous || !s.contiguous) fail(PEAT_STATUS_UNSUPPORTED, "copying strided device tensors is not supported");
  backend::Backend& backend = backend::Registry::instance().for_device(d.device.device_type);
  backend.check(backend.api().copy(d.base, d.device, s.base, s.device, static_cast<std::size_t>(d.numel) * size, nullptr),
                "copy");
}

// True when a host output holds NaN in every element (and has at least one).
bool all_nan(const DLTensor& t) {
  const TensorView v = make_view(&t, "output");
  if (!is_host(v.device) || v.numel == 0) return false;
  const auto kind = float_kind(v.dtype);
  if (!kind) return false;
  const std::size_t size = float_size(*kind);
  for (int64_t k = 0; k < v.numel; ++k) {
    const std::byte* p = v.base + v.offset_of(k) * static_cast<int64_t>(size);
    double x = 0;
    switch (*kind) {
      case Float::F64: std::memcpy(&x, p, 8); break;
      case Float::F32: { float f; std::memcpy(&f, p, 4); x = f; break; }
      case Float::F16: case Float::BF16: {
        uint16_t h;
        std::memcpy(&h, p, 2);
        const bool nan = *kind == Float::F16 ? ((h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0)
                                             : ((h & 0x7F80u) == 0x7F80u && (h & 0x7Fu) != 0);
        if (!nan) return false;
        continue;
      }
    }
    if (!std::isnan(x)) return false;
  }
  return true;
}

// Merges `sig` into `merged` (the first one is copied; pairs the analyzer will
// not merge, e.g. of another dtype, are left out).
void merge_into(peat_signature_t& merged, bool& have_signature, const peat_signature_t& sig) {
  if (!have_signature) {
    merged = sig;
    have_signature = true;
    return;
  }
  try {
    analyzer::merge(merged, sig);
  } catch (const Error&) {
    // another dtype or tolerance: kept in the summary fields only
  }
}

// The signature of one output pair; false when the analyzer cannot compare
// it here (device memory, integer outputs).
bool analyze_pair(const DLTensor& first, const DLTensor& second, peat_signature_t& sig) {
  const TensorView g = make_view(&first, "golden output"), c = make_view(&second, "candidate output");
  if (!is_host(g.device) || !is_host(c.device) || !float_kind(g.dtype) || !float_kind(c.dtype)) return false;
  analyzer::analyze(g, c, analyzer::default_config(), sig, nullptr);
  return true;
}

// Adds the comparison of one (golden, other) output pair to the firing
// summary and merges its signature into `merged` (pairs that do not merge
// count in the summary only).
void compare_into(const DLTensor& golden, const DLTensor& other, peat_firing_t& f, double& sum_sq, uint64_t& finite,
                  peat_signature_t& merged, bool& have_signature) {
  peat_signature_t sig;
  if (!analyze_pair(golden, other, sig)) return;
  f.compared = 1;
  f.elements += static_cast<int64_t>(sig.count);
  f.mismatches += static_cast<int64_t>(sig.bitwise_mismatch_count);
  f.new_nonfinite += static_cast<int64_t>(sig.new_nonfinite_count);
  f.max_abs_error = std::max(f.max_abs_error, sig.max_abs_error);
  f.max_rel_error = std::max(f.max_rel_error, sig.max_rel_error);
  sum_sq += analyzer::sum_value(sig.sum_sq_error);
  finite += sig.finite_count;
  merge_into(merged, have_signature, sig);
}

}  // namespace

void Injector::inject(int32_t policy_index, uint32_t op, uint64_t call, DLTensor* tensor, const DLTensor* stale,
                      peat_inject_truth_t& truth) {
  session_.check_op(op);
  peat_inject_spec_t spec;
  std::vector<int64_t> elements;
  bool needs_previous = false;
  {
    std::lock_guard lock(mutex_);
    if (policy_index < 0 || static_cast<std::size_t>(policy_index) >= policies_.size())
      fail(PEAT_STATUS_NOT_FOUND, "policy {} does not exist (the injector has {} policies)", policy_index,
           policies_.size());
    const Policy& p = *policies_[static_cast<std::size_t>(policy_index)];
    if (p.settings.action != PEAT_ACTION_INJECT)
      fail(PEAT_STATUS_INVALID_ARGUMENT, "policy {} has action {}, not INJECT", policy_index, action_name(p.settings.action));
    spec = p.spec;
    elements = p.elements;
    needs_previous = p.needs_previous;
  }
  if (!elements.empty()) spec.elements = elements.data();
  std::unique_ptr<Scratch> zeros;
  if (needs_previous) {
    if (stale != nullptr) {
      spec.stale = stale;
    } else {
      if (tensor == nullptr) fail(PEAT_STATUS_INVALID_ARGUMENT, "argument 'tensor' is NULL");
      zeros = std::make_unique<Scratch>(*tensor);
      const TensorView zv = make_view(&zeros->tensor(), "stale");
      if (!is_host(zv.device))
        fail(PEAT_STATUS_UNSUPPORTED, "a zero stale tensor can only be made in host memory; pass `stale`");
      std::memset(zeros->tensor().data, 0, static_cast<std::size_t>(zv.numel) * dtype_size(zv.dtype));
      spec.stale = &zeros->tensor();
    }
  }
  apply(spec, tensor, nullptr, session_.seed(), op, static_cast<uint32_t>(call), truth);
}

void Injector::dispatch(uint32_t op, const DLTensor* inputs, int32_t n_in, DLTensor* outputs, int32_t n_out,
                        const void* attrs, peat_kernel_fn golden, void* golden_ctx, peat_action_t& action,
                        uint64_t& call) {
  if (golden == nullptr) fail(PEAT_STATUS_INVALID_ARGUMENT, "golden_fn is NULL");
  if (n_in < 0 || n_out < 0) fail(PEAT_STATUS_INVALID_ARGUMENT, "n_in ({}) and n_out ({}) must be >= 0", n_in, n_out);
  if (n_in > 0 && inputs == nullptr) fail(PEAT_STATUS_INVALID_ARGUMENT, "inputs is NULL but n_in is {}", n_in);
  if (n_out > 0 && outputs == nullptr) fail(PEAT_STATUS_INVALID_ARGUMENT, "outputs is NULL but n_out is {}", n_out);
  for (int32_t i = 0; i < n_in; ++i) make_view(&inputs[i], fmt::format("inputs[{}]", i));
  for (int32_t i = 0; i < n_out; ++i) make_view(&outputs[i], fmt::format("outputs[{}]", i));

  const Policy* fired = nullptr;
  const OpPlan* plan = nullptr;
  const int64_t step = session_.step();
  const peat_phase_t phase = session_.phase();
  action = decide(op, call, &fired, &plan);

  const auto run_golden = [&] {
    const int32_t rc = golden(golden_ctx, inputs, n_in, outputs, n_out, attrs);
    if (rc != 0)
      fail(PEAT_STATUS_CALLBACK_FAILED, "golden kernel of op '{}' (call {}) returned {}", session_.op_name(op), call, rc);
  };
  const auto keep_previous = [&] {
    if (!plan->needs_previous || plan->previous_output >= n_out) return;
    const DLTensor& out = outputs[plan->previous_output];
    const TensorView v = make_view(&out, "output");
    if (!is_host(v.device)) return;
    Previous prev;
    prev.shape.assign(out.shape, out.shape + out.ndim);
    prev.dtype = out.dtype;
    prev.bytes.resize(static_cast<std::size_t>(v.numel) * dtype_size(out.dtype));
    DLTensor dst{};
    dst.data = prev.bytes.data();
    dst.device = DLDevice{kDLCPU, 0};
    dst.ndim = out.ndim;
    dst.dtype = out.dtype;
    dst.shape = prev.shape.empty() ? nullptr : prev.shape.data();
    copy_into(dst, out);
    std::lock_guard lock(mutex_);
    previous_[op] = std::move(prev);
  };

  if (action == PEAT_ACTION_RUN_GOLDEN) {
    run_golden();
    keep_previous();
    return;
  }

  peat_firing_t f{};
  f.struct_size = sizeof(peat_firing_t);
  f.op = op;
  f.call = call;
  f.step = step;
  f.phase = phase;
  f.action = action;
  f.policy = fired ? static_cast<int32_t>(fired->index) : -1;
  f.status = PEAT_STATUS_OK;
  f.rerun_mismatches = -1;
  double sum_sq = 0.0;
  uint64_t finite = 0;
  peat_signature_t signature = analyzer::empty_signature();
  bool have_signature = false;
  peat_signature_t rerun = analyzer::empty_signature();  // second candidate run vs first (run_twice)
  bool have_rerun = false;
  std::string problem;

  const Candidate* candidate = plan->candidate;
  // Runs the candidate into `targets`; returns OK or why its result is unusable.
  const auto run_candidate = [&](DLTensor* targets) -> peat_status_t {
    if (candidate == nullptr) {
      problem = "no candidate is registered";
      return PEAT_STATUS_NOT_FOUND;
    }
    const int32_t rc = candidate->fn(candidate->ctx, inputs, n_in, targets, n_out, attrs);
    if (rc != 0) {
      problem = fmt::format("candidate {} returned {}", candidate->origin, rc);
      return PEAT_STATUS_CALLBACK_FAILED;
    }
    for (int32_t i = 0; i < n_out; ++i)
      if (all_nan(targets[i])) {
        problem = fmt::format("candidate {} wrote NaN in every element of output {}", candidate->origin, i);
        return PEAT_STATUS_CORRUPT_DATA;
      }
    return PEAT_STATUS_OK;
  };

  switch (action) {
    case PEAT_ACTION_RUN_CANDIDATE: {
      f.status = run_candidate(outputs);
      if (f.status != PEAT_STATUS_OK) {
        run_golden();
        f.kept_golden = 1;
      }
      break;
    }
    case PEAT_ACTION_RUN_BOTH: {
      run_golden();
      f.kept_golden = 1;
      // Scratch copies of the outputs (one per run) for the candidate to write.
      const auto scratch_outputs = [&](std::vector<std::unique_ptr<Scratch>>& scratch, std::vector<DLTensor>& targets) {
        for (int32_t i = 0; i < n_out; ++i) {
          scratch.push_back(std::make_unique<Scratch>(outputs[i]));
          targets.push_back(scratch.back()->tensor());
        }
      };
      std::vector<std::unique_ptr<Scratch>> scratch;
      std::vector<DLTensor> targets;
      scratch_outputs(scratch, targets);
      f.status = run_candidate(targets.data());
      if (f.status == PEAT_STATUS_OK)
        for (int32_t i = 0; i < n_out; ++i) compare_into(outputs[i], targets[static_cast<std::size_t>(i)], f, sum_sq, finite, signature,
                       have_signature);
      if (f.status == PEAT_STATUS_OK && fired != nullptr && fired->settings.run_twice) {
        // The same inputs again, into other scratch copies: the two runs are
        // compared with each other element by element.
        std::vector<std::unique_ptr<Scratch>> scratch2;
        std::vector<DLTensor> targets2;
        scratch_outputs(scratch2, targets2);
        if (run_candidate(targets2.data()) == PEAT_STATUS_OK) {
          int64_t differing = 0;
          for (int32_t i = 0; i < n_out; ++i) {
            peat_signature_t sig;
            const auto k = static_cast<std::size_t>(i);
            if (!analyze_pair(targets[k], targets2[k], sig)) continue;
            differing += static_cast<int64_t>(sig.bitwise_mismatch_count);
            merge_into(rerun, have_rerun, sig);
          }
          if (have_rerun) f.rerun_mismatches = differing;
        } else {
          session_.log(PEAT_LOG_WARNING, fmt::format("injector: op '{}' call {}: the second run failed: {}",
                                                      session_.op_name(op), call, problem));
        }
      }
      break;
    }
    case PEAT_ACTION_INJECT: {
      run_golden();
      const int32_t index = fired->settings.output_index;
      if (index >= n_out) {
        f.status = PEAT_STATUS_INVALID_ARGUMENT;
        f.kept_golden = 1;
        problem = fmt::format("policy {} injects into output {} but the op has {} outputs", fired->index, index, n_out);
        break;
      }
      DLTensor& out = outputs[index];
      Scratch golden_copy(out);
      copy_into(golden_copy.tensor(), out);
      peat_inject_spec_t spec = fired->spec;
      std::unique_ptr<Scratch> stale;
      if (fired->needs_previous) {
        stale = std::make_unique<Scratch>(out);
        const TensorView sv = make_view(&stale->tensor(), "stale");
        bool have = false;
        {
          std::lock_guard lock(mutex_);
          const auto it = previous_.find(op);
          if (it != previous_.end() && it->second.dtype == out.dtype &&
              it->second.shape == std::vector<int64_t>(out.shape, out.shape + out.ndim) &&
              it->second.bytes.size() == static_cast<std::size_t>(sv.numel) * dtype_size(out.dtype) &&
              is_host(sv.device)) {
            std::memcpy(stale->tensor().data, it->second.bytes.data(), it->second.bytes.size());
            have = true;
          }
        }
        if (!have && is_host(sv.device))  // before the op's first output: zeros
          std::memset(stale->tensor().data, 0, static_cast<std::size_t>(sv.numel) * dtype_size(out.dtype));
        spec.stale = &stale->tensor();
      }
      peat_inject_truth_t truth{};
      try {
        apply(spec, &out, nullptr, session_.seed(), op, static_cast<uint32_t>(call), truth);
        f.injected = truth.changed;
        f.kept_golden = 0;
        compare_into(golden_copy.tensor(), out, f, sum_sq, finite, signature, have_signature);
      } catch (const Error& e) {
        f.status = e.status();
        f.kept_golden = 1;
        problem = fmt::format("error model of policy {} failed: {}", fired->index, e.what());
      }
      break;
    }
    default: break;
  }
  if (finite > 0) f.rms_error = std::sqrt(sum_sq / static_cast<double>(finite));
  keep_previous();
  append(f, signature, have_rerun ? &rerun : nullptr);
  if (f.status != PEAT_STATUS_OK)
    session_.log(PEAT_LOG_WARNING, fmt::format("injector: op '{}' call {} ({}): {}; the golden result is kept",
                                                session_.op_name(op), call, action_name(action), problem));
}

}  // namespace peat::impl::injector
