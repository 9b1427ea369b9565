// The runtime FI scheduler, the candidate registry and the firing log.
// Dispatch itself is in dispatch.cpp.
#include "lib/injector/injector.hpp"

#include "lib/core/error.hpp"
#include "lib/core/status.hpp"
#include "lib/injector/glob.hpp"
#include "lib/injector/inject.hpp"
#include "lib/injector/kernel_symbol.hpp"
#include "lib/session/session.hpp"

#include "backends/common/inject_element.h"
#include "backends/common/philox.h"

#include "lib/core/versioned_struct.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <fstream>

namespace peat::impl::injector {

peat_injector_policy_t default_policy() noexcept {
  peat_injector_policy_t p{};
  p.struct_size = sizeof(peat_injector_policy_t);
  p.op_pattern = "*";
  p.action = PEAT_ACTION_RUN_BOTH;
  p.every_n = 1;
  p.phase_offset = 0;
  p.probability = 1.0;
  p.step_begin = 0;
  p.step_end = -1;
  p.first_calls = 0;
  p.max_firings = 0;
  p.phase_mask = PEAT_PHASE_MASK_ALL;
  p.spec = nullptr;
  p.output_index = 0;
  p.run_twice = 0;
  return p;
}

peat_injector_options_t default_options() noexcept {
  auto o = zeroed_struct<peat_injector_options_t>();
  o.max_firings_logged = 4096;
  return o;
}

Injector::Injector(session::Session& session, const peat_injector_options_t& options)
    : session_(session), max_firings_logged_(options.max_firings_logged) {
  if (max_firings_logged_ < 1 || max_firings_logged_ > (1u << 24))
    fail(PEAT_STATUS_INVALID_ARGUMENT, "options.max_firings_logged is {}; it must be in [1, 2^24]",
         max_firings_logged_);
  chunks_ = std::make_unique<std::atomic<std::atomic<const OpPlan*>*>[]>(kChunks);
  for (uint32_t i = 0; i < kChunks; ++i) chunks_[i].store(nullptr, std::memory_order_relaxed);
}

Injector::~Injector() {
  for (void* handle : libraries_) close_kernel_library(handle);
}

uint32_t Injector::add_policy(const peat_injector_policy_t& in) {
  const auto bad = [](std::string_view field, const auto& value, std::string_view why) {
    fail(PEAT_STATUS_INVALID_ARGUMENT, "policy.{} = {}: {}", field, value, why);
  };
  if (in.op_pattern == nullptr) fail(PEAT_STATUS_INVALID_ARGUMENT, "policy.op_pattern is NULL");
  auto policy = std::make_unique<Policy>();
  policy->pattern = in.op_pattern;
  validate_glob(policy->pattern, "policy.op_pattern");
  if (in.action != PEAT_ACTION_RUN_CANDIDATE && in.action != PEAT_ACTION_RUN_BOTH && in.action != PEAT_ACTION_INJECT)
    bad("action", in.action, "must be RUN_CANDIDATE (1), RUN_BOTH (2) or INJECT (3)");
  if (in.every_n == 0) bad("every_n", in.every_n, "must be >= 1");
  if (in.phase_offset >= in.every_n) bad("phase_offset", in.phase_offset, "must be < every_n");
  if (!(in.probability >= 0.0 && in.probability <= 1.0)) bad("probability", in.probability, "must be in [0, 1]");
  if (in.step_end >= 0 && in.step_end <= in.step_begin)
    bad("step_end", in.step_end, "the window [step_begin, step_end) is empty (use -1 for no end)");
  if (in.phase_mask == 0 || (in.phase_mask & ~PEAT_PHASE_MASK_ALL) != 0)
    bad("phase_mask", in.phase_mask, "must be a non-empty set of (1 << PEAT_PHASE_*) bits (1..15)");
  if (in.output_index < 0) bad("output_index", in.output_index, "must be >= 0");
  if (in.run_twice != 0 && in.run_twice != 1) bad("run_twice", in.run_twice, "must be 0 or 1");
  policy->settings = in;
  if (in.action == PEAT_ACTION_INJECT) {
    if (in.spec == nullptr) fail(PEAT_STATUS_INVALID_ARGUMENT, "policy.spec is NULL but the action is INJECT");
    policy->spec = read_spec(in.spec, "policy.spec");
    validate_spec(policy->spec, "policy.spec");
    if (policy->spec.stale != nullptr)
      fail(PEAT_STATUS_INVALID_ARGUMENT,
           "policy.spec.stale must be NULL: with fill STALE the injector supplies the op's previous output");
    if (policy->spec.elements != nullptr) {
      if (policy->spec.count < 1 || policy->spec.count > (int64_t{1} << 24))
        fail(PEAT_STATUS_INVALID_ARGUMENT, "policy.spec.count = {} must be in [1, 2^24] with elements",
             policy->spec.count);
      policy->elements.assign(policy->spec.elements, policy->spec.elements + policy->spec.count);
      policy->spec.elements = policy->elements.data();
    }
    policy->needs_previous = (policy->spec.kind == PEAT_INJECT_REGION || policy->spec.kind == PEAT_INJECT_SHIFT) &&
                             policy->spec.fill == PEAT_FILL_STALE;
  } else {
    policy->settings.spec = nullptr;
  }
  policy->settings.op_pattern = policy->pattern.c_str();
  policy->every_call = in.every_n == 1;
  policy->pow2 = (in.every_n & (in.every_n - 1)) == 0;
  policy->mask = in.every_n - 1;

  std::lock_guard lock(mutex_);
  policy->index = static_cast<uint32_t>(policies_.size());
  policies_.push_back(std::move(policy));
  generation_.fetch_add(1, std::memory_order_release);
  return policies_.back()->index;
}

void Injector::clear_policies() {
  std::lock_guard lock(mutex_);
  for (auto& p : policies_) retired_policies_.push_back(std::move(p));
  policies_.clear();
  generation_.fetch_add(1, std::memory_order_release);
}

void Injector::set_candidate(std::string_view pattern, peat_kernel_fn fn, void* ctx, std::string origin) {
  if (fn == nullptr) fail(PEAT_STATUS_INVALID_ARGUMENT, "argument 'fn' is NULL");
  validate_glob(pattern, "op_pattern");
  auto candidate = std::make_unique<Candidate>();
  candidate->pattern = std::string(pattern);
  candidate->fn = fn;
  candidate->ctx = ctx;
  candidate->origin = std::move(origin);
  std::lock_guard lock(mutex_);
  candidates_.push_back(std::move(candidate));
  generation_.fetch_add(1, std::memory_order_release);
}

void Injector::set_candidate_symbol(std::string_view pattern, std::string_view spec, void* ctx) {
  validate_glob(pattern, "op_pattern");
  const KernelSymbol loaded = load_kernel_symbol(spec);
  {
    std::lock_guard lock(mutex_);
    libraries_.push_back(loaded.library);
  }
  set_candidate(pattern, loaded.fn, ctx, std::string(spec));
}

const OpPlan& Injector::plan_for(uint32_t op) {
  const std::atomic<const OpPlan*>* chunk = chunks_[op >> kChunkBits].load(std::memory_order_acquire);
  if (chunk != nullptr) {
    const OpPlan* plan = chunk[op & (kChunkSize - 1)].load(std::memory_order_acquire);
    if (plan != nullptr && plan->generation == generation_.load(std::memory_order_acquire)) return *plan;
  }
  return build_plan(op);
}

const OpPlan& Injector::build_plan(uint32_t op) {
  std::lock_guard lock(mutex_);
  const uint32_t chunk_index = op >> kChunkBits;
  if (chunk_index >= kChunks) fail(PEAT_STATUS_INVALID_ARGUMENT, "op id {} is beyond the injector's table", op);
  std::atomic<const OpPlan*>* chunk = chunks_[chunk_index].load(std::memory_order_acquire);
  if (chunk == nullptr) {
    auto storage = std::make_unique<std::atomic<const OpPlan*>[]>(kChunkSize);
    for (uint32_t i = 0; i < kChunkSize; ++i) storage[i].store(nullptr, std::memory_order_relaxed);
    chunk = storage.get();
    chunk_storage_.push_back(std::move(storage));
    chunks_[chunk_index].store(chunk, std::memory_order_release);
  }
  const uint64_t generation = generation_.load(std::memory_order_acquire);
  std::atomic<const OpPlan*>& slot = chunk[op & (kChunkSize - 1)];
  const OpPlan* existing = slot.load(std::memory_order_acquire);
  if (existing != nullptr && existing->generation == generation) return *existing;

  const std::string& name = session_.op_name(op);
  OpPlan& plan = plans_.emplace_back();
  plan.generation = generation;
  for (const auto& policy : policies_) {
    if (!glob_match(policy->pattern, name)) continue;
    plan.policies.push_back(policy.get());
    if (policy->needs_previous && !plan.needs_previous) {
      plan.needs_previous = true;
      plan.previous_output = policy->settings.output_index;
    }
  }
  for (const auto& candidate : candidates_)
    if (glob_match(candidate->pattern, name)) plan.candidate = candidate.get();  // the last one wins
  slot.store(&plan, std::memory_order_release);
  return plan;
}

peat_action_t Injector::evaluate(const OpPlan& plan, uint32_t op, uint64_t call, const Policy** fired) {
  for (Policy* policy : plan.policies) {
    const peat_injector_policy_t& s = policy->settings;
    // The call-index tests first: they reject most calls without touching
    // any shared state.
    if (!policy->every_call) {
      const uint64_t r = policy->pow2 ? (call & policy->mask) : (call % s.every_n);
      if (r != s.phase_offset) continue;
    }
    if (s.first_calls != 0 && call >= s.first_calls) continue;
    const int64_t step = session_.step();
    const uint32_t phase_bit = 1u << (static_cast<uint32_t>(session_.phase()) & 31u);
    if (step < s.step_begin || (s.step_end >= 0 && step >= s.step_end)) continue;
    if ((s.phase_mask & phase_bit) == 0) continue;
    if (s.probability < 1.0) {
      const uint64_t element = hd::tagged((call >> 32) | (static_cast<uint64_t>(policy->index) << 32), hd::kTagPolicy);
      const hd::Philox4x32 w = hd::philox_random(session_.seed(), op, static_cast<uint32_t>(call), element);
      if (!(hd::philox_uniform(w.v[0], w.v[1]) < s.probability)) continue;
    }
    if (s.max_firings != 0) {
      if (policy->firings.load(std::memory_order_relaxed) >= s.max_firings) continue;
      if (policy->firings.fetch_add(1, std::memory_order_relaxed) >= s.max_firings) continue;
    } else {
      policy->firings.fetch_add(1, std::memory_order_relaxed);
    }
    if (fired) *fired = policy;
    return s.action;
  }
  return PEAT_ACTION_RUN_GOLDEN;
}

peat_action_t Injector::decide(uint32_t op, uint64_t& call, const Policy** fired, const OpPlan** plan_out) {
  call = session_.next_call(op);  // checks the op id
  const OpPlan& plan = plan_for(op);
  if (plan_out) *plan_out = &plan;
  if (fired) *fired = nullptr;
  return evaluate(plan, op, call, fired);
}

peat_action_t Injector::decide_call(uint32_t op, uint64_t call, const Policy** fired, const OpPlan** plan_out) {
  session_.check_op(op);
  const OpPlan& plan = plan_for(op);
  if (plan_out) *plan_out = &plan;
  if (fired) *fired = nullptr;
  return evaluate(plan, op, call, fired);
}

void Injector::append(const peat_firing_t& firing, const peat_signature_t& signature,
                      const peat_signature_t* rerun) {
  std::lock_guard lock(log_mutex_);
  if (log_.size() >= max_firings_logged_) {
    ++dropped_;
    return;
  }
  if (rerun != nullptr) log_reruns_.emplace(log_.size(), *rerun);
  log_.push_back(firing);
  log_signatures_.push_back(signature);
}

uint64_t Injector::firing_count() const {
  std::lock_guard lock(log_mutex_);
  return log_.size();
}

uint64_t Injector::firings_dropped() const {
  std::lock_guard lock(log_mutex_);
  return dropped_;
}

peat_firing_t Injector::firing(uint64_t index) const {
  std::lock_guard lock(log_mutex_);
  if (index >= log_.size())
    fail(PEAT_STATUS_NOT_FOUND, "firing {} does not exist (the log holds {})", index, log_.size());
  return log_[index];
}

peat_signature_t Injector::firing_signature(uint64_t index) const {
  std::lock_guard lock(log_mutex_);
  if (index >= log_.size())
    fail(PEAT_STATUS_NOT_FOUND, "firing {} does not exist (the log holds {})", index, log_.size());
  if (!log_[index].compared) fail(PEAT_STATUS_NOT_FOUND, "firing {} compared nothing (its status: {})", index,
                                  status_name(log_[index].status));
  return log_signatures_[index];
}

peat_signature_t Injector::firing_rerun_signature(uint64_t index) const {
  std::lock_guard lock(log_mutex_);
  if (index >= log_.size())
    fail(PEAT_STATUS_NOT_FOUND, "firing {} does not exist (the log holds {})", index, log_.size());
  const auto it = log_reruns_.find(index);
  if (it == log_reruns_.end())
    fail(PEAT_STATUS_NOT_FOUND, "firing {} did not run the candidate twice (a RUN_BOTH policy with run_twice = 1)",
         index);
  return it->second;
}

namespace {
nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }
}  // namespace

