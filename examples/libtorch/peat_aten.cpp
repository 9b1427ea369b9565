// The overrides: aten::mm, aten::addmm and aten::convolution on the CPU key.
// Each call builds DLTensor views of its operands (no copy), allocates the
// output and hands both to peat::injector::dispatch with the golden kernel
// (peat_aten_golden), which runs the golden, the candidate, or both as the
// schedule decides; then the profiler records the call when its rules select
// it. Autograd sits above the CPU key, so forward and backward calls (the
// backward's mm, the forward's addmm and convolution) all pass here.
#include "peat_aten.hpp"

#include <ATen/ATen.h>
#include <ATen/ops/addmm_cpu_dispatch.h>
#include <ATen/ops/convolution_compositeexplicitautograd_dispatch.h>
#include <ATen/ops/mm_cpu_dispatch.h>
#include <torch/library.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace peat_aten {
namespace {

struct State {
  peat::session session;
  peat::injector injector{session};
  std::optional<peat::profiler> profiler;
  uint32_t op_mm = session.intern_op("aten::mm");
  uint32_t op_addmm = session.intern_op("aten::addmm");
  uint32_t op_conv = session.intern_op("aten::convolution");
};

std::mutex g_mutex;                  // attach / detach
std::unique_ptr<State> g_owned;
std::atomic<State*> g_state{nullptr};

bool routable(const at::Tensor& t) {
  const auto s = t.scalar_type();
  return t.device().is_cpu() && !t.is_sparse() && (s == at::kFloat || s == at::kDouble || s == at::kBFloat16 ||
                                                   s == at::kHalf);
}

DLDataType dtype_of(at::ScalarType s) {
  switch (s) {
    case at::kDouble: return DLDataType{kDLFloat, 64, 1};
    case at::kHalf: return DLDataType{kDLFloat, 16, 1};
    case at::kBFloat16: return DLDataType{kDLBfloat, 16, 1};
    default: return DLDataType{kDLFloat, 32, 1};
  }
}

// A borrowed DLTensor over an at::Tensor (shape and strides point into it).
DLTensor view(const at::Tensor& t) {
  DLTensor d{};
  d.data = t.data_ptr();
  d.device = DLDevice{kDLCPU, 0};
  d.ndim = static_cast<int32_t>(t.dim());
  d.dtype = dtype_of(t.scalar_type());
  d.shape = const_cast<int64_t*>(t.sizes().data());
  d.strides = const_cast<int64_t*>(t.strides().data());
  return d;
}

peat_attr_t ints_attr(const char* key, at::IntArrayRef v) { return peat::ints_attr(key, v.data(), v.size()); }
using peat::float_attr;
using peat::int_attr;

// Routes one call: inputs (undefined ones left out), the output shape, the
// attributes. The golden and the candidate see the same peat_playback_attrs_t
// Playback hands them, so one kernel serves both.
at::Tensor route(State& st, uint32_t op, const char* name, const std::vector<at::Tensor>& inputs,
                 at::IntArrayRef out_shape, const std::vector<peat_attr_t>& attrs) {
  at::Tensor out = at::empty(out_shape, inputs[0].options());
  std::vector<DLTensor> in(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) in[i] = view(inputs[i]);
  DLTensor o = view(out);
  peat_playback_attrs_t pa{};
  pa.struct_size = sizeof pa;
  pa.attrs = attrs.empty() ? nullptr : attrs.data();
  pa.n_attrs = attrs.size();
  pa.op = name;
  pa.module_path = "";
  const auto d = st.injector.dispatch(op, in.data(), static_cast<int32_t>(in.size()), &o, 1, &pa, peat_aten_golden);
  if (st.profiler && st.profiler->should_record(op, d.call)) {
    std::vector<const DLTensor*> ins(in.size());
    for (size_t i = 0; i < in.size(); ++i) ins[i] = &in[i];
    const DLTensor* outs[1] = {&o};
    peat_op_record_t rec;
    peat_op_record_init(&rec);
    rec.op = op;
    rec.call_index = d.call;
    rec.attrs = pa.attrs;
    rec.n_attrs = pa.n_attrs;
    rec.inputs = ins.data();
    rec.n_inputs = ins.size();
    rec.outputs = outs;
    rec.n_outputs = 1;
    st.profiler->record_op(rec);
  }
  return out;
}

at::Tensor mm(const at::Tensor& a, const at::Tensor& b) {
  State* st = g_state.load(std::memory_order_acquire);
  if (st == nullptr || !routable(a) || !routable(b) || a.dim() != 2 || b.dim() != 2 ||
      a.scalar_type() != b.scalar_type())
    return at::cpu::mm(a, b);
  return route(*st, st->op_mm, "aten::mm", {a, b}, {a.size(0), b.size(1)}, {});
}

at::Tensor addmm(const at::Tensor& self, const at::Tensor& m1, const at::Tensor& m2, const at::Scalar& beta,
                 const at::Scalar& alpha) {
  State* st = g_state.load(std::memory_order_acquire);
  if (st == nullptr || !routable(self) || !routable(m1) || !routable(m2) || m1.dim() != 2 || m2.dim() != 2 ||
      self.scalar_type() != m1.scalar_type() || m1.scalar_type() != m2.scalar_type())
    return at::cpu::addmm(self, m1, m2, beta, alpha);
  return route(*st, st->op_addmm, "aten::addmm", {self, m1, m2}, {m1.size(0), m2.size(1)},
               {float_attr("beta", beta.toDouble()), float_attr("alpha", alpha.toDouble())});
}

// Output extent of one spatial dimension (the formula of torch.nn.Conv / ConvTranspose).
int64_t conv_extent(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, int64_t op, bool transposed) {
  return transposed ? (in - 1) * s - 2 * p + d * (k - 1) + op + 1 : (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

at::Tensor convolution(const at::Tensor& x, const at::Tensor& w, const c10::optional<at::Tensor>& bias,
                       at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
                       at::IntArrayRef output_padding, int64_t groups) {
  State* st = g_state.load(std::memory_order_acquire);
  const bool has_bias = bias.has_value() && bias->defined();
  const int64_t spatial = x.dim() - 2;
  if (st == nullptr || !routable(x) || !routable(w) || (has_bias && !routable(*bias)) || spatial < 1 ||
      w.dim() != x.dim() || static_cast<int64_t>(stride.size()) != spatial ||
      static_cast<int64_t>(padding.size()) != spatial || static_cast<int64_t>(dilation.size()) != spatial ||
      (transposed && static_cast<int64_t>(output_padding.size()) != spatial))
    return at::compositeexplicitautograd::convolution(x, w, bias, stride, padding, dilation, transposed,
                                                      output_padding, groups);
  std::vector<int64_t> shape{x.size(0), transposed ? w.size(1) * groups : w.size(0)};
  for (int64_t i = 0; i < spatial; ++i)
    shape.push_back(conv_extent(x.size(2 + i), w.size(2 + i), stride[i], padding[i], dilation[i],
                                transposed ? output_padding[i] : 0, transposed));
  std::vector<at::Tensor> inputs{x, w};
  if (has_bias) inputs.push_back(*bias);
  return route(*st, st->op_conv, "aten::convolution", inputs, shape,
               {ints_attr("stride", stride), ints_attr("padding", padding), ints_attr("dilation", dilation),
                int_attr("transposed", transposed ? 1 : 0), ints_attr("output_padding", output_padding),
                int_attr("groups", groups)});
}

}  // namespace

void attach(const Config& config) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto st = std::make_unique<State>();
  if (!config.trace_path.empty()) {
    st->profiler.emplace(st->session, config.trace_path.c_str());
    peat_sample_rule_t rule;
    peat_sample_rule_init(&rule);
    rule.op_glob = "aten::*";
    st->profiler->add_rule(rule);
  }
  if (!config.candidate.empty()) st->injector.set_candidate_symbol(config.candidate_ops.c_str(), config.candidate.c_str());
  if (config.every_n > 0) {
    peat_injector_policy_t p = peat::injector::default_policy();
    p.op_pattern = config.candidate_ops.c_str();
    p.action = config.action;
    p.every_n = config.every_n;
    p.phase_offset = config.phase_offset;
    st->injector.add_policy(p);
  }
  g_state.store(nullptr, std::memory_order_release);
  g_owned = std::move(st);
  g_state.store(g_owned.get(), std::memory_order_release);
}

uint64_t detach() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_state.store(nullptr, std::memory_order_release);
  uint64_t written = 0;
  if (g_owned && g_owned->profiler) {
    g_owned->profiler->close();
    written = g_owned->profiler->stats().records_written;
  }
  g_owned.reset();
  return written;
}

peat::session* session() { return g_owned ? &g_owned->session : nullptr; }
peat::injector* injector() { return g_owned ? &g_owned->injector : nullptr; }

}  // namespace peat_aten

extern "C" int peat_aten_attach(const char* trace, const char* candidate, const char* ops, uint64_t every_n) {
  peat_aten::Config c;
  if (trace) c.trace_path = trace;
  if (candidate) c.candidate = candidate;
  if (ops && *ops) c.candidate_ops = ops;
  c.every_n = every_n;
  try {
    peat_aten::attach(c);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "peat_aten_attach: %s\n", e.what());
    return 1;
  }
}

extern "C" uint64_t peat_aten_detach(void) { return peat_aten::detach(); }

TORCH_LIBRARY_IMPL(aten, CPU, m) {
  m.impl("mm", peat_aten::mm);
  m.impl("addmm", peat_aten::addmm);
  m.impl("convolution", peat_aten::convolution);
}
