// Profiler: the record queue, encoding on workers or waiting threads, and the
// writer thread that appends records in call order.
#include "lib/profiler/job.hpp"

#include "lib/session/session.hpp"
#include "lib/trace/writer.hpp"

#include <chrono>

namespace peat::impl::profiler {

namespace {
std::mutex g_handoff_mutex;  // see Profiler::submit
// Records up to this many queue bytes (scalars, step markers, ops with small
// tensors) are encoded on the calling thread: that takes less than handing
// them to a worker and waking it.
constexpr uint64_t kInlineBytes = 4096;
// Inline records do not wake the writer one by one (a wake-up per scalar costs
// the training thread its time slice on a busy machine): the writer takes them
// with the next record encoded on a worker, at flush/close, when this many are
// waiting, or at the latest after kLazyWrite.
constexpr uint64_t kInlineWakeCount = 64;
constexpr auto kLazyWrite = std::chrono::milliseconds(100);
}  // namespace

bool Profiler::submit(std::unique_ptr<Job> job) {
  // A record with content-addressed tensors is settled under the lock first.
  const bool inline_encode = job->tickets.empty() && job->bytes <= kInlineBytes && job->contents.empty();
  if (inline_encode) encode_now(*job);  // before the lock: the queue only sees a finished job
  std::unique_lock lock(mutex_);
  for (;;) {
    if (closing_ || closed_) fail(PEAT_STATUS_BAD_STATE, "the profiler is closed");
    if (failed_) {
      ++dropped_error_;
      fail(error_status_, "recording stopped after an earlier error: {}", error_message_);
    }
    if (budget_ != 0 && file_bytes_ + queue_bytes_ + job->bytes > budget_) {
      ++dropped_budget_;
      return false;
    }
    if (queue_.empty() || queue_bytes_ + job->bytes <= queue_capacity_) break;
    if (policy_ == PEAT_QUEUE_DROP) {
      // Logged at the 1st, 2nd, 4th, 8th... drop: visible without flooding the log.
      const uint64_t n = ++dropped_queue_full_;
      if ((n & (n - 1)) == 0) {
        lock.unlock();
        session_.log(PEAT_LOG_WARNING,
                     fmt::format("profiler: the queue is full ({} bytes, policy DROP): {} record(s) dropped so far; "
                                 "raise queue_bytes or use PEAT_QUEUE_BLOCK to keep them",
                                 queue_capacity_, n));
      }
      return false;
    }
    ready_cv_.notify_all();  // the writer makes room: wake it even for inline records
    if (!claim_and_encode(lock, false)) space_cv_.wait(lock);  // waiting anyway: compress a queued record
  }
  job->seq = next_seq_;
  if (!job->contents.empty()) {
    try {
      settle_contents(*job);
    } catch (...) {  // (allocation) the number is not used: the index must not name it
      std::lock_guard content_lock(content_mutex_);
      contents_.forget(job->seq);
      bases_.forget(job->seq);
      throw;
    }
  }
  ++next_seq_;
  std::shared_ptr<Job> shared(std::move(job));
  Job* raw = shared.get();
  queue_bytes_ += raw->bytes;
  queue_.push_back(shared);
  if (inline_encode) {
    raw->claimed.store(true, std::memory_order_relaxed);
    raw->done = true;
    if (++inline_waiting_ >= kInlineWakeCount) {
      inline_waiting_ = 0;
      ready_cv_.notify_all();
    }
    return true;
  }
  pending_tasks_.fetch_add(1, std::memory_order_relaxed);
  lock.unlock();
  {
    // Held while the task is built so that the task (which takes it before
    // reading its captures) is ordered after the build in a way race detectors
    // see: oneTBB orders them too, but it is not instrumented.
    std::lock_guard handoff(g_handoff_mutex);
    arena_.enqueue([this, shared] {
      { std::lock_guard wait_for_submitter(g_handoff_mutex); }
      if (!shared->claimed.exchange(true, std::memory_order_acq_rel)) {
        encode(shared.get());
      } else {
        pending_tasks_.fetch_sub(1, std::memory_order_release);  // encoded by a waiting thread; last touch of *this
      }
    });
  }
  return true;
}

// Encodes a job's record (its staging done); failures mark the job, which the
// writer then drops and counts.
void Profiler::encode_now(Job& job) noexcept {
  try {
    if (!job.tickets.empty()) job.wait_tickets();
    // Each tensor copy is encoded within its own buffer, which the writer
    // hands back to the pool once written.
    job.encoded = trace::encode_record(std::move(job.data), codec_, zstd_level_);
    job.data = trace::StepData{};  // release the raw tensor copies early
  } catch (const std::exception& e) {
    job.ok = false;
    try {
      job.error = e.what();
    } catch (...) {
    }
  }
}

void Profiler::encode(Job* job) noexcept {
  encode_now(*job);
  {
    std::lock_guard lock(mutex_);
    job->done = true;
    ready_cv_.notify_all();
  }
  pending_tasks_.fetch_sub(1, std::memory_order_release);  // last touch of *this
}

bool Profiler::claim_and_encode(std::unique_lock<std::mutex>& lock, bool front_only) {
  for (const std::shared_ptr<Job>& queued : queue_) {
    if (queued->done || queued->claimed.load(std::memory_order_relaxed)) {
      if (front_only) return false;
      continue;
    }
    if (queued->claimed.exchange(true, std::memory_order_acq_rel)) continue;
    std::shared_ptr<Job> job = queued;  // the writer may pop it once it is done
    lock.unlock();
    encode_now(*job);
    lock.lock();
    job->done = true;
    ready_cv_.notify_all();
    return true;
  }
  return false;
}

void Profiler::record_failure(peat_status_t status, const std::string& message) {
  failed_ = true;
  stopped_.store(true, std::memory_order_release);
  error_status_ = status;
  error_message_ = message;
  try {
    session_.log(PEAT_LOG_ERROR, "profiler: recording stopped: " + message);
  } catch (...) {
  }
}

void Profiler::writer_loop() noexcept {
  for (;;) {
    std::shared_ptr<Job> job;
    bool failed = false;
    {
      std::unique_lock lock(mutex_);
      const auto ready = [&] { return (!queue_.empty() && queue_.front()->done) || (closing_ && queue_.empty()); };
      // Timed: inline records wait for a wake-up at most kLazyWrite (see
      // submit). While the next record is not encoded yet and no worker has
      // started it, the writer encodes it itself: on a machine with few cores
      // oneTBB has fewer workers than there are records to compress.
      while (!ready()) {
        if (claim_and_encode(lock, false)) continue;
        ready_cv_.wait_for(lock, kLazyWrite);
      }
      inline_waiting_ = 0;
      if (queue_.empty()) return;
      job = std::move(queue_.front());
      queue_.pop_front();
      failed = failed_;
      // A reference to a record that will not be in the file cannot be
      // written: the record goes too (and is counted as dropped).
      for (const uint64_t target : job->ref_targets)
        for (const auto& [lost, until] : lost_records_)
          if (target == lost && job->ok) {
            job->ok = false;
            job->error = fmt::format("it refers to tensor bytes of record {}, which was not written", lost);
          }
    }
    bool ok = false;
    peat_status_t status = PEAT_STATUS_OK;
    std::string message;
    if (!failed && job->ok) {
      try {
        writer_->append(job->encoded, job->seq);
        ok = true;
      } catch (const Error& e) {
        status = e.status();
        message = e.what();
      } catch (const std::exception& e) {
        status = PEAT_STATUS_INTERNAL;
        message = e.what();
      }
    }
    // The frame goes now: an encode task that found the job claimed may still
    // hold the job for a while.
    const uint64_t job_raw_bytes = job->encoded.raw_bytes;
    std::vector<std::byte>().swap(job->encoded.frame);
    for (ByteBuffer& part : job->encoded.payload) pool_.give(std::move(part));
    job->encoded.payload.clear();
    std::lock_guard lock(mutex_);
    queue_bytes_ -= job->bytes;
    ++finished_seq_;
    // Records queued before this point may name this one; later ones cannot
    // once the index forgets it. Entries no queued record can name are pruned.
    std::erase_if(lost_records_, [&](const auto& l) { return l.second <= job->seq + 1; });
    if (!ok && !job->contents.empty()) {
      {
        std::lock_guard content_lock(content_mutex_);
        contents_.forget(job->seq);
        bases_.forget(job->seq);
      }
      if (next_seq_ > job->seq + 1) lost_records_.emplace_back(job->seq, next_seq_);
    }
    if (ok) {
      ++written_;
      raw_written_ += job_raw_bytes;
      file_bytes_ = writer_->bytes();
    } else {
      ++dropped_error_;
      if (!job->ok) {
        try {
          session_.log(PEAT_LOG_WARNING, "profiler: a record could not be encoded and was dropped: " + job->error);
        } catch (...) {
        }
      } else if (!failed) {
        record_failure(status, message);
      }
    }
    space_cv_.notify_all();
    done_cv_.notify_all();
  }
}

void Profiler::flush() {
  std::unique_lock lock(mutex_);
  const uint64_t target = next_seq_;
  ready_cv_.notify_all();  // inline records may be waiting for the writer
  while (finished_seq_ < target)
    if (!claim_and_encode(lock, false)) done_cv_.wait(lock);  // waiting anyway: compress a queued record
  if (failed_) fail(error_status_, "recording stopped after an earlier error: {}", error_message_);
}

void Profiler::close() {
  std::lock_guard close_lock(close_mutex_);
  {
    std::unique_lock lock(mutex_);
    if (closed_) {
      if (close_status_ != PEAT_STATUS_OK) fail(close_status_, "{}", close_message_);
      return;
    }
    closing_ = true;
    stopped_.store(true, std::memory_order_release);
    ready_cv_.notify_all();
    space_cv_.notify_all();
    while (claim_and_encode(lock, false)) {
    }  // the records still queued are compressed by this thread too
  }
  if (writer_thread_.joinable()) writer_thread_.join();
  while (pending_tasks_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
  std::lock_guard lock(mutex_);
  closed_ = true;
  if (!failed_) {
    try {
      writer_->close();
      file_bytes_ = writer_->bytes();
    } catch (const Error& e) {
      record_failure(e.status(), e.what());
    }
  } else {
    writer_->abandon();
  }
  if (failed_) {
    close_status_ = error_status_;
    close_message_ = fmt::format("recording stopped after an error: {}", error_message_);
    fail(close_status_, "{}", close_message_);
  }
}

}  // namespace peat::impl::profiler