void Injector::write_log(const std::string& path, bool append_mode) const {
  std::vector<peat_firing_t> copy;
  {
    std::lock_guard lock(log_mutex_);
    copy = log_;
  }
  std::ofstream out(path, append_mode ? std::ios::app : std::ios::trunc);
  if (!out) fail(PEAT_STATUS_IO_ERROR, "cannot open '{}' for writing: {}", path, std::strerror(errno));
  for (const peat_firing_t& f : copy) {
    nlohmann::json j;
    j["op"] = f.op;
    j["op_name"] = session_.op_name(f.op);
    j["call"] = f.call;
    j["step"] = f.step;
    j["phase"] = f.phase;
    j["action"] = f.action;
    j["action_name"] = action_name(f.action);
    j["policy"] = f.policy;
    j["status"] = f.status;
    j["status_name"] = status_name(f.status);
    j["kept_golden"] = f.kept_golden;
    j["compared"] = f.compared;
    j["elements"] = f.elements;
    j["mismatches"] = f.mismatches;
    j["new_nonfinite"] = f.new_nonfinite;
    j["max_abs_error"] = number_or_null(f.max_abs_error);
    j["max_rel_error"] = number_or_null(f.max_rel_error);
    j["rms_error"] = number_or_null(f.rms_error);
    j["injected"] = f.injected;
    if (f.rerun_mismatches >= 0) j["rerun_mismatches"] = f.rerun_mismatches;
    out << j.dump() << '\n';
  }
  out.flush();
  if (!out) fail(PEAT_STATUS_IO_ERROR, "writing '{}' failed: {}", path, std::strerror(errno));
}

}  // namespace peat::impl::injector
