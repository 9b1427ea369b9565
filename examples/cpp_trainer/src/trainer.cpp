#include "peat_trainer/trainer.hpp"

#include <chrono>
#include <cmath>
#include <numeric>

namespace peat_trainer {

namespace {

// Copies rows `order[first, first + count)` of the set into a batch.
void gather(const Dataset& d, const std::vector<int64_t>& order, int64_t first, int64_t count, Tensor& x, std::vector<int32_t>& y) {
  x.resize({count, d.height, d.width, d.channels});
  y.resize(static_cast<size_t>(count));
  const int64_t sz = d.image_size();
  for (int64_t i = 0; i < count; ++i) {
    const int64_t src = order[static_cast<size_t>(first + i)];
    std::copy_n(d.images.data() + src * sz, sz, x.ptr() + i * sz);
    y[static_cast<size_t>(i)] = d.labels[static_cast<size_t>(src)];
  }
}

}  // namespace

Evaluation Trainer::evaluate(const Dataset& data, int batch) {
  Context ctx{dispatcher_, step_, false};
  std::vector<int64_t> order(static_cast<size_t>(data.n));
  std::iota(order.begin(), order.end(), 0);
  Tensor x;
  std::vector<int32_t> y;
  double loss = 0;
  int64_t correct = 0;
  for (int64_t first = 0; first < data.n; first += batch) {
    const int64_t count = std::min<int64_t>(batch, data.n - first);
    gather(data, order, first, count, x, y);
    const auto r = softmax_cross_entropy(model_->forward(ctx, x), y.data(), nullptr);
    loss += r.loss * static_cast<double>(count);
    correct += r.correct;
  }
  Evaluation e;
  if (data.n > 0) {
    e.loss = loss / static_cast<double>(data.n);
    e.accuracy = static_cast<double>(correct) / static_cast<double>(data.n);
  }
  return e;
}

std::vector<EpochResult> Trainer::fit(const Dataset& train, const Dataset& test, const TrainConfig& config) {
  auto optimizer = make_optimizer(config.optimizer, config.weight_decay);
  const int64_t per_epoch = (train.n + config.batch - 1) / config.batch;
  int64_t total = per_epoch * config.epochs;
  if (config.max_steps > 0 && config.max_steps < total) total = config.max_steps;
  std::vector<int64_t> order(static_cast<size_t>(train.n));
  std::vector<EpochResult> results;
  Tensor x, dlogits;
  std::vector<int32_t> y;
  int64_t taken = 0;
  for (int epoch = 0; epoch < config.epochs && taken < total; ++epoch) {
    const auto t0 = std::chrono::steady_clock::now();
    // Seeded Fisher-Yates shuffle per epoch.
    std::iota(order.begin(), order.end(), 0);
    Rng shuffle(config.seed, 0x5000u + static_cast<uint32_t>(epoch));
    for (int64_t i = train.n - 1; i > 0; --i) std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(shuffle.below(i + 1))]);
    double loss_sum = 0;
    int64_t correct = 0, seen = 0;
    for (int64_t first = 0; first < train.n && taken < total; first += config.batch, ++taken) {
      const int64_t count = std::min<int64_t>(config.batch, train.n - first);
      gather(train, order, first, count, x, y);
      // Cosine decay from lr to lr/20 over the stage.
      const double progress = total > 1 ? static_cast<double>(taken) / static_cast<double>(total - 1) : 0.0;
      const double lr = config.lr * (0.05 + 0.95 * 0.5 * (1.0 + std::cos(3.141592653589793 * progress)));
      if (on_step_begin) on_step_begin(step_);
      Context ctx{dispatcher_, step_, true};
      const auto r = softmax_cross_entropy(model_->forward(ctx, x), y.data(), &dlogits);
      model_->backward(ctx, dlogits);
      auto params = model_->params();
      optimizer->step(params, static_cast<float>(lr));
      loss_sum += r.loss * static_cast<double>(count);
      correct += r.correct;
      seen += count;
      if (on_step) on_step(StepScalars{config.stage, step_, epoch, r.loss, static_cast<double>(r.correct) / static_cast<double>(count), lr});
      ++step_;
    }
    EpochResult e;
    e.stage = config.stage;
    e.epoch = epoch;
    e.steps = step_;
    e.train_loss = seen ? loss_sum / static_cast<double>(seen) : 0;
    e.train_accuracy = seen ? static_cast<double>(correct) / static_cast<double>(seen) : 0;
    e.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    e.test = evaluate(test);
    results.push_back(e);
    if (on_epoch) on_epoch(e);
  }
  return results;
}

}  // namespace peat_trainer
