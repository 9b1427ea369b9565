// peat::impl::profiler::Profiler — asynchronous recording of a training run into a trace file
// (peat/profiler.h). Record calls copy or stage tensors into a bounded queue;
// oneTBB tasks encode records; one writer thread appends them in call order.
#pragma once

#include <peat/profiler.h>

#include "lib/profiler/buffer_pool.hpp"
#include "lib/profiler/delta_bases.hpp"
#include "lib/trace/content_index.hpp"
#include "lib/trace/record.hpp"

#include <tbb/task_arena.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

namespace peat::impl::session {
class Session;
}
namespace peat::impl::trace {
class Writer;
}

namespace peat::impl::profiler {

using session::Session;

struct SampleRule {
  bool record = true;
  std::string op_glob;
  uint64_t every_n = 1;
  uint64_t first_k = 0;
  int64_t step_begin = 0;
  int64_t step_end = INT64_MAX;
  peat_sample_count_t count_by = PEAT_SAMPLE_BY_SITE;
};

// A borrowed tensor handed to a record call.
struct TensorArg {
  const DLTensor* tensor = nullptr;
  const char* name = nullptr;
};

// Borrowed tensor list of a record call (no allocation on the hot path).
struct TensorList {
  const DLTensor* const* tensors = nullptr;
  const char* const* names = nullptr;  // may be NULL
  uint64_t n = 0;
  TensorArg operator[](uint64_t i) const { return TensorArg{tensors[i], names ? names[i] : nullptr}; }
};

struct OpArgs {
  uint32_t op = 0;
  uint64_t call_index = PEAT_CALL_NEXT;
  int64_t step = -1;
  peat_phase_t phase = -1;
  bool force = false;
  const char* module_path = nullptr;
  const peat_attr_t* attrs = nullptr;
  uint64_t n_attrs = 0;
  TensorList inputs;
  TensorList outputs;
  void* stream = nullptr;
};

class Profiler {
 public:
  Profiler(session::Session& session, const peat_profiler_options_t& options);  // throws peat::impl::Error
  ~Profiler();
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  void add_rule(SampleRule rule);
  // Whether the call would be recorded; step -1 is the session's step.
  bool should_record(uint32_t op, uint64_t call, int64_t step);

  // Each returns true when the record was queued, false when it was not
  // selected or was dropped; throws BAD_STATE after close, IO_ERROR after a
  // write error, INVALID_ARGUMENT / UNSUPPORTED for bad input.
  bool record_op(const OpArgs& args, uint64_t* out_call);
  bool record_checkpoint(const char* name, int64_t step, const TensorList& tensors, void* stream);
  bool record_scalar(const char* name, int64_t step, double value);
  bool mark_step(int64_t step);

  void flush();
  void close();
  peat_profiler_stats_t stats() const;
  session::Session& session() const noexcept { return session_; }

 private:
  struct Job;

  void check_usable() const;  // throws BAD_STATE / IO_ERROR
  bool selects(int32_t rule, uint32_t op, uint64_t call, int64_t step);
  uint64_t site_ordinal(uint32_t op, uint64_t call, int64_t step);
  uint64_t list_bytes(const TensorList& list, const char* what) const;
  bool over_budget(uint64_t bytes);
  trace::TensorData capture(const TensorArg& arg, const std::string& what, void* stream, Job& job,
                            peat_trace_slot_t slot, uint32_t index);
  // Content addressing (format 1.2): the stored tensor holding `key`, in this
  // job or in the index; nullopt when none.
  std::optional<trace::TensorRef> find_content(Job& job, const trace::ContentKey& key);
  // XOR deltas (format 1.3): gives the stored tensor `t` (the job's last
  // content) the base kept for its position, or makes it the next base.
  void choose_base(Job& job, trace::TensorData& t, peat_trace_slot_t slot, uint32_t index);
  // Settles the job's references once its sequence number is known (mutex_ held).
  void settle_contents(Job& job);
  bool submit(std::unique_ptr<Job> job);
  void encode_now(Job& job) noexcept;
  void encode(Job* job) noexcept;
  // With mutex_ held (`lock`): encodes a queued job no thread has started,
  // on the calling thread (the writer waiting for the next record, a caller
  // waiting for room), so that compression uses the threads that would wait.
  // False when every queued job is started or done.
  bool claim_and_encode(std::unique_lock<std::mutex>& lock, bool front_only);
  void writer_loop() noexcept;
  void record_failure(peat_status_t status, const std::string& message);

