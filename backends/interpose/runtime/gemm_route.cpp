// Routing of intercepted GEMM calls to libpeat (see gemm_route.hpp). Only the
// public C API of libpeat is used, so an interposer works with any libpeat of
// the same ABI major.
#include "backends/interpose/runtime/gemm_route.hpp"

#include "backends/interpose/runtime/config.hpp"
#include "backends/interpose/runtime/runtime.hpp"

#include <peat/peat.h>

#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>

namespace peat::interpose {

namespace {

thread_local int t_depth = 0;

struct DepthGuard {
  DepthGuard() { ++t_depth; }
  ~DepthGuard() { --t_depth; }
  DepthGuard(const DepthGuard&) = delete;
  DepthGuard& operator=(const DepthGuard&) = delete;
};

// A column-major rows x cols matrix (leading dimension ld, `batch` of them
// `stride` elements apart) as a row-major DLTensor view [batch,] cols, rows.
struct MatrixView {
  int64_t shape[3]{};
  int64_t strides[3]{};
  DLTensor tensor{};

  void set(const void* data, DLDataType dtype, DLDevice device, int64_t rows, int64_t cols, int64_t ld,
           int64_t batch, int64_t stride) {
    tensor = DLTensor{};
    tensor.data = const_cast<void*>(data);
    tensor.device = device;
    tensor.dtype = dtype;
    if (batch > 1) {
      tensor.ndim = 3;
      shape[0] = batch, shape[1] = cols, shape[2] = rows;
      strides[0] = stride, strides[1] = ld, strides[2] = 1;
    } else {
      tensor.ndim = 2;
      shape[0] = cols, shape[1] = rows;
      strides[0] = ld, strides[1] = 1;
    }
    tensor.shape = shape;
    tensor.strides = strides;
  }
  // A 1-D view of the storage span of `v` (from its first to its last element).
  void set_span(const MatrixView& v) {
    tensor = v.tensor;
    tensor.ndim = 1;
    shape[0] = v.extent();
    strides[0] = 1;
    tensor.shape = shape;
    tensor.strides = strides;
  }
  bool contiguous() const {
    int64_t expect = 1;
    for (int32_t d = tensor.ndim - 1; d >= 0; --d) {
      if (shape[d] != 1 && strides[d] != expect) return false;
      expect *= shape[d];
    }
    return true;
  }
  // Elements from the first to one past the last element of the view.
  int64_t extent() const {
    int64_t last = 0;
    for (int32_t d = 0; d < tensor.ndim; ++d) last += (shape[d] - 1) * strides[d];
    return last + 1;
  }
};

// A copy of the C operand taken before the call (in-place GEMMs with beta != 0
// overwrite it), in memory of the session's backend.
class Snapshot {
 public:
  Snapshot() = default;
  Snapshot(const Snapshot&) = delete;
  Snapshot& operator=(const Snapshot&) = delete;
  ~Snapshot() {
    if (ptr_ != nullptr) table_->free(device_, ptr_);
  }
  // Copies `bytes` from `src`; false (and a message in *why) when the backend refuses.
  bool take(const peat_backend_api_t* table, DLDevice dev, const void* src, size_t bytes, void* stream,
            std::string* why) {
    table_ = table;
    device_ = dev.device_id;
    if (table->alloc(dev.device_id, bytes, &ptr_) != PEAT_STATUS_OK) {
      *why = std::string("alloc of the C snapshot failed: ") + table->last_error();
      ptr_ = nullptr;
      return false;
    }
    if (table->copy(ptr_, dev, src, dev, bytes, stream) != PEAT_STATUS_OK) {
      *why = std::string("copy of the C snapshot failed: ") + table->last_error();
      return false;
    }
    return true;
  }
  void* data() const { return ptr_; }

