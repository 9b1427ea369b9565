#include "lib/session/session.hpp"

#include "lib/backend/backend.hpp"
#include "lib/core/arguments.hpp"
#include "lib/core/error.hpp"
#include "lib/core/versioned_struct.hpp"

namespace peat::impl::session {

namespace {
constexpr uint32_t kMaxOpsLimit = 1u << 20;
}

peat_session_options_t default_session_options() noexcept {
  auto o = zeroed_struct<peat_session_options_t>();
  o.world_size = 1;
  o.seed = 0x5EA7;
  o.max_ops = 4096;
  o.max_log_entries = 10000;
  return o;
}

Session::Session(const peat_session_options_t& options)
    : seed_(options.seed),
      rank_(options.rank),
      world_size_(options.world_size),
      run_name_(options.run_name ? options.run_name : ""),
      backend_(nullptr),
      max_ops_(options.max_ops),
      max_log_entries_(options.max_log_entries) {
  if (rank_ < 0) fail(PEAT_STATUS_INVALID_ARGUMENT, "options.rank is negative ({})", rank_);
  if (world_size_ <= rank_)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "options.world_size ({}) must be greater than options.rank ({})",
         world_size_, rank_);
  if (max_ops_ == 0 || max_ops_ > kMaxOpsLimit)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "options.max_ops is {}; it must be in [1, {}]", max_ops_, kMaxOpsLimit);
  if (max_log_entries_ == 0) fail(PEAT_STATUS_INVALID_ARGUMENT, "options.max_log_entries must be > 0");
  const std::string backend_name = (options.backend && *options.backend) ? options.backend : "cpu";
  backend_ = &backend::Registry::instance().get(backend_name);
  counters_ = std::make_unique<std::atomic<uint64_t>[]>(max_ops_);
  for (uint32_t i = 0; i < max_ops_; ++i) counters_[i].store(0, std::memory_order_relaxed);
}

uint32_t Session::intern_op(std::string_view name) {
  if (name.empty()) fail(PEAT_STATUS_INVALID_ARGUMENT, "op name is empty");
  {
    std::shared_lock lock(ops_mutex_);
    if (auto it = op_ids_.find(std::string(name)); it != op_ids_.end()) return it->second;
  }
  std::unique_lock lock(ops_mutex_);
  if (auto it = op_ids_.find(std::string(name)); it != op_ids_.end()) return it->second;
  const uint32_t id = static_cast<uint32_t>(op_names_.size());
  if (id >= max_ops_)
    fail(PEAT_STATUS_OUT_OF_MEMORY, "op table is full ({} ops, options.max_ops); cannot add '{}'", max_ops_, name);
  op_names_.emplace_back(name);
  op_ids_.emplace(op_names_.back(), id);
  op_count_.store(id + 1, std::memory_order_release);
  return id;
}

const std::string& Session::op_name(uint32_t op) const {
  check_op(op);
  std::shared_lock lock(ops_mutex_);
  return op_names_[op];
}

void Session::check_op(uint32_t op) const {
  if (op >= op_count())
    fail(PEAT_STATUS_NOT_FOUND, "op id {} is not interned (the session has {} ops)", op, op_count());
}

void Session::set_step(int64_t step) {
  if (step < 0) fail(PEAT_STATUS_INVALID_ARGUMENT, "step {} is negative", step);
  step_.store(step, std::memory_order_relaxed);
}

void Session::set_phase(peat_phase_t phase) {
  if (phase < PEAT_PHASE_FORWARD || phase > PEAT_PHASE_OTHER)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "phase {} is not a peat_phase_code value (0..3)", phase);
  phase_.store(phase, std::memory_order_relaxed);
}

void Session::log(peat_log_level_t level, std::string message) {
  if (level < PEAT_LOG_DEBUG || level > PEAT_LOG_ERROR)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "level {} is not a peat_log_level_code value (0..3)", level);
  std::lock_guard lock(log_mutex_);
  if (log_.size() == max_log_entries_) {
    log_.pop_front();
    ++log_dropped_;
  }
  log_.push_back(LogEntry{level, std::move(message)});
}

uint64_t Session::log_count() const {
  std::lock_guard lock(log_mutex_);
  return log_.size();
}

uint64_t Session::log_dropped() const {
  std::lock_guard lock(log_mutex_);
  return log_dropped_;
}

LogEntry Session::log_entry(uint64_t index) const {
  std::lock_guard lock(log_mutex_);
  if (index >= log_.size())
    fail(PEAT_STATUS_NOT_FOUND, "log entry {} does not exist (the log holds {})", index, log_.size());
  return log_[index];
}

void Session::log_entry_to(uint64_t index, peat_log_level_t* level, char* buffer, std::size_t capacity,
                           std::size_t* needed) const {
  require_buffer(buffer, capacity, "buffer");
  const LogEntry entry = log_entry(index);
  const std::size_t size = entry.message.size() + 1;
  set_optional(needed, size);
  set_optional(level, entry.level);
  copy_c_string(entry.message, buffer, capacity);
  if (capacity < size)
    fail(PEAT_STATUS_BUFFER_TOO_SMALL, "log entry {} needs {} bytes, buffer has {}", index, size, capacity);
}

}  // namespace peat::impl::session
