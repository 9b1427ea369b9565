// The trainer end to end: data, optimizers, checkpoints, a training run that must
// reach a stated accuracy, finetuning with a new head, determinism, the callbacks.
#include "peat_candidates.h"
#include "peat_trainer/checkpoint.hpp"
#include "peat_trainer/trainer.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>

using namespace peat_trainer;

namespace {

// Forwards to the golden GEMM and remembers the step of the last training call.
struct StepSpy final : GemmDispatcher {
  GoldenGemm golden{1};
  int64_t last_training_step = -1;
  int64_t mismatched_eval = 0;
  void gemm(const GemmCall& c) override {
    if (c.training) last_training_step = c.step;
    else mismatched_eval += c.phase != Phase::Other;
    golden.gemm(c);
  }
};

std::string temp_path(const std::string& name) { return std::string(PEAT_TRAINER_TEST_DIR) + "/" + name; }

std::vector<float> flat_params(Model& m) {
  std::vector<float> all;
  for (Param* p : m.params()) all.insert(all.end(), p->value.data.begin(), p->value.data.end());
  return all;
}

}  // namespace

TEST_CASE("the shapes set is reproducible, balanced and noisy", "[data]") {
  const Dataset a = make_shapes_dataset(200, 5), b = make_shapes_dataset(200, 5), c = make_shapes_dataset(200, 6);
  CHECK(a.images == b.images);
  CHECK(a.labels == b.labels);
  CHECK(a.images != c.images);
  CHECK(a.height == 16);
  CHECK(a.width == 16);
  CHECK(a.channels == 1);
  CHECK(a.images.size() == 200u * 256u);
  std::vector<int> count(10, 0);
  for (int32_t y : a.labels) ++count.at(y);
  for (int n : count) CHECK(n == 20);
  // Image i depends on (seed, i) only: a longer set starts with the same images.
  const Dataset longer = make_shapes_dataset(300, 5);
  CHECK(std::equal(a.images.begin(), a.images.end(), longer.images.begin()));
  const Dataset shifted = shift_labels(a, 3);
  for (size_t i = 0; i < a.labels.size(); ++i) CHECK(shifted.labels[i] == (a.labels[i] + 3) % 10);
  CHECK(shifted.images == a.images);
  CHECK(std::string(shape_class_name(7)) == "checkerboard");
  CHECK_THROWS(make_shapes_dataset(10, 1, DataOptions{4, 0.1, 0.5}));
}

TEST_CASE("SGD with momentum and Adam follow their update rules", "[optim]") {
  Param p{"w", Tensor({3}), Tensor({3})};
  p.value.data = {1.0f, -2.0f, 0.5f};
  p.grad.data = {0.5f, 1.0f, -4.0f};
  SECTION("sgd") {
    Sgd sgd(0.9f, 0.1f);
    sgd.step({&p}, 0.1f);
    // v = g + wd*w ; w -= lr*v
    CHECK(p.value.data[0] == Approx(1.0 - 0.1 * (0.5 + 0.1 * 1.0)));
    const float v1 = 1.0f + 0.1f * -2.0f, w1 = -2.0f - 0.1f * v1;
    sgd.step({&p}, 0.1f);
    CHECK(p.value.data[1] == Approx(w1 - 0.1 * (0.9 * v1 + (1.0 + 0.1 * w1))));
  }
  SECTION("adam") {
    Adam adam;
    adam.step({&p}, 0.01f);
    // First step: m_hat = g, v_hat = g^2, so every weight moves by lr * sign(g).
    CHECK(p.value.data[0] == Approx(1.0 - 0.01).epsilon(1e-6));
    CHECK(p.value.data[1] == Approx(-2.0 - 0.01).epsilon(1e-6));
    CHECK(p.value.data[2] == Approx(0.5 + 0.01).epsilon(1e-6));
    p.grad.data = {0.5f, 0.0f, 0.0f};
    adam.step({&p}, 0.01f);
    const double m = (0.9 * 0.1 * 0.5 + 0.1 * 0.5) / (1 - 0.81), v = (0.999 * 0.001 * 0.25 + 0.001 * 0.25) / (1 - 0.998001);
    CHECK(p.value.data[0] == Approx(0.99 - 0.01 * m / (std::sqrt(v) + 1e-8)).epsilon(1e-6));
  }
  CHECK_THROWS_WITH(make_optimizer("rmsprop"), Catch::Contains("unknown optimizer 'rmsprop'"));
}