 private:
  const peat_backend_api_t* table_ = nullptr;
  int32_t device_ = 0;
  void* ptr_ = nullptr;
};

bool is_host(int32_t device_type) {
  return device_type == kDLCPU || device_type == kDLCUDAHost || device_type == kDLROCMHost;
}

struct Golden {
  RealFn real;
  void* ctx;
  int status = 0;
  bool ran = false;
  int success = 0;
  const Runtime* rt = nullptr;
  int32_t device_id = 0;
  void* stream = nullptr;
};

// The golden kernel as the injector sees it: the real library call. On a
// device, the stream is synchronised so that what the injector does next
// (error model, comparison, copies on the default stream) sees the result.
int32_t golden_kernel(void* ctx, const DLTensor*, int32_t, DLTensor*, int32_t, const void*) {
  auto* g = static_cast<Golden*>(ctx);
  g->status = g->real(g->ctx);
  g->ran = true;
  if (g->status == g->success && !is_host(g->rt->device_type()))
    (void)g->rt->backend_table()->synchronize(g->device_id, g->stream);
  return g->status == g->success ? 0 : 1;
}

peat_attr_t int_attr(const char* key, int64_t v) {
  peat_attr_t a{};
  a.key = key;
  a.type = PEAT_ATTR_INT;
  a.i = v;
  return a;
}
peat_attr_t float_attr(const char* key, double v) {
  peat_attr_t a{};
  a.key = key;
  a.type = PEAT_ATTR_FLOAT;
  a.f = v;
  return a;
}
peat_attr_t string_attr(const char* key, const char* v) {
  peat_attr_t a{};
  a.key = key;
  a.type = PEAT_ATTR_STRING;
  a.s = v;
  return a;
}

// The op id of an entry point and whether a policy may fire for it, per
// thread and keyed by the entry's address (each wrapper passes its own string
// literal): the non-firing path then interns nothing and matches no glob.
struct EntryInfo {
  const char* entry = nullptr;
  uint32_t op = 0;
  bool may_fire = false;
};
constexpr int kEntryCache = 16;
thread_local EntryInfo t_entries[kEntryCache];

const EntryInfo* entry_info(Runtime& rt, const char* entry) {
  for (const EntryInfo& e : t_entries) {
    if (e.entry == entry) return &e;
    if (e.entry == nullptr) break;
  }
  EntryInfo info{entry, 0, rt.may_fire(entry)};
  if (peat_session_intern_op(rt.session(), entry, &info.op) != PEAT_STATUS_OK) return nullptr;
  for (EntryInfo& e : t_entries)
    if (e.entry == nullptr) return &(e = info);
  static thread_local EntryInfo overflow;  // more entry points than slots: the last one only
  return &(overflow = info);
}

}  // namespace

bool in_intercepted_call() { return t_depth > 0; }

bool active() { return t_depth == 0 && Runtime::get().enabled(); }

int route_gemm(GemmCall& call, RealFn real, void* ctx) {
  if (t_depth > 0) return real(ctx);
  Runtime& rt = Runtime::get();
  if (!rt.enabled()) return real(ctx);
  DepthGuard guard;
  peat_interpose_gemm_t& g = call.attrs;
  const char* entry = g.entry;

  const EntryInfo* info = entry_info(rt, entry);
  if (info == nullptr) {
    rt.warn_once(entry, std::string(entry) + ": cannot intern the op: " + peat_last_error_message() +
                            "; its calls pass through");
    return real(ctx);
  }
  const uint32_t op = info->op;
  if (rt.profiler() == nullptr && !info->may_fire && call.supported) {
    // Nothing to record and no policy names this entry: the call is counted
    // (the persistent-kernel-calling count) and runs as it is.
    uint64_t index = 0;
    (void)peat_session_next_call(rt.session(), op, &index);
    return real(ctx);
  }
  if (!call.supported || g.m <= 0 || g.n <= 0 || g.k <= 0 || g.batch <= 0) {
    // Counted (the per-op counter is the "persistent kernel calling" count),
    // but neither recorded nor subject to the schedule.
    uint64_t index = 0;
    (void)peat_session_next_call(rt.session(), op, &index);
    if (!call.supported)
      rt.warn_once(std::string(entry) + "/dtype",
                   std::string(entry) + ": a data type PEAT does not handle (only f16, bf16, f32, f64); such calls "
                                        "are counted and pass through");
    return real(ctx);
  }

  const DLDevice dev{static_cast<DLDeviceType>(rt.device_type()), call.device_id};
  const bool na = g.transa == 'N', nb = g.transb == 'N';
  MatrixView a, b, c, d;
  a.set(call.a, call.a_type, dev, na ? g.m : g.k, na ? g.k : g.m, g.lda, g.batch, g.stride_a);
  b.set(call.b, call.b_type, dev, nb ? g.k : g.n, nb ? g.n : g.k, g.ldb, g.batch, g.stride_b);
  d.set(call.d, call.d_type, dev, g.m, g.n, g.ldd, g.batch, g.stride_d);

  // The C operand is an input of the GEMM when beta != 0 (or unknown, in device memory).
  const bool beta_used = g.scalars_on_device != 0 || g.beta != 0.0;
  const bool in_place = call.c == call.d && g.ldc == g.ldd && g.stride_c == g.stride_d;
  const DLTensor* inputs_p[3] = {&a.tensor, &b.tensor, nullptr};
  DLTensor inputs[3] = {a.tensor, b.tensor, DLTensor{}};
  int32_t n_in = 2;
  Snapshot snapshot;
  if (beta_used) {
    c.set(call.c, call.c_type, dev, g.m, g.n, g.ldc, g.batch, g.stride_c);
    if (!in_place) {
      n_in = 3;
    } else {
      uint64_t predicted = 0;
      int32_t sampled = 0;
      if (rt.profiler() != nullptr && peat_session_call_count(rt.session(), op, &predicted) == PEAT_STATUS_OK)
        (void)peat_profiler_should_record(rt.profiler(), op, predicted, -1, &sampled);
      if (sampled != 0 || rt.has_run_both()) {
        const size_t bytes = static_cast<size_t>(c.extent()) * peat_dtype_size(call.c_type);
        std::string why;
        if (snapshot.take(rt.backend_table(), dev, call.c, bytes, g.stream, &why)) {
          c.tensor.data = snapshot.data();
          n_in = 3;
        } else {
          rt.warn_once(std::string(entry) + "/snapshot", std::string(entry) + ": " + why + "; C is not recorded as an input");
        }
      } else if (rt.has_candidates()) {
        n_in = 3;  // run_candidate reads C before it writes D (the same memory)
      }
    }
    if (n_in == 3) {
      inputs[2] = c.tensor;
      inputs_p[2] = &c.tensor;
    }
  }

  uint64_t index = 0;
  int result = call.success;
  bool recordable = true;
  if (rt.injector() == nullptr) {
    (void)peat_session_next_call(rt.session(), op, &index);
    result = real(ctx);
  } else {
    Golden golden{real, ctx};
    golden.success = call.success;
    golden.rt = &rt;
    golden.device_id = dev.device_id;
    golden.stream = g.stream;
    DLTensor outputs[1] = {d.tensor};
    peat_action_t action = PEAT_ACTION_INVALID;
    const peat_status_t st = peat_injector_dispatch(rt.injector(), op, inputs, n_in, outputs, 1, &g, golden_kernel,
                                                    &golden, &action, &index);
    if (st != PEAT_STATUS_OK && !(st == PEAT_STATUS_CALLBACK_FAILED && golden.ran)) {
      rt.warn_once(std::string(entry) + "/dispatch", std::string(entry) + ": the injector failed (" +
                                                         peat_status_string(st) + ": " + peat_last_error_message() +
                                                         "); such calls run the vendor library unchanged");
      recordable = false;
    }
    if (golden.ran) result = golden.status;
    else if (st == PEAT_STATUS_OK && action == PEAT_ACTION_RUN_CANDIDATE) result = call.success;
    else result = real(ctx);
  }

  if (rt.profiler() != nullptr && recordable && result == call.success) {
    peat_attr_t attrs[32];
    uint64_t n = 0;
    const char ta[2] = {g.transa, '\0'}, tb[2] = {g.transb, '\0'};
    attrs[n++] = string_attr("vendor", g.vendor);
    attrs[n++] = string_attr("layout", "column_major");
    attrs[n++] = string_attr("transa", ta);
    attrs[n++] = string_attr("transb", tb);
    attrs[n++] = int_attr("m", g.m);
    attrs[n++] = int_attr("n", g.n);
    attrs[n++] = int_attr("k", g.k);
    attrs[n++] = int_attr("lda", g.lda);
    attrs[n++] = int_attr("ldb", g.ldb);
    attrs[n++] = int_attr("ldc", g.ldc);
    if (!in_place) attrs[n++] = int_attr("ldd", g.ldd);
    attrs[n++] = float_attr("alpha", g.alpha);
    attrs[n++] = float_attr("beta", g.beta);
    attrs[n++] = string_attr("dtype", peat_dtype_name(call.d_type));
    attrs[n++] = string_attr("a_dtype", peat_dtype_name(call.a_type));
    attrs[n++] = string_attr("b_dtype", peat_dtype_name(call.b_type));
    attrs[n++] = int_attr("batch", g.batch);
    if (g.batch > 1) {
      attrs[n++] = int_attr("stride_a", g.stride_a);
      attrs[n++] = int_attr("stride_b", g.stride_b);
      attrs[n++] = int_attr("stride_c", g.stride_c);
    }
    if (g.compute_type >= 0) attrs[n++] = int_attr("compute_type", g.compute_type);
    if (g.scalars_on_device != 0) attrs[n++] = int_attr("scalars_on_device", 1);

    // Device memory is staged as contiguous bytes only: an operand with padded
    // columns is recorded as the 1-D span of its storage, from its first to
    // its last element (attribute "<name>_layout" = "span"; reshape with the
    // leading dimension).
    MatrixView spans[4];
    const auto recorded = [&](const MatrixView& v, int slot, const char* key) -> const DLTensor* {
      if (is_host(v.tensor.device.device_type) || v.contiguous()) return &v.tensor;
      spans[slot].set_span(v);
      attrs[n++] = string_attr(key, "span");
      return &spans[slot].tensor;
    };
    inputs_p[0] = recorded(a, 0, "A_layout");
    inputs_p[1] = recorded(b, 1, "B_layout");
    if (n_in == 3) inputs_p[2] = recorded(c, 2, "C_in_layout");
    const DLTensor* outs[1] = {recorded(d, 3, "C_layout")};

    static const char* const in_names[3] = {"A", "B", "C_in"};
    static const char* const out_names[1] = {"C"};
    peat_op_record_t rec;
    peat_op_record_init(&rec);
    rec.op = op;
    rec.call_index = index;
    rec.attrs = attrs;
    rec.n_attrs = n;
    rec.inputs = inputs_p;
    rec.input_names = in_names;
    // A C operand that aliases the output without a snapshot is not an input
    // worth recording (it holds the result now).
    rec.n_inputs = (n_in == 3 && (!in_place || snapshot.data() != nullptr)) ? 3 : 2;
    rec.outputs = outs;
    rec.output_names = out_names;
    rec.n_outputs = 1;
    rec.stream = g.stream;
    const peat_status_t st = peat_profiler_record_op(rt.profiler(), &rec, nullptr, nullptr);
    if (st != PEAT_STATUS_OK)
      rt.warn_once(std::string(entry) + "/record", std::string(entry) + ": a call could not be recorded (" +
                                                       peat_status_string(st) + ": " + peat_last_error_message() + ")");
  }
  return result;
}

void* next_symbol(const char* name) {
  void* p = dlsym(RTLD_NEXT, name);
  if (p == nullptr)
    Runtime::say_once(name, std::string("no next definition of ") + name +
                                " after the interposer (is the vendor library loaded?)");
  return p;
}

double scalar_to_double(const void* p, DLDataType t) {
  if (p == nullptr) return std::numeric_limits<double>::quiet_NaN();
  if (t.code == kDLFloat && t.bits == 64) return *static_cast<const double*>(p);
  if (t.code == kDLFloat && t.bits == 32) return *static_cast<const float*>(p);
  if (t.code == kDLInt && t.bits == 32) return *static_cast<const int32_t*>(p);
  uint16_t h = 0;
  std::memcpy(&h, p, 2);
  if (t.code == kDLBfloat && t.bits == 16) {
    const uint32_t u = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  if (t.code == kDLFloat && t.bits == 16) {
    const int sign = (h >> 15) & 1, exp = (h >> 10) & 0x1F, frac = h & 0x3FF;
    double v;
    if (exp == 0) v = std::ldexp(frac, -24);
    else if (exp == 31) v = frac == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
    else v = std::ldexp(1024 + frac, exp - 25);
    return sign != 0 ? -v : v;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

}  // namespace peat::interpose
