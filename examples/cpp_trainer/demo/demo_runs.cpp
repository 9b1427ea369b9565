#include "demo_runs.hpp"

#include "peat_trainer/checkpoint.hpp"
#include "peat_trainer/trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>

using namespace peat_trainer;

namespace peat_demo {

namespace {

std::unique_ptr<Model> build(const Config& cfg, uint64_t seed) {
  return cfg.model == "cnn" ? make_cnn(16, 1, 16, 32, 64, kShapeClasses, seed) : make_mlp(16, 1, 128, kShapeClasses, seed);
}

DLTensor view_of(const Tensor& t, std::vector<int64_t>& shape) {
  shape = t.shape;
  DLTensor d{};
  d.data = const_cast<float*>(t.ptr());
  d.device = {kDLCPU, 0};
  d.ndim = static_cast<int32_t>(shape.size());
  d.shape = shape.data();
  d.dtype = {kDLFloat, 32, 1};
  return d;
}

}  // namespace

Data Data::make(const Config& cfg) {
  DataOptions dopt;
  Data d;
  d.train = make_shapes_dataset(cfg.train_size, cfg.seed, dopt);
  d.test = make_shapes_dataset(cfg.test_size, cfg.seed + 1000003, dopt);
  // The finetuning task: new images of the same kind, labels shifted (as peat_train does).
  d.finetune_train = shift_labels(make_shapes_dataset(cfg.finetune_size, cfg.seed + 2000003, dopt), cfg.shift);
  d.finetune_test = shift_labels(d.test, cfg.shift);
  return d;
}

RunResult train_run(const Config& cfg, const Data& data, PeatOptions popt, uint64_t order_seed, const std::string& checkpoint) {
  auto model = build(cfg, cfg.seed);
  popt.seed = cfg.seed;
  PeatDispatcher pd(popt);
  pd.attach(*model);
  Trainer trainer(*model, pd);
  RunResult r;
  StageResult* stage = &r.pretrain;
  trainer.on_step = [&](const StepScalars& s) { stage->loss.push_back(s.loss); };
  pd.hook(trainer);
  TrainConfig tc;
  tc.stage = "pretrain";
  tc.epochs = cfg.epochs;
  tc.batch = cfg.batch;
  tc.lr = cfg.lr;
  tc.seed = order_seed;
  const auto t0 = std::chrono::steady_clock::now();
  const auto pre = trainer.fit(data.train, data.test, tc);
  r.pretrain.test_loss = pre.back().test.loss;
  r.pretrain.test_acc = pre.back().test.accuracy;
  save_checkpoint(checkpoint, model->state());
  pd.checkpoint("pretrain", trainer.step(), model->state());

  if (cfg.finetune_epochs > 0) {
    // A fresh model restored from the checkpoint file, with a new head.
    auto tuned = build(cfg, cfg.seed + 1);
    tuned->load_state(load_checkpoint(checkpoint), {"head."});
    tuned->replace_head(kShapeClasses, cfg.seed + 2);
    trainer.set_model(*tuned);
    pd.attach(*tuned);
    r.finetune_acc_before = trainer.evaluate(data.finetune_test).accuracy;
    stage = &r.finetune;
    TrainConfig ft = tc;
    ft.stage = "finetune";
    ft.epochs = cfg.finetune_epochs;
    ft.lr = cfg.finetune_lr;
    ft.seed = order_seed + 3;
    const auto fin = trainer.fit(data.finetune_train, data.finetune_test, ft);
    r.finetune.test_loss = fin.back().test.loss;
    r.finetune.test_acc = fin.back().test.accuracy;
    model = std::move(tuned);
    pd.checkpoint("finetune", trainer.step(), model->state());
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  pd.close();
  for (const auto& [name, t] : model->state()) r.final_state.emplace(name, *t);
  r.candidate_calls = pd.candidate_calls();
  r.recorded = pd.recorded();
  return r;
}

double smoothed_final(const std::vector<double>& v, int window) {
  const size_t n = std::min<size_t>(v.size(), static_cast<size_t>(window));
  double s = 0;
  for (size_t i = v.size() - n; i < v.size(); ++i) s += v[i];
  return n ? s / static_cast<double>(n) : NAN;
}

namespace {

void check_band(peat_status_t s, const char* what) {
  if (s != PEAT_STATUS_OK) throw std::runtime_error(std::string(what) + ": " + peat_last_error_message());
}

}  // namespace

StageBand::StageBand(const std::vector<double>& golden, int window, double widen, int64_t first_step)
    : first_step_(first_step) {
  if (golden.empty()) return;
  peat_noise_band_options_t o;
  peat_noise_band_options_init(&o);
  o.window = window;
  o.widen = widen;
  check_band(peat_noise_band_create(golden.data(), golden.size(), &o, &band_), "peat_noise_band_create");
}

StageBand::~StageBand() { peat_noise_band_destroy(band_); }

void StageBand::add_rerun(const std::vector<double>& loss, double param_drift) {
  if (band_) check_band(peat_noise_band_add_rerun(band_, loss.data(), loss.size(), param_drift), "peat_noise_band_add_rerun");
}

peat_noise_band_info_t StageBand::info() const {
  peat_noise_band_info_t i{};
  i.struct_size = sizeof i;
  if (band_) check_band(peat_noise_band_info(band_, &i), "peat_noise_band_info");
  return i;
}

peat_impact_t StageBand::judge(const std::vector<double>& loss, double param_drift) const {
  peat_impact_t r{};
  r.struct_size = sizeof r;
  r.first_beyond_step = -1;
  r.max_deviation_step = -1;
  r.verdict = PEAT_IMPACT_INSIDE_NOISE;
  if (!band_ || loss.empty()) return r;
  std::vector<int64_t> steps(loss.size());
  for (size_t i = 0; i < steps.size(); ++i) steps[i] = first_step_ + static_cast<int64_t>(i);
  check_band(peat_noise_band_judge(band_, loss.data(), loss.size(), steps.data(), param_drift, &r), "peat_noise_band_judge");
  return r;
}

std::vector<TensorDrift> checkpoint_drift(const std::map<std::string, Tensor>& golden, const std::map<std::string, Tensor>& candidate) {
  std::vector<std::vector<int64_t>> shapes(golden.size() + candidate.size());
  std::vector<DLTensor> views;
  views.reserve(shapes.size());
  std::vector<peat_named_tensor_t> g, c;
  size_t k = 0;
  for (const auto& [name, t] : golden) {
    views.push_back(view_of(t, shapes[k++]));
    g.push_back({name.c_str(), &views.back()});
  }
  for (const auto& [name, t] : candidate) {
    views.push_back(view_of(t, shapes[k++]));
    c.push_back({name.c_str(), &views.back()});
  }
  const size_t cap = g.size() + c.size();
  std::vector<peat_tensor_drift_t> out(cap);
  std::vector<peat_signature_t> sig(cap);
  for (auto& s : sig) peat_signature_init(&s);
  size_t n = 0;
  if (peat_compare_checkpoints(g.data(), g.size(), c.data(), c.size(), nullptr, out.data(), sig.data(), cap, &n) != PEAT_STATUS_OK)
    throw std::runtime_error(std::string("peat_compare_checkpoints: ") + peat_last_error_message());
  std::vector<TensorDrift> drift;
  for (size_t i = 0; i < n; ++i) {
    if (out[i].status != PEAT_STATUS_OK)
      throw std::runtime_error(std::string("checkpoint drift: tensor '") + out[i].name + "' cannot be compared (" +
                               peat_status_string(out[i].status) + ")");
    TensorDrift d;
    d.tensor = out[i].name;
    d.count = sig[i].count;
    d.max_abs_error = sig[i].max_abs_error;
    peat_signature_rmse(&sig[i], &d.rmse);
    peat_signature_relative_l2(&sig[i], &d.relative_l2);
    peat_signature_sums_t sums{};
    sums.struct_size = sizeof sums;
    peat_signature_read_sums(&sig[i], &sums);
    d.sum_sq_error = sums.sum_sq_error;
    d.sum_sq_golden = sums.sum_sq_golden;
    drift.push_back(std::move(d));
  }
  return drift;
}

double total_relative_l2(const std::vector<TensorDrift>& drift) {
  double e = 0, g = 0;
  for (const TensorDrift& d : drift) {
    e += d.sum_sq_error;
    g += d.sum_sq_golden;
  }
  return g > 0 ? std::sqrt(e / g) : (e > 0 ? INFINITY : 0.0);
}

}  // namespace peat_demo