  session::Session& session_;
  peat_trace_codec_t codec_;
  int zstd_level_;
  uint64_t queue_capacity_;
  peat_queue_policy_t policy_;
  bool default_record_;
  uint64_t budget_;

  // sampling
  mutable std::shared_mutex rules_mutex_;
  std::vector<SampleRule> rules_;
  std::vector<int32_t> rule_cache_;  // per op id: rule index, -1 none, -2 not yet decided
  // Per-site counting (PEAT_SAMPLE_BY_SITE): per op id, the step its calls
  // were last seen at, the first call index of that step, and per site (the
  // k-th call in a step) how many steps reached it and the last one that did.
  struct SiteCount {
    int64_t last_step = INT64_MIN;
    uint64_t steps = 0;
  };
  struct OpSites {
    int64_t step = INT64_MIN;
    uint64_t first_call = 0;
    std::vector<SiteCount> sites;
  };
  std::mutex sites_mutex_;
  std::vector<OpSites> sites_;

  // queue
  mutable std::mutex mutex_;
  std::condition_variable space_cv_;
  std::condition_variable ready_cv_;
  std::condition_variable done_cv_;
  // Shared with the encode task: a job another thread encoded (see
  // claim_and_encode) may be written and popped before its task runs.
  std::deque<std::shared_ptr<Job>> queue_;
  uint64_t next_seq_ = 0;
  uint64_t finished_seq_ = 0;  // jobs taken off the queue (written or discarded)
  uint64_t queue_bytes_ = 0;
  uint64_t inline_waiting_ = 0;  // inline records queued since the writer last woke
  bool closing_ = false;
  bool closed_ = false;
  bool failed_ = false;
  std::atomic<bool> stopped_{false};  // closing_ || closed_ || failed_, read without the lock
  peat_status_t error_status_ = PEAT_STATUS_OK;
  std::string error_message_;
  peat_status_t close_status_ = PEAT_STATUS_OK;
  std::string close_message_;

  // counters (under mutex_ unless atomic)
  std::atomic<uint64_t> not_sampled_{0};
  uint64_t written_ = 0;
  uint64_t dropped_queue_full_ = 0;
  uint64_t dropped_budget_ = 0;
  uint64_t dropped_error_ = 0;
  uint64_t raw_written_ = 0;
  uint64_t file_bytes_ = 0;

  // Content-addressed payloads: the index of stored contents, and the records
  // that will not be in the file while queued records may still name them
  // (their number and the first number submitted after they were forgotten).
  std::mutex content_mutex_;
  trace::ContentIndex contents_;
  // XOR-delta bases (format 1.3), under content_mutex_: a quarter of
  // queue_bytes, none with the RAW codec or content addressing off.
  DeltaBases bases_;
  std::vector<std::pair<uint64_t, uint64_t>> lost_records_;  // under mutex_
  // Tensor copies and payloads for reuse: a quarter of queue_bytes, at most
  // kPoolMaxBytes (buffer_pool.hpp says why).
  static constexpr uint64_t kPoolMaxBytes = uint64_t{64} << 20;
  BufferPool pool_;

  std::unique_ptr<trace::Writer> writer_;
  std::mutex close_mutex_;
  tbb::task_arena arena_;
  std::atomic<int64_t> pending_tasks_{0};
  std::thread writer_thread_;
};

}  // namespace peat::impl::profiler

struct peat_profiler : peat::impl::profiler::Profiler {
  using peat::impl::profiler::Profiler::Profiler;
};
