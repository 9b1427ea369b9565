// peat/peat.hpp — the complete, header-only C++17 layer over the C API (as
// oneDNN's dnnl.hpp is over dnnl.h): one RAII class per object (session,
// profiler, trace_reader, playback, injector, aggregator, spatial_map,
// noise_band, report), value functions for signatures and detection, and
// exceptions instead of status codes. It adds no behaviour and no exported
// symbols; every call forwards to one C function.
//
//   peat::session s;                       // peat_session_create(NULL, ...)
//   uint32_t op = s.intern_op("gemm");     // throws peat::error on failure
//   peat::injector inj(s);                 // destroyed with its scope
//   peat_signature_t sig = peat::analyze(peat::tensor_view(g, {m, n}), peat::tensor_view(c, {m, n}));
//
// peat::error carries the status and the library's message. Handles are
// movable, not copyable; get() gives the C handle for calls not wrapped here.
#ifndef PEAT_PEAT_HPP
#define PEAT_PEAT_HPP

#include <peat/peat.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>
#if defined(__has_include)
#if __has_include(<span>) && __cplusplus >= 202002L
#include <span>
#define PEAT_HPP_HAS_SPAN 1
#endif
#endif

namespace peat {

// Thrown by every wrapper when the C call returns a status other than OK.
class error : public std::runtime_error {
 public:
  error(peat_status_t status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  peat_status_t status() const noexcept { return status_; }

 private:
  peat_status_t status_;
};

// Throws peat::error with the thread's last-error message unless status is OK.
inline void check(peat_status_t status) {
  if (status != PEAT_STATUS_OK) {
    const char* message = peat_last_error_message();
    throw error(status, std::string(peat_status_string(status)) + ": " + (message ? message : ""));
  }
}

// Version of the loaded library; throws if it is not the one this header describes
// (major and minor must match; the patch level may differ).
inline void require_compatible_library() {
  const uint32_t loaded = peat_version_number();
  if (loaded / 100 != PEAT_VERSION_NUMBER / 100)
    throw error(PEAT_STATUS_VERSION_MISMATCH, "libpeat " + std::string(peat_version_string()) +
                                                  " does not match the header's version");
}

// A non-owning reference to a backend (backends live as long as the process).
class backend {
 public:
  explicit backend(peat_backend_t* handle) : handle_(handle) {}
  static backend get(const char* name) {
    peat_backend_t* handle = nullptr;
    check(peat_backend_get(name, &handle));
    return backend(handle);
  }
  const char* name() const { return peat_backend_name(handle_); }
  int32_t device_count() const {
    int32_t count = 0;
    check(peat_backend_device_count(handle_, &count));
    return count;
  }
  peat_backend_device_info_t device_info(int32_t device) const {
    peat_backend_device_info_t info{};
    info.struct_size = sizeof(info);
    check(peat_backend_device_info(handle_, device, &info));
    return info;
  }
  peat_backend_t* get() const noexcept { return handle_; }

 private:
  peat_backend_t* handle_;
};

namespace detail {

// Owns a C handle and destroys it with `Destroy` (NULL-safe in the C API).
template <typename T, void (*Destroy)(T*)>
class handle {
 public:
  handle() = default;
  explicit handle(T* h) noexcept : h_(h) {}
  ~handle() { Destroy(h_); }
  handle(handle&& other) noexcept : h_(std::exchange(other.h_, nullptr)) {}
  handle& operator=(handle&& other) noexcept {
    if (this != &other) {
      Destroy(h_);
      h_ = std::exchange(other.h_, nullptr);
    }
    return *this;
  }
  handle(const handle&) = delete;
  handle& operator=(const handle&) = delete;
  T* get() const noexcept { return h_; }