TEST_CASE("checkpoints round-trip named tensors and bad files or shapes are refused with a message", "[checkpoint]") {
  auto model = make_cnn(16, 1, 4, 8, 16, 10, 3);
  const std::string path = temp_path("roundtrip.ckpt");
  save_checkpoint(path, model->state());
  const auto loaded = load_checkpoint(path);
  REQUIRE(loaded.size() == 8);
  for (const auto& [name, t] : model->state()) {
    REQUIRE(loaded.count(name));
    CHECK(loaded.at(name).shape == t->shape);
    CHECK(loaded.at(name).data == t->data);
  }
  auto other = make_cnn(16, 1, 4, 8, 16, 10, 4);
  CHECK(flat_params(*other) != flat_params(*model));
  other->load_state(loaded);
  CHECK(flat_params(*other) == flat_params(*model));
  // A model with another head size: refused unless the head is skipped.
  auto five = make_cnn(16, 1, 4, 8, 16, 5, 4);
  CHECK_THROWS_WITH(five->load_state(loaded), Catch::Contains("'head.weight' has shape [10,16]"));
  five->load_state(loaded, {"head."});
  // Truncated and foreign files.
  {
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    std::ofstream(temp_path("truncated.ckpt"), std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2));
    std::ofstream(temp_path("foreign.ckpt"), std::ios::binary) << "not a checkpoint";
  }
  CHECK_THROWS_WITH(load_checkpoint(temp_path("truncated.ckpt")), Catch::Contains("truncated.ckpt"));
  CHECK_THROWS_WITH(load_checkpoint(temp_path("foreign.ckpt")), Catch::Contains("not a PEATCKP1 checkpoint"));
  CHECK_THROWS_WITH(load_checkpoint(temp_path("missing.ckpt")), Catch::Contains("cannot open"));
  std::remove(path.c_str());
}

TEST_CASE("the CNN pretrains to >= 70% in 150 steps and finetunes a new head on shifted labels to >= 60%", "[training]") {
  // Seed 1, 3200 training images, batch 64, Adam 2e-3: about 80% test accuracy after 150 steps (chance: 10%).
  const Dataset train = make_shapes_dataset(3200, 1), test = make_shapes_dataset(1000, 1000004);
  auto model = make_cnn(16, 1, 16, 32, 64, 10, 1);
  StepSpy golden;
  Trainer trainer(*model, golden);
  std::vector<StepScalars> steps;
  int64_t step_mismatch = 0;
  trainer.on_step = [&](const StepScalars& s) {
    steps.push_back(s);
    step_mismatch += s.step != golden.last_training_step;  // the scalars' step is the step its GEMMs carried
  };
  std::vector<int64_t> begun;
  trainer.on_step_begin = [&](int64_t step) { begun.push_back(step); };
  int epochs_seen = 0;
  trainer.on_epoch = [&](const EpochResult&) { ++epochs_seen; };
  TrainConfig cfg;
  cfg.epochs = 3;
  cfg.lr = 2e-3f;
  const Evaluation before = trainer.evaluate(test);
  const auto results = trainer.fit(train, test, cfg);
  REQUIRE(results.size() == 3);
  CHECK(epochs_seen == 3);
  CHECK(trainer.step() == 150);
  CHECK(before.accuracy < 0.2);
  CHECK(results.back().test.accuracy >= 0.70);
  CHECK(results.back().test.loss < before.loss);
  // One scalar record per step, in order, with the cosine schedule from lr to lr/20.
  REQUIRE(steps.size() == 150);
  for (size_t i = 0; i < steps.size(); ++i) {
    CHECK(steps[i].step == static_cast<int64_t>(i));
    CHECK(std::isfinite(steps[i].loss));
    CHECK((steps[i].accuracy >= 0 && steps[i].accuracy <= 1));
    CHECK(steps[i].stage == "pretrain");
  }
  CHECK(step_mismatch == 0);
  CHECK(golden.mismatched_eval == 0);
  REQUIRE(begun.size() == 150);
  CHECK(begun.front() == 0);
  CHECK(begun.back() == 149);  // the step index the step's GEMM calls carry, and on_step's
  CHECK(steps.front().lr == Approx(2e-3));
  CHECK(steps.back().lr == Approx(1e-4));
  CHECK(steps[75].lr < steps[74].lr);

  // Finetune: restore into a fresh model, new head, labels shifted by 3.
  const std::string path = temp_path("pretrained.ckpt");
  save_checkpoint(path, model->state());
  auto tuned = make_cnn(16, 1, 16, 32, 64, 10, 2);
  tuned->load_state(load_checkpoint(path), {"head."});
  tuned->replace_head(10, 3);
  const Dataset ft_train = shift_labels(make_shapes_dataset(1600, 2000003), 3), ft_test = shift_labels(test, 3);
  trainer.set_model(*tuned);
  const Evaluation ft_before = trainer.evaluate(ft_test);
  TrainConfig ft = cfg;
  ft.stage = "finetune";
  ft.epochs = 2;
  ft.lr = 3e-3f;
  const auto ft_results = trainer.fit(ft_train, ft_test, ft);
  CHECK(trainer.step() == 200);
  CHECK(steps.back().stage == "finetune");
  CHECK(ft_before.accuracy < 0.25);
  CHECK(ft_results.back().test.accuracy >= 0.60);
  std::remove(path.c_str());
}

