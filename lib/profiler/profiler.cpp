#include "lib/profiler/profiler.hpp"

#include "lib/backend/backend.hpp"
#include "lib/core/error.hpp"
#include "lib/core/strided_copy.hpp"
#include "lib/core/tensor_view.hpp"
#include "lib/core/version.hpp"
#include "lib/session/session.hpp"
#include "lib/trace/writer.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

#include <fnmatch.h>

namespace peat::impl::profiler {

namespace {
constexpr int32_t kUndecided = -2;
std::mutex g_handoff_mutex;  // see Profiler::submit

void check_list(const TensorList& list, const char* what) {
  if (list.n > 0 && list.tensors == nullptr) fail(PEAT_STATUS_INVALID_ARGUMENT, "{} is NULL but its count is {}", what, list.n);
  if (list.n > (uint64_t{1} << 20)) fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: {} tensors is too many", what, list.n);
}
constexpr uint64_t kRecordOverhead = 256;  // queue-byte estimate of a record's metadata
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
// Host tensors from this size on take part in content addressing: below it a
// reference saves less than its metadata and the hash costs more than it saves.
constexpr uint64_t kContentMinBytes = 4096;

// The tensor `index` of list `slot` of a record.
trace::TensorData& slot_tensor(trace::RecordData& data, peat_trace_slot_t slot, uint32_t index) {
  if (auto* cp = std::get_if<trace::CheckpointData>(&data)) return cp->tensors[index];
  auto& op = std::get<trace::OpData>(data);
  return slot == PEAT_TRACE_SLOT_INPUT ? op.inputs[index] : op.outputs[index];
}
}  // namespace

struct Profiler::Job {
  // A tensor of the record taking part in content addressing.
  struct Content {
    enum Kind { kStored, kRefOther, kRefSelf };
    trace::ContentKey key;
    peat_trace_slot_t slot = PEAT_TRACE_SLOT_INPUT;
    uint32_t index = 0;
    Kind kind = kStored;
    TensorArg source;  // borrowed while the record call runs (a copy when a reference falls through)
  };
  uint64_t seq = 0;
  std::vector<Content> contents;
  std::vector<uint64_t> ref_targets;  // numbers of the other records its references name
  trace::RecordData data;
  uint64_t bytes = kRecordOverhead;
  const peat_backend_api_t* api = nullptr;  // for staging tickets
  std::vector<void*> tickets;
  trace::EncodedRecord encoded;
  std::atomic<bool> claimed{false};  // a thread has started encoding it
  bool done = false;
  bool ok = true;
  std::string error;

  void wait_tickets() {
    std::string first_error;
    for (void* t : tickets) {
      if (api->stage_wait(t) != PEAT_STATUS_OK && first_error.empty()) {
        const char* m = api->last_error ? api->last_error() : nullptr;
        first_error = m ? m : "stage_wait failed";
      }
    }
    tickets.clear();
    if (!first_error.empty()) fail(PEAT_STATUS_IO_ERROR, "device-to-host staging failed: {}", first_error);
  }
  ~Job() {
    try {
      if (!tickets.empty()) wait_tickets();
    } catch (...) {
    }
  }
};

Profiler::Profiler(session::Session& session, const peat_profiler_options_t& o)
    : session_(session),
      codec_(o.codec),
      zstd_level_(o.zstd_level),
      queue_capacity_(o.queue_bytes),
      policy_(o.full_queue_policy),
      default_record_(o.default_record != 0),
      budget_(o.byte_budget),
      contents_(static_cast<std::size_t>(std::min<uint64_t>(o.content_index_entries, uint64_t{1} << 24))) {
  if (o.path == nullptr || *o.path == '\0') fail(PEAT_STATUS_INVALID_ARGUMENT, "options.path is NULL or empty");
  if (codec_ != PEAT_TRACE_CODEC_RAW && codec_ != PEAT_TRACE_CODEC_SHUFFLE_ZSTD)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "options.codec {} is not a peat_trace_codec_code value (0..1)", codec_);
  if (zstd_level_ < 1 || zstd_level_ > 19)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "options.zstd_level {} is outside [1, 19]", zstd_level_);
  if (queue_capacity_ < (uint64_t{1} << 20))
    fail(PEAT_STATUS_INVALID_ARGUMENT, "options.queue_bytes {} is below 1 MiB", queue_capacity_);
  if (policy_ != PEAT_QUEUE_BLOCK && policy_ != PEAT_QUEUE_DROP)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "options.full_queue_policy {} is not a peat_queue_policy_code value (0..1)",
         policy_);
  if (o.default_record != 0 && o.default_record != 1)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "options.default_record is {}; it must be 0 or 1", o.default_record);
  if (o.n_tags > 0 && o.tags == nullptr)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "options.tags is NULL but options.n_tags is {}", o.n_tags);

  trace::RunInfoData info;
  info.framework = o.framework ? o.framework : "";
  try {
    const peat_backend_device_info_t dev = session_.backend().device_info(0);
    info.device = dev.name;
    info.vendor = dev.vendor;
  } catch (const Error&) {
    // no device 0: leave the fields empty unless the caller names them
  }
  if (o.device) info.device = o.device;
  if (o.vendor) info.vendor = o.vendor;
  info.library_version = version_string();
  info.run_name = session_.run_name();
  info.rank = session_.rank();
  info.world_size = session_.world_size();
  info.created_unix_ns = trace::now_unix_ns();
  for (uint32_t i = 0; i < o.n_tags; ++i) {
    if (o.tags[i].key == nullptr || *o.tags[i].key == '\0')
      fail(PEAT_STATUS_INVALID_ARGUMENT, "options.tags[{}].key is NULL or empty", i);
    info.tags.emplace_back(o.tags[i].key, o.tags[i].value ? o.tags[i].value : "");
  }
  writer_ = std::make_unique<trace::Writer>(o.path, info);
  file_bytes_ = writer_->bytes();
  writer_thread_ = std::thread([this] { writer_loop(); });
}

