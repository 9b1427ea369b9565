#include "peat_trainer/peat_dispatcher.hpp"

#include "peat_trainer/gemm_kernel.hpp"

#include <stdexcept>

namespace peat_trainer {
namespace {

void check(peat_status_t status, const char* what) {
  if (status != PEAT_STATUS_OK) throw std::runtime_error(std::string(what) + ": " + peat_last_error_message());
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

PeatDispatcher::PeatDispatcher(const PeatOptions& options) : opt_(options), golden_(options.golden_threads) {
  peat_session_options_t so;
  peat_session_options_init(&so);
  so.seed = opt_.seed;
  check(peat_session_create(&so, &session_), "peat_session_create");
  try {
    peat_injector_options_t io;
    peat_injector_options_init(&io);
    check(peat_injector_create(session_, &io, &injector_), "peat_injector_create");
    if (!opt_.fi_candidate.empty()) {
      check(peat_injector_set_candidate_symbol(injector_, opt_.fi_ops.c_str(), opt_.fi_candidate.c_str(), nullptr),
            "peat_injector_set_candidate_symbol");
      peat_injector_policy_t p;
      peat_injector_policy_init(&p);
      p.op_pattern = opt_.fi_ops.c_str();
      p.action = PEAT_ACTION_RUN_CANDIDATE;
      p.every_n = opt_.fi_every == 0 ? 1 : opt_.fi_every;
      if (opt_.training_only) p.phase_mask = (1u << PEAT_PHASE_FORWARD) | (1u << PEAT_PHASE_BACKWARD);
      check(peat_injector_add_policy(injector_, &p, nullptr), "peat_injector_add_policy");
    }
    if (!opt_.trace.empty()) {
      peat_profiler_options_t po;
      peat_profiler_options_init(&po);
      po.path = opt_.trace.c_str();
      po.framework = "peat_trainer";
      check(peat_profiler_create(session_, &po, &profiler_), "peat_profiler_create");
      peat_sample_rule_t r;
      peat_sample_rule_init(&r);
      r.op_glob = "*";
      r.every_n = opt_.record_every;
      check(peat_profiler_add_rule(profiler_, &r), "peat_profiler_add_rule");
    }
  } catch (...) {
    peat_profiler_destroy(profiler_);
    peat_injector_destroy(injector_);
    peat_session_destroy(session_);
    throw;
  }
}

PeatDispatcher::~PeatDispatcher() {
  peat_profiler_destroy(profiler_);
  peat_injector_destroy(injector_);
  peat_session_destroy(session_);
}

void PeatDispatcher::attach(const Model& model) {
  model_ = &model;
  op_ids_.clear();
  for (const std::string& name : model.op_names()) {
    uint32_t id = 0;
    check(peat_session_intern_op(session_, name.c_str(), &id), "peat_session_intern_op");
    op_ids_.push_back(id);
  }
}

void PeatDispatcher::hook(Trainer& trainer) {
  trainer.on_step_begin = [this](int64_t step) {
    if (profiler_) check(peat_profiler_mark_step(profiler_, step), "peat_profiler_mark_step");
    else check(peat_session_set_step(session_, step), "peat_session_set_step");
  };
  auto previous = trainer.on_step;
  trainer.on_step = [this, previous](const StepScalars& s) {
    if (profiler_) {
      check(peat_profiler_record_scalar(profiler_, "loss", s.step, s.loss), "peat_profiler_record_scalar");
      check(peat_profiler_record_scalar(profiler_, "accuracy", s.step, s.accuracy), "peat_profiler_record_scalar");
      check(peat_profiler_record_scalar(profiler_, "lr", s.step, s.lr), "peat_profiler_record_scalar");
    }
    if (previous) previous(s);
  };
}

void PeatDispatcher::gemm(const GemmCall& call) {
  if (call.op_index >= op_ids_.size()) throw std::invalid_argument("PeatDispatcher: op index out of range (attach the model first)");
  const uint32_t op = op_ids_[call.op_index];
  check(peat_session_set_phase(session_, static_cast<peat_phase_t>(call.phase)), "peat_session_set_phase");
  GemmTensors t(call);
  GoldenKernelContext ctx{&call, &golden_};
  peat_action_t action = PEAT_ACTION_RUN_GOLDEN;
  uint64_t index = 0;
  check(peat_injector_dispatch(injector_, op, t.inputs, 2, t.outputs, 1, &t.attrs, golden_gemm_kernel, &ctx, &action, &index),
        "peat_injector_dispatch");
  if (action == PEAT_ACTION_RUN_CANDIDATE) ++candidate_calls_;
  else ++golden_calls_;
  if (!profiler_) return;
  int32_t want = 0;
  check(peat_profiler_should_record(profiler_, op, index, call.step, &want), "peat_profiler_should_record");
  if (!want) return;
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
  int32_t done = 0;
  check(peat_profiler_record_op(profiler_, &rec, &done, nullptr), "peat_profiler_record_op");
  recorded_ += done ? 1 : 0;
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
  check(peat_profiler_record_checkpoint(profiler_, name.c_str(), step, names.data(), ptrs.data(), ptrs.size(), nullptr, nullptr),
        "peat_profiler_record_checkpoint");
}

void PeatDispatcher::close() {
  if (profiler_) check(peat_profiler_close(profiler_), "peat_profiler_close");
}

}  // namespace peat_trainer
