// trainer.hpp — mini-batch training and evaluation of a Model on a Dataset.
#pragma once

#include "data.hpp"
#include "nn.hpp"
#include "optim.hpp"

#include <functional>
#include <string>
#include <vector>

namespace peat_trainer {

struct TrainConfig {
  std::string stage = "pretrain";  // reported with every scalar ("pretrain", "finetune")
  std::string optimizer = "adam";  // "adam" or "sgd" (momentum 0.9)
  int epochs = 4;
  int batch = 64;
  float lr = 2e-3f;         // peak learning rate; cosine decay to lr/20 over the stage
  float weight_decay = 0.0f;
  uint64_t seed = 1;        // batch order
  int64_t max_steps = 0;    // stop the stage after this many steps (0: no limit)
};

// Per-step scalars, handed to the step callback after each optimizer step.
struct StepScalars {
  std::string_view stage;
  int64_t step = 0;   // index of the step just taken (0-based, counts across stages): the GemmCall::step of its GEMMs
  int epoch = 0;
  double loss = 0;    // mean batch loss
  double accuracy = 0;  // batch accuracy in [0, 1]
  double lr = 0;
};

struct Evaluation {
  double loss = 0, accuracy = 0;
};

struct EpochResult {
  std::string stage;
  int epoch = 0;
  int64_t steps = 0;  // steps taken (across stages) at the end of the epoch
  double train_loss = 0, train_accuracy = 0;  // averaged over the epoch's batches
  Evaluation test;
  double seconds = 0;  // wall time of the epoch's training (not the evaluation)
};

class Trainer {
 public:
  // The model and dispatcher are borrowed and must outlive the trainer.
  Trainer(Model& model, GemmDispatcher& dispatcher) : model_(&model), dispatcher_(&dispatcher) {}
  void set_dispatcher(GemmDispatcher& dispatcher) noexcept { dispatcher_ = &dispatcher; }
  void set_model(Model& model) noexcept { model_ = &model; }
  std::function<void(int64_t step)> on_step_begin;   // optional: before a training step's first GEMM (its GemmCall::step)
  std::function<void(const StepScalars&)> on_step;   // optional: after the optimizer update
  std::function<void(const EpochResult&)> on_epoch;  // optional

  // Trains for config.epochs over `train` (evaluating on `test` after each epoch).
  std::vector<EpochResult> fit(const Dataset& train, const Dataset& test, const TrainConfig& config);
  Evaluation evaluate(const Dataset& data, int batch = 256);
  // Steps taken so far (across stages) = the index the next step will have.
  int64_t step() const noexcept { return step_; }

 private:
  Model* model_;
  GemmDispatcher* dispatcher_;
  int64_t step_ = 0;
};

}  // namespace peat_trainer