Profiler::~Profiler() {
  try {
    close();
  } catch (...) {
  }
  if (writer_thread_.joinable()) writer_thread_.join();
}

// ------------------------------------------------------------ sampling --

void Profiler::add_rule(SampleRule rule) {
  std::unique_lock lock(rules_mutex_);
  rules_.push_back(std::move(rule));
  std::fill(rule_cache_.begin(), rule_cache_.end(), kUndecided);
}

bool Profiler::should_record(uint32_t op, uint64_t call, int64_t step) {
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

// ----------------------------------------------------------- recording --

void Profiler::check_usable() const {
  if (!stopped_.load(std::memory_order_acquire)) return;  // the hot path: no lock
  std::lock_guard lock(mutex_);
  if (closing_ || closed_) fail(PEAT_STATUS_BAD_STATE, "the profiler is closed");
  if (failed_) fail(error_status_, "recording stopped after an earlier error: {}", error_message_);
}

std::optional<trace::TensorRef> Profiler::find_content(Job& job, const trace::ContentKey& key) {
  for (const Job::Content& c : job.contents)  // an earlier tensor of the same record
    if (c.kind == Job::Content::kStored && c.key == key) return trace::TensorRef{0, c.slot, c.index};
  std::lock_guard lock(content_mutex_);
  return contents_.find(key);
}

trace::TensorData Profiler::capture(const TensorArg& arg, const std::string& what, void* stream, Job& job,
                                    peat_trace_slot_t slot, uint32_t index) {
  const TensorView v = make_view(arg.tensor, what);
  trace::TensorData t;
  if (arg.name) t.name = arg.name;
  t.dtype = v.dtype;
  t.shape.assign(v.shape.begin(), v.shape.begin() + v.ndim);
  t.device = v.device;
  // The logical layout as the caller passed it (DLPack strides, NULL =
  // compact): playback rebuilds it, because a kernel may compute differently
  // on another layout of the same values (a BLAS picks its kernel by the
  // transpose flag). The payload itself is always compact row-major.
  if (arg.tensor->strides != nullptr && !is_row_major(v.ndim, v.shape.data(), arg.tensor->strides))
    t.strides.assign(arg.tensor->strides, arg.tensor->strides + v.ndim);
  const std::size_t es = trace::element_size(v.dtype);
  if (arg.tensor->byte_offset % es == 0) t.storage_offset = static_cast<int64_t>(arg.tensor->byte_offset / es);
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(v.numel), es, &bytes))
    fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: byte size overflows", what);
  if (bytes == 0) return t;
  const int32_t dt = v.device.device_type;
  const bool host = dt == kDLCPU || dt == kDLCUDAHost || dt == kDLROCMHost;
  const bool addressed = host && bytes >= kContentMinBytes && contents_.capacity() > 0;
  // Content addressing: a tensor whose bytes are already in the file (or
  // earlier in this record) becomes a reference; submit settles it.
  const auto as_reference = [&](const trace::ContentKey& key) {
    const std::optional<trace::TensorRef> hit = find_content(job, key);
    if (!hit) return false;
    const bool self = hit->seq == 0 && std::any_of(job.contents.begin(), job.contents.end(), [&](const Job::Content& c) {
      return c.kind == Job::Content::kStored && c.slot == hit->slot && c.index == hit->index && c.key == key;
    });
    t.ref = *hit;
    job.contents.push_back({key, slot, index, self ? Job::Content::kRefSelf : Job::Content::kRefOther, arg});
    return true;
  };
  if (host && v.contiguous) {
    if (addressed) {
      // Hashing the source first: a repeated tensor is then never copied.
      const trace::ContentKey key = trace::content_key(v.base, bytes, v.dtype);
      if (as_reference(key)) return t;
      job.contents.push_back({key, slot, index, Job::Content::kStored, arg});
    }
    // One pass on the training thread: copy into fresh storage (resize would
    // zero-fill megabytes first, then the copy writes them again).
    t.bytes.assign(v.base, v.base + bytes);
    return t;
  }
  t.bytes.resize(bytes);
  if (host) {
    gather_strided(v.base, v.ndim, v.shape.data(), v.strides.data(), v.numel, es, t.bytes.data());
    if (addressed) {
      const trace::ContentKey key = trace::content_key(t.bytes.data(), bytes, v.dtype);
      if (as_reference(key)) {
        std::vector<std::byte>().swap(t.bytes);
        return t;
      }
      job.contents.push_back({key, slot, index, Job::Content::kStored, arg});
    }
    return t;
  }
  backend::Backend& backend = session_.backend();
  if (backend.api().device_type != dt)
    fail(PEAT_STATUS_UNSUPPORTED, "{}: tensor on device type {} but the session's backend '{}' serves device type {}",
         what, dt, backend.name(), backend.api().device_type);
  if (!v.contiguous)
    fail(PEAT_STATUS_UNSUPPORTED, "{}: non-contiguous device tensors cannot be staged; pass a contiguous view", what);
  if (PEAT_BACKEND_HAS(backend, stage_to_host_async) && PEAT_BACKEND_HAS(backend, stage_wait)) {
    void* ticket = nullptr;
    job.api = &backend.api();
    backend.check(backend.api().stage_to_host_async(t.bytes.data(), v.base, v.device, bytes, stream, &ticket),
                  "stage_to_host_async");
    job.tickets.push_back(ticket);
  } else {
    backend.check(backend.api().copy(t.bytes.data(), DLDevice{kDLCPU, 0}, v.base, v.device, bytes, stream), "copy");
    backend.check(backend.api().synchronize(v.device.device_id, stream), "synchronize");
  }
  return t;
}