TEST_CASE("training is deterministic for a seed and thread split while another batch order changes it (max_steps stops a stage)", "[training]") {
  const Dataset train = make_shapes_dataset(640, 7), test = make_shapes_dataset(100, 8);
  auto run = [&](int threads, uint64_t order_seed) {
    auto model = make_cnn(16, 1, 8, 8, 16, 10, 9);
    GoldenGemm golden(threads);
    Trainer trainer(*model, golden);
    TrainConfig cfg;
    cfg.epochs = 2;
    cfg.max_steps = 12;
    cfg.batch = 32;
    cfg.seed = order_seed;
    cfg.optimizer = "sgd";
    cfg.lr = 0.02f;
    trainer.fit(train, test, cfg);
    CHECK(trainer.step() == 12);
    return flat_params(*model);
  };
  const auto a = run(2, 1), b = run(2, 1);
  CHECK(a == b);
  // Row-splitting the golden GEMM keeps every element's reduction order (for these shapes).
  CHECK(run(1, 1) == a);
  const auto c = run(2, 2);  // another batch order
  CHECK(a != c);
}

TEST_CASE("a candidate kernel at the seam: a rounding candidate trains like the golden GEMM", "[training]") {
  const Dataset train = make_shapes_dataset(640, 7), test = make_shapes_dataset(200, 8);
  auto run = [&](GemmDispatcher& d) {
    auto model = make_mlp(16, 1, 32, 10, 9);
    Trainer trainer(*model, d);
    TrainConfig cfg;
    cfg.epochs = 2;
    cfg.batch = 32;
    trainer.fit(train, test, cfg);
    return std::make_pair(flat_params(*model), trainer.evaluate(test).accuracy);
  };
  GoldenGemm golden(1);
  const auto [golden_params, golden_acc] = run(golden);
  CandidateDispatcher blocked(peat_cand_blocked, {}, &golden);
  const auto [blocked_params, blocked_acc] = run(blocked);
  CHECK(blocked.fallback_calls() == 0);
  CHECK(blocked.candidate_calls() > 100);
  // Different bits, nearly the same model.
  CHECK(blocked_params != golden_params);
  double diff = 0, norm = 0;
  for (size_t i = 0; i < golden_params.size(); ++i) {
    diff += std::pow(blocked_params[i] - golden_params[i], 2);
    norm += std::pow(golden_params[i], 2);
  }
  CHECK(std::sqrt(diff / norm) < 1e-3);
  CHECK(std::fabs(blocked_acc - golden_acc) <= 0.03);
}