 protected:
  T* h_ = nullptr;
};

// A versioned struct of this header's size, zeroed, struct_size set.
template <typename S>
S sized() noexcept {
  S s{};
  s.struct_size = sizeof(S);
  return s;
}

// Reads a string the C API writes into a caller's buffer (size query first).
template <typename F>
std::string read_string(F&& call) {
  size_t length = 0;
  const peat_status_t first = call(nullptr, size_t{0}, &length);
  if (first != PEAT_STATUS_OK && first != PEAT_STATUS_BUFFER_TOO_SMALL) check(first);
  std::string out(length + 1, '\0');
  check(call(&out[0], out.size(), &length));
  out.resize(length);
  return out;
}

template <typename T>
DLDataType dtype_of() noexcept {
  static_assert(std::is_floating_point<T>::value, "a tensor view of float or double; use the DLDataType overload");
  return DLDataType{kDLFloat, static_cast<uint8_t>(sizeof(T) * 8), 1};
}

}  // namespace detail

// Element count of any DLTensor, checked as the library checks every tensor argument.
inline int64_t numel(const DLTensor* tensor) {
  int64_t n = 0;
  check(peat_tensor_numel(tensor, &n));
  return n;
}

// A borrowed host tensor as DLPack: data it does not own, shape it keeps.
// Converts to `const DLTensor*` / `DLTensor*` for the C calls.
class tensor_view {
 public:
  tensor_view(void* data, DLDataType dtype, std::vector<int64_t> shape, std::vector<int64_t> strides = {})
      : shape_(std::move(shape)), strides_(std::move(strides)) {
    t_.data = data;
    t_.device = DLDevice{kDLCPU, 0};
    t_.ndim = static_cast<int32_t>(shape_.size());
    t_.dtype = dtype;
    t_.shape = shape_.empty() ? nullptr : shape_.data();
    t_.strides = strides_.empty() ? nullptr : strides_.data();
  }
  template <typename T>
  tensor_view(T* data, std::vector<int64_t> shape) : tensor_view(const_cast<std::remove_const_t<T>*>(data),
                                                                 detail::dtype_of<std::remove_const_t<T>>(),
                                                                 std::move(shape)) {}
#ifdef PEAT_HPP_HAS_SPAN
  template <typename T>
  explicit tensor_view(std::span<T> data)
      : tensor_view(data.data(), std::vector<int64_t>{static_cast<int64_t>(data.size())}) {}
#endif
  tensor_view(const tensor_view& o) : tensor_view(o.t_.data, o.t_.dtype, o.shape_, o.strides_) {}
  tensor_view& operator=(const tensor_view&) = delete;
  DLTensor* get() noexcept { return &t_; }
  const DLTensor* get() const noexcept { return &t_; }
  operator DLTensor*() noexcept { return &t_; }
  operator const DLTensor*() const noexcept { return &t_; }
  int64_t numel() const { return peat::numel(&t_); }

 private:
  std::vector<int64_t> shape_, strides_;
  DLTensor t_{};
};

// Typed op attributes to record (peat_profiler_record_op copies what they point to).
inline peat_attr_t int_attr(const char* key, int64_t v) noexcept {
  return peat_attr_t{key, PEAT_ATTR_INT, 0, v, 0.0, nullptr, nullptr, 0};
}
inline peat_attr_t float_attr(const char* key, double v) noexcept {
  return peat_attr_t{key, PEAT_ATTR_FLOAT, 0, 0, v, nullptr, nullptr, 0};
}
inline peat_attr_t string_attr(const char* key, const char* v) noexcept {
  return peat_attr_t{key, PEAT_ATTR_STRING, 0, 0, 0.0, v, nullptr, 0};
}
inline peat_attr_t ints_attr(const char* key, const int64_t* v, uint64_t n) noexcept {
  return peat_attr_t{key, PEAT_ATTR_INT_ARRAY, 0, 0, 0.0, nullptr, v, n};
}

// Owns a peat_session_t.
class session : public detail::handle<peat_session_t, peat_session_destroy> {
 public:
  session() : session(nullptr) {}
  explicit session(const peat_session_options_t* options) { check(peat_session_create(options, &h_)); }
  explicit session(const peat_session_options_t& options) : session(&options) {}

