// peat_dispatcher.hpp — PEAT attached at the trainer's GEMM seam.
//
// PeatDispatcher is a GemmDispatcher that routes every GEMM through PEAT's
// runtime injector (peat::injector::dispatch of peat.hpp, with the golden Eigen GEMM as the
// golden kernel) and, when a trace is open, records the sampled calls with the
// profiler: attributes M, N, K, trans_a, trans_b, alpha, beta; inputs A, B
// (as op(A), op(B) views); output C (the result that propagates).
//
// Ops are interned on the session once, in the order of Model::op_names();
// the session owns the per-op call counters. Not thread-safe: one model, one
// training thread (as the GemmDispatcher contract says).
#pragma once

#include "gemm.hpp"
#include "nn.hpp"
#include "trainer.hpp"

#include <peat/peat.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace peat_trainer {

struct PeatOptions {
  std::string trace;             // trace file to record into; "" = no profiler
  uint64_t record_every = 100;   // record every N-th call of each op (1 = every call)
  std::string fi_candidate;      // "libx.so:symbol" (a peat_kernel_fn); "" = no runtime FI
  uint64_t fi_every = 1;         // the candidate runs on calls c with c % fi_every == 0
  std::string fi_ops = "*";      // glob over op names the candidate applies to
  uint64_t seed = 1;             // session seed
  int golden_threads = 1;        // threads of the golden GEMM
  bool training_only = true;     // FI only in training phases (evaluation stays golden)
};

class PeatDispatcher final : public GemmDispatcher {
 public:
  // Throws peat::error (a std::runtime_error) with PEAT's message when a PEAT call fails.
  explicit PeatDispatcher(const PeatOptions& options);
  PeatDispatcher(const PeatDispatcher&) = delete;
  PeatDispatcher& operator=(const PeatDispatcher&) = delete;

  // Interns the model's ops (once per op name; a new model's ops are added).
  void attach(const Model& model);
  // Hooks on_step_begin (step marker / session step) and on_step (loss,
  // accuracy and lr scalars into the trace) of `trainer`.
  void hook(Trainer& trainer);
  void gemm(const GemmCall& call) override;
  // Records the named tensors as checkpoint `name` (no-op without a trace).
  void checkpoint(const std::string& name, int64_t step, const std::map<std::string, const Tensor*>& state);
  // Flushes and closes the trace (no-op without one). Throws on a write error.
  void close();

  peat_session_t* session() const noexcept { return session_.get(); }
  peat_injector_t* injector() const noexcept { return injector_.get(); }
  peat_profiler_t* profiler() const noexcept { return profiler_ ? profiler_->get() : nullptr; }
  int64_t candidate_calls() const noexcept { return candidate_calls_; }
  int64_t golden_calls() const noexcept { return golden_calls_; }
  uint64_t recorded() const noexcept { return recorded_; }

 private:
  PeatOptions opt_;
  GoldenGemm golden_;
  peat::session session_;
  peat::injector injector_;
  std::optional<peat::profiler> profiler_;  // when recording
  const Model* model_ = nullptr;
  std::vector<uint32_t> op_ids_;  // index: GemmCall::op_index of the attached model
  int64_t candidate_calls_ = 0, golden_calls_ = 0;
  uint64_t recorded_ = 0;
};

}  // namespace peat_trainer