// Bytes the tensors of a list will take once copied (checked again by capture).
uint64_t Profiler::list_bytes(const TensorList& list, const char* what) const {
  uint64_t total = 0;
  for (uint64_t i = 0; i < list.n; ++i) {
    const TensorView v = make_view(list[i].tensor, fmt::format("{}[{}]", what, i));
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(static_cast<uint64_t>(v.numel), trace::element_size(v.dtype), &bytes) ||
        __builtin_add_overflow(total, bytes + 64, &total))
      fail(PEAT_STATUS_INVALID_ARGUMENT, "{}[{}]: byte size overflows", what, i);
  }
  return total;
}

// Whether a record of `bytes` queue bytes would be dropped for the byte
// budget; decided before its tensors are copied (submit decides again).
bool Profiler::over_budget(uint64_t bytes) {
  if (budget_ == 0) return false;
  std::lock_guard lock(mutex_);
  if (file_bytes_ + queue_bytes_ + bytes <= budget_) return false;
  ++dropped_budget_;
  return true;
}

bool Profiler::record_op(const OpArgs& a, uint64_t* out_call) {
  check_usable();
  session_.check_op(a.op);
  if (a.step < -1) fail(PEAT_STATUS_INVALID_ARGUMENT, "step {} is negative (use -1 for the session's step)", a.step);
  if (a.phase < -1 || a.phase > PEAT_PHASE_OTHER)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "phase {} is not -1 or a peat_phase_code value (0..3)", a.phase);
  if (a.n_attrs > 0 && a.attrs == nullptr)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "attrs is NULL but n_attrs is {}", a.n_attrs);
  check_list(a.inputs, "inputs");
  check_list(a.outputs, "outputs");
  const uint64_t call = a.call_index == PEAT_CALL_NEXT ? session_.next_call(a.op) : a.call_index;
  if (out_call) *out_call = call;
  const int64_t step = a.step < 0 ? session_.step() : a.step;
  if (!a.force && !should_record(a.op, call, step)) {
    not_sampled_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  // `op` is declared before `job`: on an exception, job (whose destructor waits
  // for staging still in flight) goes first, then the buffers it writes into.
  trace::OpData op;
  auto job = std::make_unique<Job>();
  op.op = session_.op_name(a.op);
  op.phase = a.phase < 0 ? session_.phase() : a.phase;
  op.module_path = a.module_path ? a.module_path : "";
  op.step = step;
  op.call_index = call;
  for (uint64_t i = 0; i < a.n_attrs; ++i) {
    const peat_attr_t& in = a.attrs[i];
    trace::AttrData at;
    if (in.key == nullptr || *in.key == '\0') fail(PEAT_STATUS_INVALID_ARGUMENT, "attrs[{}].key is NULL or empty", i);
    at.key = in.key;
    at.type = in.type;
    switch (in.type) {
      case PEAT_ATTR_INT: at.i = in.i; break;
      case PEAT_ATTR_FLOAT: at.f = in.f; break;
      case PEAT_ATTR_STRING:
        if (in.s == nullptr) fail(PEAT_STATUS_INVALID_ARGUMENT, "attrs[{}] ('{}'): string value is NULL", i, at.key);
        at.s = in.s;
        break;
      case PEAT_ATTR_INT_ARRAY:
        if (in.n_ints > 0 && in.ints == nullptr)
          fail(PEAT_STATUS_INVALID_ARGUMENT, "attrs[{}] ('{}'): ints is NULL but n_ints is {}", i, at.key, in.n_ints);
        if (in.n_ints > (uint64_t{1} << 24))
          fail(PEAT_STATUS_INVALID_ARGUMENT, "attrs[{}] ('{}'): {} ints is too many", i, at.key, in.n_ints);
        at.ints.assign(in.ints, in.ints + in.n_ints);
        break;
      default:
        fail(PEAT_STATUS_INVALID_ARGUMENT, "attrs[{}] ('{}'): type {} is not a peat_attr_type_code value (0..3)", i,
             at.key, in.type);
    }
    job->bytes += at.key.size() + at.s.size() + at.ints.size() * 8 + 32;
    op.attrs.push_back(std::move(at));
  }
  if (budget_ != 0 && over_budget(job->bytes + op.op.size() + op.module_path.size() +
                                   list_bytes(a.inputs, "inputs") + list_bytes(a.outputs, "outputs")))
    return false;
  for (uint64_t i = 0; i < a.inputs.n; ++i) {
    op.inputs.push_back(capture(a.inputs[i], fmt::format("inputs[{}]", i), a.stream, *job, PEAT_TRACE_SLOT_INPUT,
                                static_cast<uint32_t>(i)));
    job->bytes += op.inputs.back().bytes.size() + 64;
  }
  for (uint64_t i = 0; i < a.outputs.n; ++i) {
    op.outputs.push_back(capture(a.outputs[i], fmt::format("outputs[{}]", i), a.stream, *job,
                                 PEAT_TRACE_SLOT_OUTPUT, static_cast<uint32_t>(i)));
    job->bytes += op.outputs.back().bytes.size() + 64;
  }
  job->bytes += op.op.size() + op.module_path.size();
  job->data = std::move(op);
  trace::check_record(job->data);  // what a reader would refuse is refused here, before it is acknowledged
  return submit(std::move(job));
}