  uint32_t intern_op(const char* name) {
    uint32_t op = 0;
    check(peat_session_intern_op(h_, name, &op));
    return op;
  }
  std::string op_name(uint32_t op) const {
    const char* name = nullptr;
    check(peat_session_op_name(h_, op, &name));
    return name;
  }
  uint64_t next_call(uint32_t op) {
    uint64_t call = 0;
    check(peat_session_next_call(h_, op, &call));
    return call;
  }
  uint64_t call_count(uint32_t op) const {
    uint64_t count = 0;
    check(peat_session_call_count(h_, op, &count));
    return count;
  }
  void set_step(int64_t step) { check(peat_session_set_step(h_, step)); }
  int64_t step() const {
    int64_t step = 0;
    check(peat_session_step(h_, &step));
    return step;
  }
  void set_phase(peat_phase_t phase) { check(peat_session_set_phase(h_, phase)); }
  void log(peat_log_level_t level, const char* message) { check(peat_session_log(h_, level, message)); }
  backend get_backend() const {
    peat_backend_t* b = nullptr;
    check(peat_session_backend(h_, &b));
    return backend(b);
  }
};

// Owns a peat_profiler_t (records into a trace; see peat/profiler.h).
class profiler : public detail::handle<peat_profiler_t, peat_profiler_destroy> {
 public:
  static peat_profiler_options_t default_options() {
    peat_profiler_options_t o;
    peat_profiler_options_init(&o);
    return o;
  }
  profiler(session& s, const peat_profiler_options_t& options) { check(peat_profiler_create(s.get(), &options, &h_)); }
  // Records to `path` with the other options at their defaults.
  profiler(session& s, const char* path) {
    peat_profiler_options_t o = default_options();
    o.path = path;
    check(peat_profiler_create(s.get(), &o, &h_));
  }
  void add_rule(const peat_sample_rule_t& rule) { check(peat_profiler_add_rule(h_, &rule)); }
  bool should_record(uint32_t op, uint64_t call, int64_t step = -1) {
    int32_t record = 0;
    check(peat_profiler_should_record(h_, op, call, step, &record));
    return record != 0;
  }
  // Returns whether the record was queued; *out_call (if given) gets its call index.
  bool record_op(const peat_op_record_t& record, uint64_t* out_call = nullptr) {
    int32_t recorded = 0;
    check(peat_profiler_record_op(h_, &record, &recorded, out_call));
    return recorded != 0;
  }
  bool record_checkpoint(const char* name, int64_t step, const char* const* names, const DLTensor* const* tensors,
                         uint64_t n, void* stream = nullptr) {
    int32_t recorded = 0;
    check(peat_profiler_record_checkpoint(h_, name, step, names, tensors, n, stream, &recorded));
    return recorded != 0;
  }
  void record_scalar(const char* name, int64_t step, double value) {
    check(peat_profiler_record_scalar(h_, name, step, value));
  }
  void mark_step(int64_t step) { check(peat_profiler_mark_step(h_, step)); }
  void flush() { check(peat_profiler_flush(h_)); }
  void close() { check(peat_profiler_close(h_)); }
  peat_profiler_stats_t stats() const {
    auto out = detail::sized<peat_profiler_stats_t>();
    check(peat_profiler_stats(h_, &out));
    return out;
  }
};

// A tensor the library allocated (peat_trace_load_tensor_alloc).
using owned_tensor = std::unique_ptr<DLManagedTensor, void (*)(DLManagedTensor*)>;

// Owns a peat_trace_reader_t (see peat/trace.h).
class trace_reader : public detail::handle<peat_trace_reader_t, peat_trace_close> {
 public:
  explicit trace_reader(const char* path, const peat_trace_reader_options_t* options = nullptr) {
    check(peat_trace_open(path, options, &h_));
  }
  // Reads a trace whose writer may have been killed, up to its last complete record.
  static trace_reader recover(const char* path, peat_trace_recovery_t* out_recovery = nullptr,
                              const peat_trace_reader_options_t* options = nullptr) {
    peat_trace_reader_t* h = nullptr;
    if (out_recovery) out_recovery->struct_size = sizeof(peat_trace_recovery_t);
    check(peat_trace_recover(path, options, &h, out_recovery));
    return trace_reader(h);
  }
  peat_trace_run_info_t run_info() const {
    auto out = detail::sized<peat_trace_run_info_t>();
    check(peat_trace_run_info(h_, &out));
    return out;
  }
  // Header tag `index` (< run_info().n_tags) as key and value, owned by the reader.
  std::pair<const char*, const char*> tag(uint64_t index) const {
    std::pair<const char*, const char*> out{nullptr, nullptr};
    check(peat_trace_tag(h_, index, &out.first, &out.second));
    return out;
  }
  // How many records of the file this reader does not list; *out_first (if
  // given) names the first one ("" when none), owned by the reader.
  uint64_t skipped(const char** out_first = nullptr) const {
    uint64_t n = 0;
    check(peat_trace_skipped(h_, &n, out_first));
    return n;
  }
  // Copies the intact records into a new, complete trace at `path`; returns
  // how many were written, *out_dropped (if given) how many were left out.
  uint64_t copy_intact(const char* path, uint64_t* out_dropped = nullptr) const {
    uint64_t written = 0;
    check(peat_trace_copy_intact(h_, path, &written, out_dropped));
    return written;
  }
  uint64_t record_count() const {
    uint64_t n = 0;
    check(peat_trace_record_count(h_, &n));
    return n;
  }
  peat_trace_record_info_t record_info(uint64_t index) const {
    auto out = detail::sized<peat_trace_record_info_t>();
    check(peat_trace_record_info(h_, index, &out));
    return out;
  }
  peat_attr_t attr(uint64_t index, uint64_t attr) const {
    peat_attr_t out{};
    check(peat_trace_attr(h_, index, attr, &out));
    return out;
  }
  // The next record at or after `start` that `filter` (NULL: any) selects.
  std::optional<uint64_t> next(uint64_t start, const peat_trace_filter_t* filter = nullptr) const {
    uint64_t index = 0;
    const peat_status_t st = peat_trace_next(h_, filter, start, &index);
    if (st == PEAT_STATUS_NOT_FOUND) return std::nullopt;
    check(st);
    return index;
  }
  uint64_t tensor_count(uint64_t index, peat_trace_slot_t slot) const {
    uint64_t n = 0;
    check(peat_trace_tensor_count(h_, index, slot, &n));
    return n;
  }
  peat_trace_tensor_info_t tensor_info(uint64_t index, peat_trace_slot_t slot, uint64_t tensor) const {
    auto out = detail::sized<peat_trace_tensor_info_t>();
    check(peat_trace_tensor_info(h_, index, slot, tensor, &out));
    return out;
  }
  void load_tensor(uint64_t index, peat_trace_slot_t slot, uint64_t tensor, void* dst, size_t capacity) const {
    check(peat_trace_load_tensor(h_, index, slot, tensor, dst, capacity));
  }
  owned_tensor load_tensor(uint64_t index, peat_trace_slot_t slot, uint64_t tensor) const {
    DLManagedTensor* t = nullptr;
    check(peat_trace_load_tensor_alloc(h_, index, slot, tensor, &t));
    return owned_tensor(t, peat_trace_tensor_free);
  }
  // Checks every payload; returns how many tensors were checked.
  uint64_t verify() const {
    uint64_t n = 0;
    check(peat_trace_verify(h_, &n));
    return n;
  }
  // Sets context.op_kind and context.reduction_length from op record `record`
  // and its output `output` (peat_playback_detect_context); the other fields
  // are left as they are.
  void detect_context(uint64_t record, uint64_t output, int64_t signature_k, peat_detect_context_t& context) const {
    check(peat_playback_detect_context(h_, record, output, signature_k, &context));
  }

