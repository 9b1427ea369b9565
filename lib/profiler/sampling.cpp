// Profiler: which calls are recorded (sampling rules, per-site counting).
#include "lib/profiler/profiler.hpp"

#include "lib/core/error.hpp"
#include "lib/session/session.hpp"

#include <algorithm>

#include <fnmatch.h>

namespace peat::impl::profiler {

namespace {
constexpr int32_t kUndecided = -2;
}  // namespace

void Profiler::add_rule(SampleRule rule) {
  std::unique_lock lock(rules_mutex_);
  rules_.push_back(std::move(rule));
  std::fill(rule_cache_.begin(), rule_cache_.end(), kUndecided);
}

bool Profiler::should_record(uint32_t op, uint64_t call, int64_t step) {
  if (step < -1) fail(PEAT_STATUS_INVALID_ARGUMENT, "step {} is negative (use -1 for the session's step)", step);
  if (step < 0) step = session_.step();
  session_.check_op(op);
  {
    std::shared_lock lock(rules_mutex_);
    if (op < rule_cache_.size() && rule_cache_[op] != kUndecided) return selects(rule_cache_[op], op, call, step);
  }
  const std::string& name = session_.op_name(op);  // throws NOT_FOUND
  std::unique_lock lock(rules_mutex_);
  if (rule_cache_.size() <= op) rule_cache_.resize(std::max<std::size_t>(op + 1, session_.op_count()), kUndecided);
  int32_t chosen = -1;
  for (std::size_t i = 0; i < rules_.size(); ++i) {
    if (::fnmatch(rules_[i].op_glob.c_str(), name.c_str(), 0) == 0) {
      chosen = static_cast<int32_t>(i);
      break;
    }
  }
  rule_cache_[op] = chosen;
  return selects(chosen, op, call, step);
}

// Whether rule `rule` (-1: none) selects a call; rules_mutex_ is held.
bool Profiler::selects(int32_t rule, uint32_t op, uint64_t call, int64_t step) {
  if (rule < 0) return default_record_;
  const SampleRule& r = rules_[static_cast<std::size_t>(rule)];
  if (!r.record) return false;
  if (r.first_k > 0 && call >= r.first_k) return false;
  if (step < r.step_begin || step >= r.step_end) return false;
  if (r.every_n <= 1) return true;
  const uint64_t count = r.count_by == PEAT_SAMPLE_BY_CALL ? call : site_ordinal(op, call, step);
  return count % r.every_n == 0;
}

// The count every_n tests under PEAT_SAMPLE_BY_SITE: (j + k) for the j-th step
// (from 0) that reaches site k, the op's k-th call in `step`. Deciding the same
// call twice gives the same count. Sites past kMaxSites calls in one step are
// not tracked (bounded memory for a run that never marks a step): they count
// as if reached for the first time, which is the call-index rule.
uint64_t Profiler::site_ordinal(uint32_t op, uint64_t call, int64_t step) {
  constexpr uint64_t kMaxSites = 4096;
  std::lock_guard lock(sites_mutex_);
  if (sites_.size() <= op) sites_.resize(static_cast<std::size_t>(op) + 1);
  OpSites& s = sites_[op];
  if (s.step != step) {
    s.step = step;
    s.first_call = call;
  }
  const uint64_t k = call >= s.first_call ? call - s.first_call : 0;
  if (k >= kMaxSites) return k;
  if (s.sites.size() <= k) s.sites.resize(static_cast<std::size_t>(k) + 1);
  SiteCount& site = s.sites[static_cast<std::size_t>(k)];
  if (site.last_step != step) {
    site.last_step = step;
    ++site.steps;
  }
  return site.steps - 1 + k;
}

}  // namespace peat::impl::profiler
