#include "lib/profiler/job.hpp"

#include "lib/backend/backend.hpp"
#include "lib/core/error.hpp"
#include "lib/core/tensor_view.hpp"
#include "lib/core/version.hpp"
#include "lib/session/session.hpp"
#include "lib/trace/writer.hpp"

#include <algorithm>

namespace peat::impl::profiler {

namespace {
void check_list(const TensorList& list, const char* what) {
  if (list.n > 0 && list.tensors == nullptr) fail(PEAT_STATUS_INVALID_ARGUMENT, "{} is NULL but its count is {}", what, list.n);
  if (list.n > (uint64_t{1} << 20)) fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: {} tensors is too many", what, list.n);
}
}  // namespace

Profiler::Profiler(session::Session& session, const peat_profiler_options_t& o)
    : session_(session),
      codec_(o.codec),
      zstd_level_(o.zstd_level),
      queue_capacity_(o.queue_bytes),
      policy_(o.full_queue_policy),
      default_record_(o.default_record != 0),
      budget_(o.byte_budget),
      contents_(static_cast<std::size_t>(std::min<uint64_t>(o.content_index_entries, uint64_t{1} << 24))),
      bases_(o.codec == PEAT_TRACE_CODEC_SHUFFLE_ZSTD && o.content_index_entries > 0 ? o.queue_bytes : 0),
      pool_(std::min(o.queue_bytes / 4, kPoolMaxBytes)) {
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

void Profiler::check_usable() const {
  if (!stopped_.load(std::memory_order_acquire)) return;  // the hot path: no lock
  std::lock_guard lock(mutex_);
  if (closing_ || closed_) fail(PEAT_STATUS_BAD_STATE, "the profiler is closed");
  if (failed_) fail(error_status_, "recording stopped after an earlier error: {}", error_message_);
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
  job->name_key = a.op;
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
  job->name_key = checkpoint_key_name(cp.name);
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