bool Profiler::record_checkpoint(const char* name, int64_t step, const TensorList& tensors, void* stream) {
  check_usable();
  if (step < -1) fail(PEAT_STATUS_INVALID_ARGUMENT, "step {} is negative (use -1 for the session's step)", step);
  trace::CheckpointData cp;  // before job: see record_op
  auto job = std::make_unique<Job>();
  cp.name = name ? name : "";
  cp.step = step < 0 ? session_.step() : step;
  check_list(tensors, "tensors");
  if (budget_ != 0 && over_budget(job->bytes + cp.name.size() + list_bytes(tensors, "tensors"))) return false;
  for (uint64_t i = 0; i < tensors.n; ++i) {
    cp.tensors.push_back(capture(tensors[i], fmt::format("tensors[{}]", i), stream, *job,
                                 PEAT_TRACE_SLOT_CHECKPOINT, static_cast<uint32_t>(i)));
    job->bytes += cp.tensors.back().bytes.size() + 64 + cp.tensors.back().name.size();
  }
  job->data = std::move(cp);
  trace::check_record(job->data);
  return submit(std::move(job));
}

bool Profiler::record_scalar(const char* name, int64_t step, double value) {
  check_usable();
  if (name == nullptr || *name == '\0') fail(PEAT_STATUS_INVALID_ARGUMENT, "scalar name is NULL or empty");
  if (step < -1) fail(PEAT_STATUS_INVALID_ARGUMENT, "step {} is negative (use -1 for the session's step)", step);
  auto job = std::make_unique<Job>();
  job->data = trace::ScalarData{name, step < 0 ? session_.step() : step, value};
  trace::check_record(job->data);
  return submit(std::move(job));
}