 private:
  explicit trace_reader(peat_trace_reader_t* h) { h_ = h; }
};

// Owns a peat_playback_t (replays a trace through a candidate; see peat/playback.h).
class playback : public detail::handle<peat_playback_t, peat_playback_destroy> {
 public:
  explicit playback(const trace_reader& reader, const peat_playback_options_t* options = nullptr) {
    check(peat_playback_create(reader.get(), options, &h_));
  }
  void set_candidate(peat_kernel_fn fn, void* ctx = nullptr) { check(peat_playback_set_candidate(h_, fn, ctx)); }
  // `spec` is "libx.so:symbol".
  void set_candidate_symbol(const char* spec, void* ctx = nullptr) {
    check(peat_playback_set_candidate_symbol(h_, spec, ctx));
  }
  // The candidate set above (a loaded symbol stays loaded while the playback has it).
  peat_kernel_fn candidate(void** out_ctx = nullptr) const {
    peat_kernel_fn fn = nullptr;
    check(peat_playback_candidate(h_, &fn, out_ctx));
    return fn;
  }
  void run() { check(peat_playback_run(h_)); }
  peat_playback_summary_t summary() const {
    auto out = detail::sized<peat_playback_summary_t>();
    check(peat_playback_summary(h_, &out));
    return out;
  }
  uint64_t result_count() const {
    uint64_t n = 0;
    check(peat_playback_result_count(h_, &n));
    return n;
  }
  peat_playback_result_t result(uint64_t index) const {
    auto out = detail::sized<peat_playback_result_t>();
    check(peat_playback_result(h_, index, &out));
    return out;
  }
  peat_signature_t result_signature(uint64_t index, uint64_t output = 0,
                                    peat_playback_compare_t which = PEAT_PLAYBACK_FIRST_VS_GOLDEN) const {
    peat_signature_t out;
    peat_signature_init(&out);
    check(peat_playback_result_signature(h_, index, output, which, &out));
    return out;
  }
  uint64_t group_count(peat_playback_group_kind_t kind) const {
    uint64_t n = 0;
    check(peat_playback_group_count(h_, kind, &n));
    return n;
  }
  peat_playback_group_t group(peat_playback_group_kind_t kind, uint64_t index) const {
    auto out = detail::sized<peat_playback_group_t>();
    check(peat_playback_group(h_, kind, index, &out));
    return out;
  }
  peat_signature_t group_signature(peat_playback_group_kind_t kind, uint64_t index, uint64_t output = 0,
                                   peat_playback_compare_t which = PEAT_PLAYBACK_FIRST_VS_GOLDEN) const {
    peat_signature_t out;
    peat_signature_init(&out);
    check(peat_playback_group_signature(h_, kind, index, output, which, &out));
    return out;
  }
  peat_playback_verdicts_t group_verdicts(peat_playback_group_kind_t kind, uint64_t index, uint64_t output = 0) const {
    auto out = detail::sized<peat_playback_verdicts_t>();
    check(peat_playback_group_verdicts(h_, kind, index, output, &out));
    return out;
  }
  void write_jsonl(const char* path, bool append = false) const {
    check(peat_playback_write_jsonl(h_, path, append ? 1 : 0));
  }
  // Share `rank` of a partitioned playback: the selected records in
  // [first_record, end_record), `records` of them.
  struct share {
    uint64_t first_record, end_record, records;
  };
  share partition_share(uint32_t rank) const {
    share s{0, 0, 0};
    check(peat_playback_partition_share(h_, rank, &s.first_record, &s.end_record, &s.records));
    return s;
  }
  // The last run's results as bytes for import_results in another process of this build.
  std::vector<std::byte> export_results() const {
    size_t size = 0;
    check(peat_playback_export(h_, nullptr, 0, &size));
    std::vector<std::byte> out(size);
    check(peat_playback_export(h_, out.data(), out.size(), &size));
    return out;
  }
  // Merges another share's export_results (untrusted: every size is checked).
  void import_results(const void* data, size_t size) { check(peat_playback_import(h_, data, size)); }
};

// Owns a peat_injector_t (runtime FI on the session's counters; see peat/injector.h).
class injector : public detail::handle<peat_injector_t, peat_injector_destroy> {
 public:
  explicit injector(session& s, const peat_injector_options_t* options = nullptr) {
    check(peat_injector_create(s.get(), options, &h_));
  }
  static peat_injector_policy_t default_policy() {
    peat_injector_policy_t p;
    peat_injector_policy_init(&p);
    return p;
  }
  uint32_t add_policy(const peat_injector_policy_t& policy) {
    uint32_t index = 0;
    check(peat_injector_add_policy(h_, &policy, &index));
    return index;
  }
  void clear_policies() { check(peat_injector_clear_policies(h_)); }
  // The decision for the op's next call (noexcept in C: INVALID on a bad handle, thrown here).
  peat_action_t decide(uint32_t op, uint64_t* out_call = nullptr) {
    const peat_action_t a = peat_injector_decide(h_, op, out_call);
    if (a == PEAT_ACTION_INVALID) check(PEAT_STATUS_INVALID_ARGUMENT);
    return a;
  }
  void set_candidate(const char* op_pattern, peat_kernel_fn fn, void* ctx = nullptr) {
    check(peat_injector_set_candidate(h_, op_pattern, fn, ctx));
  }
  // `spec` is "libx.so:symbol".
  void set_candidate_symbol(const char* op_pattern, const char* spec, void* ctx = nullptr) {
    check(peat_injector_set_candidate_symbol(h_, op_pattern, spec, ctx));
  }
  struct dispatched {
    peat_action_t action;
    uint64_t call;
  };
  // Runs the op's next call as the schedule decides (golden, candidate, both, inject).
  dispatched dispatch(uint32_t op, const DLTensor* inputs, int32_t n_in, DLTensor* outputs, int32_t n_out,
                      const void* attrs, peat_kernel_fn golden_fn, void* golden_ctx = nullptr) {
    dispatched d{PEAT_ACTION_INVALID, 0};
    check(peat_injector_dispatch(h_, op, inputs, n_in, outputs, n_out, attrs, golden_fn, golden_ctx, &d.action,
                                 &d.call));
    return d;
  }
  // Carries out an INJECT decision of policy `policy` on `tensor`.
  peat_inject_truth_t inject(int32_t policy, uint32_t op, uint64_t call, DLTensor* tensor,
                             const DLTensor* stale = nullptr) {
    peat_inject_truth_t truth;
    peat_inject_truth_init(&truth);
    check(peat_injector_inject(h_, policy, op, call, tensor, stale, &truth));
    return truth;
  }
  uint64_t firing_count() const {
    uint64_t n = 0;
    check(peat_injector_firing_count(h_, &n, nullptr));
    return n;
  }
  peat_firing_t firing(uint64_t index) const {
    auto out = detail::sized<peat_firing_t>();
    check(peat_injector_firing(h_, index, &out));
    return out;
  }
  peat_signature_t firing_signature(uint64_t index) const {
    peat_signature_t out;
    peat_signature_init(&out);
    check(peat_injector_firing_signature(h_, index, &out));
    return out;
  }
  // The second candidate run against the first (a run_twice policy); throws NOT_FOUND otherwise.
  peat_signature_t firing_rerun_signature(uint64_t index) const {
    peat_signature_t out;
    peat_signature_init(&out);
    check(peat_injector_firing_rerun_signature(h_, index, &out));
    return out;
  }
  void write_log(const char* path, bool append = false) const { check(peat_injector_write_log(h_, path, append)); }
};

// Applies an error model to a tensor without a schedule (peat_inject_apply).
inline peat_inject_truth_t inject_apply(const peat_inject_spec_t& spec, DLTensor* tensor, uint64_t seed = 0,
                                        uint32_t op = 0, uint32_t call = 0, const DLTensor* source = nullptr) {
  peat_inject_truth_t truth;
  peat_inject_truth_init(&truth);
  check(peat_inject_apply(&spec, tensor, source, seed, op, call, &truth));
  return truth;
}

// ---- signatures (plain values) ----
inline peat_signature_t analyze(const DLTensor* golden, const DLTensor* candidate,
                                const peat_signature_config_t* config = nullptr,
                                peat_spatial_map_t* out_map = nullptr) {
  peat_signature_t s;
  peat_signature_init(&s);
  check(peat_analyze(golden, candidate, config, &s, out_map));
  return s;
}
inline void accumulate(peat_signature_t& into, const DLTensor* golden, const DLTensor* candidate,
                       const peat_signature_config_t* config = nullptr, peat_spatial_map_t* inout_map = nullptr) {
  check(peat_analyze_accumulate(golden, candidate, config, &into, inout_map));
}
inline void merge(peat_signature_t& into, const peat_signature_t& from) { check(peat_signature_merge(&into, &from)); }
inline double rmse(const peat_signature_t& s) {
  double v = 0;
  check(peat_signature_rmse(&s, &v));
  return v;
}
inline double relative_l2(const peat_signature_t& s) {
  double v = 0;
  check(peat_signature_relative_l2(&s, &v));
  return v;
}
inline double sqnr_db(const peat_signature_t& s) {
  double v = 0;
  check(peat_signature_sqnr_db(&s, &v));
  return v;
}
inline double cosine(const peat_signature_t& s) {
  double v = 0;
  check(peat_signature_cosine(&s, &v));
  return v;
}
inline bool allclose(const peat_signature_t& s) {
  int32_t pass = 0;
  check(peat_signature_allclose(&s, &pass));
  return pass != 0;
}
inline double effective_mantissa_bits(const peat_signature_t& s, double quantile = 0.5) {
  double v = 0;
  check(peat_signature_effective_mantissa_bits(&s, quantile, &v));
  return v;
}

// Owns the buffers of a peat_spatial_map_t (released on destruction).
class spatial_map {
 public:
  spatial_map() { peat_spatial_map_init(&m_); }
  ~spatial_map() { peat_spatial_map_release(&m_); }
  spatial_map(const spatial_map&) = delete;
  spatial_map& operator=(const spatial_map&) = delete;
  peat_spatial_map_t* get() noexcept { return &m_; }
  const peat_spatial_map_t& operator*() const noexcept { return m_; }
  const peat_spatial_map_t* operator->() const noexcept { return &m_; }

