// peat::impl::injector::Injector — the frequency-based runtime FI scheduler, the
// candidate registry and dispatch, and the firing log (see peat/injector.h).
//
// Hot path (decide): the session's per-op counter is incremented, then the
// op's plan is read from a two-level table indexed by op id (two acquire
// loads). A plan is built once per op id, on first sight, by matching every
// policy's glob against the op name; it is immutable and published with a
// release store, so deciders never lock. Changing policies or candidates
// bumps a generation number; a plan of an older generation is rebuilt on its
// op's next call. Old plans and policies are kept until the injector is
// destroyed, so a decider holding one never reads freed memory.
#pragma once

#include <peat/analyzer.h>
#include <peat/injector.h>

#include "lib/core/tensor_view.hpp"

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace peat::impl::session {
class Session;
}

namespace peat::impl::injector {

// The defaults of peat_injector_policy_init and peat_injector_options_init.
peat_injector_policy_t default_policy() noexcept;
peat_injector_options_t default_options() noexcept;

struct Policy {
  std::string pattern;
  peat_injector_policy_t settings{};   // op_pattern points to `pattern`, spec to `spec`
  peat_inject_spec_t spec{};           // INJECT: the model (elements point into `elements`)
  std::vector<int64_t> elements;
  uint32_t index = 0;
  bool every_call = true;              // every_n == 1
  bool pow2 = false;                   // every_n is a power of two: call & mask
  uint64_t mask = 0;
  bool needs_previous = false;         // INJECT with a STALE fill
  std::atomic<uint64_t> firings{0};    // times it fired (may count past max_firings; see fires())
};

struct Candidate {
  std::string pattern;
  peat_kernel_fn fn = nullptr;
  void* ctx = nullptr;
  std::string origin;  // "function pointer" or "libx.so:symbol"
};

// What applies to one op id; immutable once published.
struct OpPlan {
  uint64_t generation = 0;
  std::vector<Policy*> policies;   // matching policies, in the order added
  const Candidate* candidate = nullptr;
  bool needs_previous = false;     // some policy keeps the previous output (STALE)
  int32_t previous_output = 0;
};

class Injector {
 public:
  Injector(session::Session& session, const peat_injector_options_t& options);
  ~Injector();
  Injector(const Injector&) = delete;
  Injector& operator=(const Injector&) = delete;

  session::Session& session() const noexcept { return session_; }

  uint32_t add_policy(const peat_injector_policy_t& policy);  // throws INVALID_ARGUMENT
  void clear_policies();
  void set_candidate(std::string_view pattern, peat_kernel_fn fn, void* ctx, std::string origin);
  void set_candidate_symbol(std::string_view pattern, std::string_view spec, void* ctx);

  // Claims the next call of `op` and decides. `fired` receives the policy that
  // fired (nullptr when the action is RUN_GOLDEN); `plan` the op's plan.
  peat_action_t decide(uint32_t op, uint64_t& call, const Policy** fired = nullptr, const OpPlan** plan = nullptr);
  // Decides for an already-claimed call index.
  peat_action_t decide_call(uint32_t op, uint64_t call, const Policy** fired = nullptr,
                            const OpPlan** plan = nullptr);

  // Applies INJECT policy `policy`'s model with key (session seed, op, call).
  void inject(int32_t policy, uint32_t op, uint64_t call, DLTensor* tensor, const DLTensor* stale,
              peat_inject_truth_t& truth);

  void dispatch(uint32_t op, const DLTensor* inputs, int32_t n_in, DLTensor* outputs, int32_t n_out,
                const void* attrs, peat_kernel_fn golden, void* golden_ctx, peat_action_t& action, uint64_t& call);

  uint64_t firing_count() const;
  uint64_t firings_dropped() const;
  peat_firing_t firing(uint64_t index) const;  // throws NOT_FOUND
  peat_signature_t firing_signature(uint64_t index) const;  // throws NOT_FOUND
  peat_signature_t firing_rerun_signature(uint64_t index) const;  // throws NOT_FOUND
  void write_log(const std::string& path, bool append) const;

 private:
  const OpPlan& plan_for(uint32_t op);
  const OpPlan& build_plan(uint32_t op);
  peat_action_t evaluate(const OpPlan& plan, uint32_t op, uint64_t call, const Policy** fired);
  // rerun: the second run against the first (run_twice), or NULL.
  void append(const peat_firing_t& firing, const peat_signature_t& signature, const peat_signature_t* rerun);

  session::Session& session_;
  uint32_t max_firings_logged_;

  // Plans by op id: kChunks chunks of kChunkSize slots, allocated on demand.
  static constexpr uint32_t kChunkBits = 10;
  static constexpr uint32_t kChunkSize = 1u << kChunkBits;
  static constexpr uint32_t kChunks = 1u << 10;  // 2^20 op ids, the session's limit
  std::unique_ptr<std::atomic<std::atomic<const OpPlan*>*>[]> chunks_;
  std::atomic<uint64_t> generation_{1};

  mutable std::mutex mutex_;  // guards everything below
  std::vector<std::unique_ptr<Policy>> policies_;         // active, in order
  std::vector<std::unique_ptr<Policy>> retired_policies_;
  std::vector<std::unique_ptr<Candidate>> candidates_;    // in order of registration (all kept)
  std::vector<std::unique_ptr<Candidate>> retired_candidates_;
  std::deque<OpPlan> plans_;                              // every plan ever published
  std::vector<std::unique_ptr<std::atomic<const OpPlan*>[]>> chunk_storage_;
  std::vector<void*> libraries_;                          // dlopen handles

  // Previous output of ops whose policy fills with stale data.
  struct Previous {
    std::vector<std::byte> bytes;
    std::vector<int64_t> shape;
    DLDataType dtype{};
  };
  std::unordered_map<uint32_t, Previous> previous_;

  mutable std::mutex log_mutex_;
  std::vector<peat_firing_t> log_;
  std::vector<peat_signature_t> log_signatures_;  // parallel to log_
  std::unordered_map<uint64_t, peat_signature_t> log_reruns_;  // by log index: firings that ran twice
  uint64_t dropped_ = 0;
};

}  // namespace peat::impl::injector

struct peat_injector : peat::impl::injector::Injector {
  using peat::impl::injector::Injector::Injector;
};
