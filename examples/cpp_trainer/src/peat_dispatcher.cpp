#include "peat_trainer/peat_dispatcher.hpp"

#include "peat_trainer/gemm_kernel.hpp"

#include <stdexcept>
#include <string>

namespace peat_trainer {
namespace {

peat_session_options_t session_options(uint64_t seed) {
  peat_session_options_t so;
  peat_session_options_init(&so);
  so.seed = seed;
  return so;
}

DLTensor view_of(const Tensor& t, int64_t* shape) {
  DLTensor d{};
  d.data = const_cast<float*>(t.ptr());
  d.device = {kDLCPU, 0};
  d.ndim = static_cast<int32_t>(t.shape.size());
  for (size_t i = 0; i < t.shape.size(); ++i) shape[i] = t.shape[i];
  d.shape = shape;
  d.dtype = {kDLFloat, 32, 1};
  return d;
}

}  // namespace

PeatDispatcher::PeatDispatcher(const PeatOptions& options)
    : opt_(options), golden_(options.golden_threads), session_(session_options(options.seed)), injector_(session_) {
  if (!opt_.fi_candidate.empty()) {
    injector_.set_candidate_symbol(opt_.fi_ops.c_str(), opt_.fi_candidate.c_str());
    peat_injector_policy_t p = peat::injector::default_policy();
    p.op_pattern = opt_.fi_ops.c_str();
    p.action = PEAT_ACTION_RUN_CANDIDATE;
    p.every_n = opt_.fi_every == 0 ? 1 : opt_.fi_every;
    if (opt_.training_only) p.phase_mask = (1u << PEAT_PHASE_FORWARD) | (1u << PEAT_PHASE_BACKWARD);
    injector_.add_policy(p);
  }
  if (!opt_.trace.empty()) {
    peat_profiler_options_t po = peat::profiler::default_options();
    po.path = opt_.trace.c_str();
    po.framework = "peat_trainer";
    profiler_.emplace(session_, po);
    peat_sample_rule_t r;
    peat_sample_rule_init(&r);
    r.op_glob = "*";
    r.every_n = opt_.record_every;
    profiler_->add_rule(r);
  }
}

void PeatDispatcher::attach(const Model& model) {
  model_ = &model;
  op_ids_.clear();
  for (const std::string& name : model.op_names()) {
    op_ids_.push_back(session_.intern_op(name.c_str()));
  }
}

void PeatDispatcher::hook(Trainer& trainer) {
  trainer.on_step_begin = [this](int64_t step) {
    if (profiler_) profiler_->mark_step(step);
    else session_.set_step(step);
  };
  auto previous = trainer.on_step;
  trainer.on_step = [this, previous](const StepScalars& s) {
    if (profiler_) {
      profiler_->record_scalar("loss", s.step, s.loss);
      profiler_->record_scalar("accuracy", s.step, s.accuracy);
      profiler_->record_scalar("lr", s.step, s.lr);
    }
    if (previous) previous(s);
  };
}

void PeatDispatcher::gemm(const GemmCall& call) {
  if (call.op_index >= op_ids_.size()) throw std::invalid_argument("PeatDispatcher: op index out of range (attach the model first)");
  const uint32_t op = op_ids_[call.op_index];
  session_.set_phase(static_cast<peat_phase_t>(call.phase));
  GemmTensors t(call);
  GoldenKernelContext ctx{&call, &golden_};
  const auto d = injector_.dispatch(op, t.inputs, 2, t.outputs, 1, &t.attrs, golden_gemm_kernel, &ctx);
  const uint64_t index = d.call;
  if (d.action == PEAT_ACTION_RUN_CANDIDATE) ++candidate_calls_;
  else ++golden_calls_;
  if (!profiler_ || !profiler_->should_record(op, index, call.step)) return;
  const std::string layer(call.layer);
  peat_attr_t attrs[7]{};
  const char* ikeys[5] = {"M", "N", "K", "trans_a", "trans_b"};
  const int64_t ivals[5] = {call.M, call.N, call.K, call.trans_a ? 1 : 0, call.trans_b ? 1 : 0};
  for (int i = 0; i < 5; ++i) {
    attrs[i].key = ikeys[i];
    attrs[i].type = PEAT_ATTR_INT;
    attrs[i].i = ivals[i];
  }
  attrs[5].key = "alpha";
  attrs[5].type = PEAT_ATTR_FLOAT;
  attrs[5].f = call.alpha;
  attrs[6].key = "beta";
  attrs[6].type = PEAT_ATTR_FLOAT;
  attrs[6].f = call.beta;
  const DLTensor* ins[2] = {&t.inputs[0], &t.inputs[1]};
  const DLTensor* outs[1] = {&t.outputs[0]};
  const char* in_names[2] = {"A", "B"};
  const char* out_names[1] = {"C"};
  peat_op_record_t rec;
  peat_op_record_init(&rec);
  rec.op = op;
  rec.call_index = index;
  rec.step = call.step;
  rec.phase = static_cast<peat_phase_t>(call.phase);
  rec.module_path = layer.c_str();
  rec.attrs = attrs;
  rec.n_attrs = 7;
  rec.inputs = ins;
  rec.input_names = in_names;
  rec.n_inputs = 2;
  rec.outputs = outs;
  rec.output_names = out_names;
  rec.n_outputs = 1;
  recorded_ += profiler_->record_op(rec) ? 1 : 0;
}

void PeatDispatcher::checkpoint(const std::string& name, int64_t step, const std::map<std::string, const Tensor*>& state) {
  if (!profiler_) return;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<DLTensor> views;
  std::vector<const char*> names;
  shapes.reserve(state.size());
  views.reserve(state.size());
  for (const auto& [key, tensor] : state) {
    shapes.emplace_back(tensor->shape.size() + 1);
    views.push_back(view_of(*tensor, shapes.back().data()));
    names.push_back(key.c_str());
  }
  std::vector<const DLTensor*> ptrs;
  for (const DLTensor& v : views) ptrs.push_back(&v);
  profiler_->record_checkpoint(name.c_str(), step, names.data(), ptrs.data(), ptrs.size());
}

void PeatDispatcher::close() {
  if (profiler_) profiler_->close();
}

}  // namespace peat_trainer