 private:
  peat_spatial_map_t m_;
};

// Owns a peat_aggregator_t (per-op signatures and series).
class aggregator : public detail::handle<peat_aggregator_t, peat_aggregator_destroy> {
 public:
  explicit aggregator(const peat_aggregator_options_t* options = nullptr) {
    check(peat_aggregator_create(options, &h_));
  }
  void add(uint32_t op, int64_t step, uint64_t call, const peat_signature_t& s) {
    check(peat_aggregator_add(h_, op, step, call, &s));
  }
  peat_signature_t signature(uint32_t op) const {
    peat_signature_t out;
    peat_signature_init(&out);
    check(peat_aggregator_signature(h_, op, &out));
    return out;
  }
  uint64_t call_count(uint32_t op) const {
    uint64_t n = 0;
    check(peat_aggregator_call_count(h_, op, &n));
    return n;
  }
  std::vector<peat_series_point_t> series(uint32_t op) const {
    size_t n = 0;
    check(peat_aggregator_series(h_, op, nullptr, 0, &n));
    std::vector<peat_series_point_t> points(n);
    check(peat_aggregator_series(h_, op, points.data(), points.size(), &n));
    points.resize(n < points.size() ? n : points.size());
    return points;
  }
};

// Owns a peat_noise_band_t (training-impact band from golden reruns).
class noise_band : public detail::handle<peat_noise_band_t, peat_noise_band_destroy> {
 public:
  noise_band(const double* reference, size_t length, const peat_noise_band_options_t* options = nullptr) {
    check(peat_noise_band_create(reference, length, options, &h_));
  }
  void add_rerun(const double* loss, size_t length, double param_drift = 0) {
    check(peat_noise_band_add_rerun(h_, loss, length, param_drift));
  }
  peat_impact_t judge(const double* loss, size_t length, const int64_t* steps = nullptr, double drift = 0) const {
    auto out = detail::sized<peat_impact_t>();
    check(peat_noise_band_judge(h_, loss, length, steps, drift, &out));
    return out;
  }
};

// ---- detection (plain values) ----
inline peat_detection_t detect(const peat_signature_t& s, const peat_detect_context_t* context = nullptr) {
  peat_detection_t d;
  peat_detection_init(&d);
  check(peat_detect(&s, context, &d));
  return d;
}
inline std::string render(const peat_detection_t& d, peat_render_format_t format) {
  return detail::read_string([&](char* buffer, size_t capacity, size_t* length) {
    return peat_detection_render(&d, format, buffer, capacity, length);
  });
}

// Owns a peat_report_t (a self-contained HTML page; see peat/report.h).
class report : public detail::handle<peat_report_t, peat_report_destroy> {
 public:
  explicit report(const peat_report_options_t* options = nullptr) { check(peat_report_create(options, &h_)); }
  peat_report_input_kind_t add_input(const char* path) {
    peat_report_input_kind_t kind{};
    check(peat_report_add_input(h_, path, &kind));
    return kind;
  }
  void add_signature(const char* source, const char* op, int64_t step, uint64_t call, const peat_signature_t& s,
                     const peat_detection_t* detection = nullptr) {
    check(peat_report_add_signature(h_, source, op, step, call, &s, detection));
  }
  void add_spatial_map(const char* label, const peat_spatial_map_t& map) {
    check(peat_report_add_spatial_map(h_, label, &map));
  }
  // A playback's results as candidate `candidate` (the playback may be destroyed afterwards).
  void add_playback(const char* candidate, const playback& p) {
    check(peat_report_add_playback(h_, candidate, p.get()));
  }
  // The call of `candidate` whose spatial map tells most about its error;
  // nullopt when there is none (every call within tolerance, or no such candidate).
  struct focus {
    uint64_t record, output;
  };
  std::optional<focus> focus_call(const char* candidate) const {
    focus c{0, 0};
    const peat_status_t st = peat_report_focus_call(h_, candidate, &c.record, &c.output);
    if (st == PEAT_STATUS_NOT_FOUND) return std::nullopt;
    check(st);
    return c;
  }
  // The spatial map of one call of `candidate` (copied), titled `label` (NULL = "spatial map").
  void add_candidate_map(const char* candidate, const char* label, const peat_spatial_map_t& map) {
    check(peat_report_add_candidate_map(h_, candidate, label, &map));
  }
  std::string render_html() const {
    return detail::read_string([&](char* buffer, size_t capacity, size_t* length) {
      return peat_report_render_html(h_, buffer, capacity, length);
    });
  }
  void write_html(const char* path) const { check(peat_report_write_html(h_, path)); }
};

}  // namespace peat

#endif  // PEAT_PEAT_HPP