bool Profiler::mark_step(int64_t step) {
  if (step < 0) fail(PEAT_STATUS_INVALID_ARGUMENT, "step {} is negative", step);
  session_.set_step(step);
  check_usable();
  auto job = std::make_unique<Job>();
  job->data = trace::StepData{step, trace::now_unix_ns()};
  return submit(std::move(job));
}

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

// Called in submission order with the job's number assigned: references to
// this record get its number; a reference whose target the index forgot since
// the capture (evicted, or its record failed) stores its bytes after all, from
// the caller's tensor (still borrowed); a stored tensor whose contents another
// thread stored in between becomes a reference; the stored ones enter the index.
void Profiler::settle_contents(Job& job) {
  std::lock_guard lock(content_mutex_);
  for (Job::Content& c : job.contents) {
    trace::TensorData& t = slot_tensor(job.data, c.slot, c.index);
    if (c.kind == Job::Content::kRefSelf) {
      t.ref->seq = job.seq;
      continue;
    }
    if (c.kind == Job::Content::kRefOther) {
      if (contents_.holds(c.key, *t.ref)) {
        job.ref_targets.push_back(t.ref->seq);
        continue;
      }
      const TensorView v = make_view(c.source.tensor, "tensor");  // checked at capture
      t.bytes.resize(c.key.bytes);
      if (v.contiguous) std::memcpy(t.bytes.data(), v.base, c.key.bytes);
      else gather_strided(v.base, v.ndim, v.shape.data(), v.strides.data(), v.numel, trace::element_size(v.dtype),
                          t.bytes.data());
      t.ref.reset();
      job.bytes += c.key.bytes;
      c.kind = Job::Content::kStored;
    }
    if (const std::optional<trace::TensorRef> hit = contents_.find(c.key)) {
      t.ref = *hit;
      if (hit->seq != job.seq) job.ref_targets.push_back(hit->seq);
      job.bytes -= std::min<uint64_t>(job.bytes, t.bytes.size());
      std::vector<std::byte>().swap(t.bytes);
      c.kind = hit->seq == job.seq ? Job::Content::kRefSelf : Job::Content::kRefOther;
      continue;
    }
    contents_.insert(c.key, trace::TensorRef{job.seq, c.slot, c.index});
  }
}

// Encodes a job's record (its staging done); failures mark the job, which the
// writer then drops and counts.
void Profiler::encode_now(Job& job) noexcept {
  try {
    if (!job.tickets.empty()) job.wait_tickets();
    job.encoded = trace::encode_record(job.data, codec_, zstd_level_);
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

peat_profiler_stats_t Profiler::stats() const {
  std::lock_guard lock(mutex_);
  peat_profiler_stats_t s{};
  s.struct_size = sizeof(s);
  s.error = failed_ ? error_status_ : PEAT_STATUS_OK;
  s.records_written = written_;
  s.records_pending = queue_.size();
  s.not_sampled = not_sampled_.load(std::memory_order_relaxed);
  s.dropped_queue_full = dropped_queue_full_;
  s.dropped_budget = dropped_budget_;
  s.dropped_error = dropped_error_;
  s.raw_bytes = raw_written_;
  s.file_bytes = file_bytes_;
  s.queue_bytes = queue_bytes_;
  return s;
}

}  // namespace peat::impl::profiler
