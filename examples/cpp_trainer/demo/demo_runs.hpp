// demo_runs.hpp — the training runs of peat_demo: one run is pretraining,
// a checkpoint, a new head and finetuning on a shifted label set, with PEAT
// attached (recording and/or runtime FI); plus each stage's golden noise band
// (the library's peat_noise_band_t) and the checkpoint drift of a run against
// the golden one.
#pragma once

#include "peat_trainer/peat_dispatcher.hpp"

#include <peat/peat.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace peat_demo {

struct Config {
  std::string model = "cnn";
  int epochs = 2, finetune_epochs = 1, batch = 64, shift = 3;
  int64_t train_size = 3000, test_size = 1000, finetune_size = 3000;
  float lr = 2e-3f, finetune_lr = 3e-3f;
  uint64_t seed = 1;
  std::vector<uint64_t> band_order_seeds = {7, 13, 29};  // extra golden runs (batch orders) for the noise band
  double band_widen = 0;  // the band is this times the largest golden deviation; 0: 1 + 1.5 / k (1.5 for k = 3)
  uint64_t record_every = 50;
  int window = 20;  // moving-average window of the loss comparison
};

// The data every run uses (generated once).
struct Data {
  peat_trainer::Dataset train, test, finetune_train, finetune_test;
  static Data make(const Config& cfg);
};

struct StageResult {
  std::vector<double> loss;  // per-step training loss
  double test_loss = 0, test_acc = 0;
};

struct RunResult {
  StageResult pretrain, finetune;
  double finetune_acc_before = 0;  // new head, shifted labels, before finetuning
  double seconds = 0;
  int64_t candidate_calls = 0;
  uint64_t recorded = 0;
  std::map<std::string, peat_trainer::Tensor> final_state;  // parameters after finetuning
};

// Pretrains (batch order `order_seed`), saves the checkpoint to `checkpoint`,
// restores it into a fresh model with a new head and finetunes on the shifted
// labels. PEAT stays attached through both stages (options.seed is set from cfg).
RunResult train_run(const Config& cfg, const Data& data, peat_trainer::PeatOptions options, uint64_t order_seed,
                    const std::string& checkpoint);

// Mean of the last `window` values.
double smoothed_final(const std::vector<double>& v, int window);

// The noise band of one stage (peat_noise_band_t, rule in peat/analyzer.h):
// made from the golden run's loss and the other-order golden runs' (with their
// parameter drift); judges a run's loss of the same stage. Steps are reported
// as global step indices (the stage starts at `first_step`). A stage that did
// not run (no golden loss) has no band: every run is inside it.
class StageBand {
 public:
  StageBand(const std::vector<double>& golden, int window, double widen, int64_t first_step);
  ~StageBand();
  StageBand(const StageBand&) = delete;
  StageBand& operator=(const StageBand&) = delete;
  void add_rerun(const std::vector<double>& loss, double param_drift);
  peat_noise_band_info_t info() const;
  peat_impact_t judge(const std::vector<double>& loss, double param_drift) const;

 private:
  peat_noise_band_t* band_ = nullptr;
  int64_t first_step_ = 0;
};

// One parameter tensor's drift between two checkpoints (peat_compare_checkpoints).
struct TensorDrift {
  std::string tensor;
  uint64_t count = 0;
  double rmse = 0, relative_l2 = 0, max_abs_error = 0;
  double sum_sq_error = 0, sum_sq_golden = 0;  // over the finite pairs: for the drift of all tensors together
};
// sqrt(sum of squared errors / sum of squared golden values) over all tensors.
double total_relative_l2(const std::vector<TensorDrift>& drift);
// Per tensor of `golden` (in name order); throws std::runtime_error with PEAT's message.
std::vector<TensorDrift> checkpoint_drift(const std::map<std::string, peat_trainer::Tensor>& golden,
                                          const std::map<std::string, peat_trainer::Tensor>& candidate);

}  // namespace peat_demo
