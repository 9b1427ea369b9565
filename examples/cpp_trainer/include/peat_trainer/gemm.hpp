// gemm.hpp — the one seam every matrix product of the trainer goes through.
//
// Every GEMM the trainer runs (fully-connected and im2col convolution; forward,
// input-gradient and weight-gradient) is described by a GemmCall and handed to
// the model's GemmDispatcher. Nothing else in the trainer multiplies matrices.
// That is the point where PEAT attaches: a profiler records the call (op name,
// phase, shapes, operands, step), a runtime injector decides per call whether the
// golden kernel, a candidate, or both run. The trainer itself does not count
// calls per op: the dispatcher (PEAT's session) owns that counter.
//
// Convention (row-major, BLAS-like):
//   C[M x N] = alpha * op(A)[M x K] * op(B)[K x N] + beta * C
//   op(A) = A        (A stored M x K, row stride lda >= K)   when !trans_a
//         = A^T      (A stored K x M, row stride lda >= M)   when  trans_a
//   op(B) likewise with (K x N, ldb >= N) or (N x K, ldb >= K).
//   C is M x N with row stride ldc >= N. When beta == 0, C is not read (it may
//   hold NaN or garbage), as in BLAS.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace peat_trainer {

class ThreadPool;

// Which pass issued the call. The values are PEAT's peat_phase_t codes
// (include/peat/session.h), so a dispatcher can pass them through unchanged.
enum class Phase : int32_t {
  Forward = 0,   // forward pass of a training step
  Backward = 1,  // backward pass
  Other = 3,     // evaluation forward (no backward follows)
};

// What the product computes for its layer.
enum class GemmRole : int32_t {
  Forward = 0,     // y = x * W^T (or the im2col form for a convolution)
  InputGrad = 1,   // dx = dy * W
  WeightGrad = 2,  // dW = dy^T * x
};

const char* phase_name(Phase phase) noexcept;
const char* role_name(GemmRole role) noexcept;

// One GEMM invocation. Pointers are borrowed for the duration of the call only:
// a dispatcher that keeps operands (a profiler) must copy them.
struct GemmCall {
  // op and layer view NUL-terminated strings owned by the model for its lifetime,
  // so op.data() may be handed to a C API as a string.
  std::string_view op;     // unique op name, stable for the run: "conv1/fwd_gemm", "fc1/wgrad_gemm"
  std::string_view layer;  // layer (module) path: "conv1", "head"
  uint32_t op_index = 0;   // index of `op` in Model::op_names(): lets a dispatcher map to its own ids without hashing
  Phase phase = Phase::Forward;
  GemmRole role = GemmRole::Forward;
  bool training = true;    // false for evaluation forwards (then phase == Phase::Other)
  int64_t step = 0;        // optimizer step the call belongs to (training), or the last step taken (evaluation)
  int64_t M = 0, N = 0, K = 0;
  bool trans_a = false, trans_b = false;
  float alpha = 1.0f, beta = 0.0f;
  const float* A = nullptr;
  int64_t lda = 0;
  const float* B = nullptr;
  int64_t ldb = 0;
  float* C = nullptr;
  int64_t ldc = 0;
};

// Throws std::invalid_argument naming the op and the field when a call is not
// well formed (negative dimension, null operand, leading dimension too small).
void check_gemm_call(const GemmCall& call);

// The plain C GEMM signature the candidate kernels export (examples/candidates):
// row-major float, same convention as GemmCall, trans flags 0/1.
using CGemmFn = void (*)(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                         int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

// Receives every GEMM of a model. Implementations must compute C as described
// above (or deliberately not: that is what a candidate is). Called from the
// training thread only; one call at a time per model.
class GemmDispatcher {
 public:
  virtual ~GemmDispatcher() = default;
  virtual void gemm(const GemmCall& call) = 0;
};

// The golden kernel: Eigen's GEMM, rows of C split over `threads` workers when
// the product is large enough. Deterministic for a given thread count (each
// row block is reduced by one thread in a fixed order). Splitting rows does not
// change any element's reduction order as long as Eigen blocks K the same way
// for every row block, which holds for the trainer's shapes (a 1- and a
// 2-thread run give the same bits); Eigen does not promise it in general.
// Calls are checked with check_gemm_call first.
class GoldenGemm final : public GemmDispatcher {
 public:
  explicit GoldenGemm(int threads = 1);
  ~GoldenGemm() override;
  void gemm(const GemmCall& call) override;
  int threads() const noexcept { return threads_; }

 private:
  int threads_;
  std::unique_ptr<ThreadPool> pool_;
};

// Runs `call` with a plain C GEMM function (a candidate kernel).
void run_c_gemm(CGemmFn fn, const GemmCall& call);

// Runs a C GEMM for the ops `select` accepts and forwards the rest to `fallback`
// (not owned, must outlive this). A stand-in for PEAT's runtime injector until
// it is attached: it counts how many calls went to the candidate.
class CandidateDispatcher final : public GemmDispatcher {
 public:
  CandidateDispatcher(CGemmFn candidate, std::function<bool(const GemmCall&)> select, GemmDispatcher* fallback);
  void gemm(const GemmCall& call) override;
  int64_t candidate_calls() const noexcept { return candidate_calls_; }
  int64_t fallback_calls() const noexcept { return fallback_calls_; }

 private:
  CGemmFn candidate_;
  std::function<bool(const GemmCall&)> select_;
  GemmDispatcher* fallback_;
  int64_t candidate_calls_ = 0, fallback_calls_ = 0;
};

// Loads "path/libx.so:symbol" with dlopen/dlsym (the library stays loaded for
// the process). Throws std::runtime_error naming the spec on failure.
CGemmFn load_c_gemm(const std::string& spec);

// A fixed pool of worker threads for data-parallel loops (deterministic chunking).
class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;
  int size() const noexcept { return static_cast<int>(workers_.size()) + 1; }
  // Calls fn(i) once for each i in [0, n) on the workers and the calling thread;
  // returns when all are done. Which thread runs which i varies, so fn(i) must
  // depend on i only (then results do not depend on scheduling).
  void run(int n, const std::function<void(int)>& fn);

 private:
  struct State;
  std::unique_ptr<State> state_;
  std::vector<std::thread> workers_;
};

}  // namespace peat_trainer
