#include "peat_trainer/gemm.hpp"

#include <Eigen/Core>
#include <dlfcn.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stdexcept>

namespace peat_trainer {

const char* phase_name(Phase phase) noexcept {
  switch (phase) {
    case Phase::Forward: return "fwd";
    case Phase::Backward: return "bwd";
    case Phase::Other: return "other";
  }
  return "?";
}

const char* role_name(GemmRole role) noexcept {
  switch (role) {
    case GemmRole::Forward: return "forward";
    case GemmRole::InputGrad: return "input_grad";
    case GemmRole::WeightGrad: return "weight_grad";
  }
  return "?";
}

// ---- thread pool ------------------------------------------------------------

struct ThreadPool::State {
  std::mutex mutex;
  std::condition_variable wake, done;
  const std::function<void(int)>* fn = nullptr;
  int n = 0;
  std::atomic<int> next{0};
  int busy = 0;           // workers still inside the current job
  uint64_t generation = 0;
  bool stop = false;

  void drain() {
    for (int i = next.fetch_add(1); i < n; i = next.fetch_add(1)) (*fn)(i);
  }
};

ThreadPool::ThreadPool(int threads) : state_(std::make_unique<State>()) {
  for (int t = 1; t < threads; ++t) {
    workers_.emplace_back([s = state_.get()] {
      uint64_t seen = 0;
      for (;;) {
        {
          std::unique_lock lock(s->mutex);
          s->wake.wait(lock, [&] { return s->stop || s->generation != seen; });
          if (s->stop) return;
          seen = s->generation;
        }
        s->drain();
        std::lock_guard lock(s->mutex);
        if (--s->busy == 0) s->done.notify_one();
      }
    });
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(state_->mutex);
    state_->stop = true;
  }
  state_->wake.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::run(int n, const std::function<void(int)>& fn) {
  if (workers_.empty() || n <= 1) {
    for (int i = 0; i < n; ++i) fn(i);
    return;
  }
  {
    std::lock_guard lock(state_->mutex);
    state_->fn = &fn;
    state_->n = n;
    state_->next.store(0);
    state_->busy = static_cast<int>(workers_.size());
    ++state_->generation;
  }
  state_->wake.notify_all();
  state_->drain();
  std::unique_lock lock(state_->mutex);
  state_->done.wait(lock, [&] { return state_->busy == 0; });
  state_->fn = nullptr;
}

// ---- golden GEMM ------------------------------------------------------------

namespace {

using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMap = Eigen::Map<const RowMajor, 0, Eigen::OuterStride<>>;
using MutMap = Eigen::Map<RowMajor, 0, Eigen::OuterStride<>>;

// Rows [r0, r0 + rows) of C = alpha op(A) op(B) + beta C.
void eigen_gemm_rows(const GemmCall& c, int64_t r0, int64_t rows) {
  MutMap C(c.C + r0 * c.ldc, rows, c.N, Eigen::OuterStride<>(c.ldc));
  if (c.K == 0) {
    if (c.beta == 0.0f) C.setZero(); else C *= c.beta;
    return;
  }
  auto run = [&](const auto& opA, const auto& opB) {
    if (c.beta == 0.0f) {
      C.noalias() = c.alpha * opA * opB;
    } else {
      if (c.beta != 1.0f) C *= c.beta;
      C.noalias() += c.alpha * opA * opB;
    }
  };
  auto with_b = [&](const auto& opA) {
    if (c.trans_b) {
      ConstMap Bs(c.B, c.N, c.K, Eigen::OuterStride<>(c.ldb));
      run(opA, Bs.transpose());
    } else {
      ConstMap Bs(c.B, c.K, c.N, Eigen::OuterStride<>(c.ldb));
      run(opA, Bs);
    }
  };
  if (c.trans_a) {
    ConstMap As(c.A + r0, c.K, rows, Eigen::OuterStride<>(c.lda));  // columns r0.. of the stored K x M
    with_b(As.transpose());
  } else {
    ConstMap As(c.A + r0 * c.lda, rows, c.K, Eigen::OuterStride<>(c.lda));
    with_b(As);
  }
}

}  // namespace

GoldenGemm::GoldenGemm(int threads) : threads_(threads < 1 ? 1 : threads) {
  if (threads_ > 1) pool_ = std::make_unique<ThreadPool>(threads_);
}

GoldenGemm::~GoldenGemm() = default;

void check_gemm_call(const GemmCall& c) {
  auto bad = [&](const std::string& what) {
    throw std::invalid_argument("GEMM '" + std::string(c.op) + "': " + what + " (M=" + std::to_string(c.M) + " N=" + std::to_string(c.N) +
                                " K=" + std::to_string(c.K) + ")");
  };
  if (c.M < 0 || c.N < 0 || c.K < 0) bad("negative dimension");
  if (c.M == 0 || c.N == 0) return;
  if (c.C == nullptr) bad("C is null");
  if (c.ldc < c.N) bad("ldc " + std::to_string(c.ldc) + " < N");
  if (c.K == 0) return;
  if (c.A == nullptr || c.B == nullptr) bad("A or B is null");
  if (c.lda < (c.trans_a ? c.M : c.K)) bad("lda " + std::to_string(c.lda) + " too small for " + (c.trans_a ? "A^T" : "A"));
  if (c.ldb < (c.trans_b ? c.K : c.N)) bad("ldb " + std::to_string(c.ldb) + " too small for " + (c.trans_b ? "B^T" : "B"));
}

void GoldenGemm::gemm(const GemmCall& c) {
  check_gemm_call(c);
  if (c.M <= 0 || c.N <= 0) return;
  const int64_t work = c.M * c.N * (c.K > 0 ? c.K : 1);
  // Row blocks of at least 16 rows, and only for products worth a hand-off.
  int64_t blocks = threads_;
  if (work < (int64_t{1} << 18) || c.M < 32) blocks = 1;
  if (blocks > c.M / 16) blocks = c.M / 16 > 0 ? c.M / 16 : 1;
  if (blocks == 1) {
    eigen_gemm_rows(c, 0, c.M);
    return;
  }
  const int64_t per = (c.M + blocks - 1) / blocks;
  pool_->run(static_cast<int>(blocks), [&](int b) {
    const int64_t r0 = b * per;
    const int64_t rows = std::min(per, c.M - r0);
    if (rows > 0) eigen_gemm_rows(c, r0, rows);
  });
}

// ---- candidates ----------------------------------------------------------------

void run_c_gemm(CGemmFn fn, const GemmCall& c) {
  fn(c.trans_a ? 1 : 0, c.trans_b ? 1 : 0, c.M, c.N, c.K, c.alpha, c.A, c.lda, c.B, c.ldb, c.beta, c.C, c.ldc);
}

CandidateDispatcher::CandidateDispatcher(CGemmFn candidate, std::function<bool(const GemmCall&)> select,
                                         GemmDispatcher* fallback)
    : candidate_(candidate), select_(std::move(select)), fallback_(fallback) {
  if (candidate_ == nullptr || fallback_ == nullptr) throw std::invalid_argument("CandidateDispatcher: null candidate or fallback");
}

void CandidateDispatcher::gemm(const GemmCall& call) {
  if (!select_ || select_(call)) {
    ++candidate_calls_;
    run_c_gemm(candidate_, call);
  } else {
    ++fallback_calls_;
    fallback_->gemm(call);
  }
}

CGemmFn load_c_gemm(const std::string& spec) {
  const auto colon = spec.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == spec.size())
    throw std::runtime_error("candidate '" + spec + "': expected 'path/libx.so:symbol'");
  const std::string path = spec.substr(0, colon), symbol = spec.substr(colon + 1);
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    throw std::runtime_error("candidate '" + spec + "': cannot open " + path + ": " + (err ? err : "unknown error"));
  }
  dlerror();
  void* sym = dlsym(handle, symbol.c_str());
  if (sym == nullptr) throw std::runtime_error("candidate '" + spec + "': no symbol '" + symbol + "' in " + path);
  return reinterpret_cast<CGemmFn>(sym);
}

}  // namespace peat_trainer
