// Profiler: copying or staging a record call's tensors, and content
// addressing (format 1.2: a tensor already in the file becomes a reference).
#include "lib/profiler/job.hpp"

#include "lib/backend/backend.hpp"
#include "lib/core/strided_copy.hpp"
#include "lib/core/tensor_view.hpp"
#include "lib/session/session.hpp"

#include <algorithm>
#include <cstring>

namespace peat::impl::profiler {

namespace {
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

std::optional<trace::TensorRef> Profiler::find_content(Job& job, const trace::ContentKey& key) {
  for (const Job::Content& c : job.contents)  // an earlier tensor of the same record
    if (c.kind == Job::Content::kStored && c.key == key) return trace::TensorRef{0, c.slot, c.index};
  std::lock_guard lock(content_mutex_);
  return contents_.find(key);
}

void Profiler::choose_base(Job& job, trace::TensorData& t, peat_trace_slot_t slot, uint32_t index) {
  if (bases_.capacity() == 0 || t.bytes.size() > kMaxDeltaTensorBytes || trace::element_size(t.dtype) < 2) return;
  Job::Content& c = job.contents.back();
  c.base_key = delta_key(job.name_key, slot, index, t.dtype, t.shape, t.bytes.size());
  {
    std::lock_guard lock(content_mutex_);
    DeltaBases::Base b;
    const DeltaBases::Use use = bases_.use(c.base_key, &b);
    if (use == DeltaBases::Use::kNever) return;
    if (use == DeltaBases::Use::kBase) {
      t.base = b.target;
      t.base_bytes = std::move(b.bytes);
      t.base_misses = std::move(b.misses);
      return;
    }
  }
  // No base for this position yet (or it served its versions): this version,
  // stored whole, becomes it once its record has a number (settle_contents).
  auto keep = std::make_shared<ByteBuffer>();
  assign_bytes(*keep, t.bytes.data(), t.bytes.size());
  c.keep = std::move(keep);
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
  const bool host = is_host(v.device);
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
    // One pass over the source on the training thread: copied into a reused
    // buffer or fresh storage (assign_bytes: its zero-fill writes the
    // destination while it is in cache, then memcpy).
    t.bytes = pool_.take(bytes);
    assign_bytes(t.bytes, v.base, bytes);
    if (addressed) choose_base(job, t, slot, index);
    return t;
  }
  t.bytes = pool_.take(bytes);
  t.bytes.resize(bytes);
  if (host) {
    gather_strided(v.base, v.ndim, v.shape.data(), v.strides.data(), v.numel, es, t.bytes.data());
    if (addressed) {
      const trace::ContentKey key = trace::content_key(t.bytes.data(), bytes, v.dtype);
      if (as_reference(key)) {
        ByteBuffer().swap(t.bytes);
        return t;
      }
      job.contents.push_back({key, slot, index, Job::Content::kStored, arg});
      choose_base(job, t, slot, index);
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
      t.base.reset();  // a reference after all: no delta, no base
      t.base_bytes.reset();
      t.base_misses.reset();
      c.keep.reset();
      t.ref = *hit;
      if (hit->seq != job.seq) job.ref_targets.push_back(hit->seq);
      job.bytes -= std::min<uint64_t>(job.bytes, t.bytes.size());
      ByteBuffer().swap(t.bytes);
      c.kind = hit->seq == job.seq ? Job::Content::kRefSelf : Job::Content::kRefOther;
      continue;
    }
    contents_.insert(c.key, trace::TensorRef{job.seq, c.slot, c.index});
    if (t.base) {
      // A base forgotten since the capture (its record failed, or evicted)
      // may not be in the file: the tensor is stored whole instead.
      if (bases_.holds(c.base_key, *t.base)) {
        job.ref_targets.push_back(t.base->seq);
      } else {
        t.base.reset();
        t.base_bytes.reset();
        t.base_misses.reset();
      }
    }
    if (c.keep) bases_.insert(c.base_key, trace::TensorRef{job.seq, c.slot, c.index}, std::move(c.keep));
  }
}

}  // namespace peat::impl::profiler
