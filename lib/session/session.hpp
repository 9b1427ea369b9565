// peat::impl::session::Session — the run context behind peat_session_t (see peat/session.h).
// Hot-path members (next_call, step, phase) are lock-free; interning and the log
// take a mutex.
#pragma once

#include <peat/session.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace peat::impl::backend {
class Backend;
}

namespace peat::impl::session {

using backend::Backend;

// The defaults of peat_session_options_init.
peat_session_options_t default_session_options() noexcept;

struct LogEntry {
  peat_log_level_t level;
  std::string message;
};

class Session {
 public:
  explicit Session(const peat_session_options_t& options);  // throws peat::impl::Error
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  uint32_t intern_op(std::string_view name);
  const std::string& op_name(uint32_t op) const;  // throws NOT_FOUND
  uint32_t op_count() const noexcept { return op_count_.load(std::memory_order_acquire); }

  // Claims the next call index of `op`. `op` must be a valid id (checked).
  uint64_t next_call(uint32_t op) {
    check_op(op);
    return counters_[op].fetch_add(1, std::memory_order_relaxed);
  }
  uint64_t call_count(uint32_t op) const {
    check_op(op);
    return counters_[op].load(std::memory_order_relaxed);
  }
  void check_op(uint32_t op) const;

  void set_step(int64_t step);  // throws INVALID_ARGUMENT for a negative step
  int64_t step() const noexcept { return step_.load(std::memory_order_relaxed); }
  void set_phase(peat_phase_t phase);  // throws INVALID_ARGUMENT for no peat_phase_code value
  peat_phase_t phase() const noexcept { return phase_.load(std::memory_order_relaxed); }

  uint64_t seed() const noexcept { return seed_; }
  int32_t rank() const noexcept { return rank_; }
  int32_t world_size() const noexcept { return world_size_; }
  const std::string& run_name() const noexcept { return run_name_; }
  backend::Backend& backend() const noexcept { return *backend_; }

  void log(peat_log_level_t level, std::string message);  // throws INVALID_ARGUMENT for a bad level
  uint64_t log_count() const;
  uint64_t log_dropped() const;
  LogEntry log_entry(uint64_t index) const;  // throws NOT_FOUND
  // peat_session_log_entry: entry `index`'s level, and its message in the
  // caller's buffer (NUL-terminated, cut to fit; BUFFER_TOO_SMALL when cut).
  // `needed` receives the message's size with the NUL; `level` and `needed`
  // may be NULL, `buffer` only with capacity 0.
  void log_entry_to(uint64_t index, peat_log_level_t* level, char* buffer, std::size_t capacity,
                    std::size_t* needed) const;

 private:
  uint64_t seed_;
  int32_t rank_;
  int32_t world_size_;
  std::string run_name_;
  backend::Backend* backend_;

  uint32_t max_ops_;
  std::unique_ptr<std::atomic<uint64_t>[]> counters_;
  std::atomic<uint32_t> op_count_{0};
  mutable std::shared_mutex ops_mutex_;
  std::unordered_map<std::string, uint32_t> op_ids_;
  std::deque<std::string> op_names_;  // deque: references stay valid as it grows

  std::atomic<int64_t> step_{0};
  std::atomic<peat_phase_t> phase_{PEAT_PHASE_FORWARD};

  mutable std::mutex log_mutex_;
  std::deque<LogEntry> log_;
  uint32_t max_log_entries_;
  uint64_t log_dropped_ = 0;
};

}  // namespace peat::impl::session

// The opaque C handle is the C++ object itself.
struct peat_session : peat::impl::session::Session {
  using peat::impl::session::Session::Session;
};
