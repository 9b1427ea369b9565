// optim.hpp — SGD with momentum and Adam over a model's parameters.
#pragma once

#include "nn.hpp"

#include <map>
#include <memory>
#include <string>

namespace peat_trainer {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // One update of every parameter from its gradient, with learning rate lr.
  virtual void step(const std::vector<Param*>& params, float lr) = 0;
};

// v = momentum * v + (g + weight_decay * p);  p -= lr * v
class Sgd final : public Optimizer {
 public:
  explicit Sgd(float momentum = 0.9f, float weight_decay = 0.0f) : momentum_(momentum), weight_decay_(weight_decay) {}
  void step(const std::vector<Param*>& params, float lr) override;

 private:
  float momentum_, weight_decay_;
  std::map<std::string, Tensor> velocity_;
};

// Adam (Kingma & Ba) with bias correction; weight decay added to the gradient.
class Adam final : public Optimizer {
 public:
  explicit Adam(float beta1 = 0.9f, float beta2 = 0.999f, float eps = 1e-8f, float weight_decay = 0.0f)
      : beta1_(beta1), beta2_(beta2), eps_(eps), weight_decay_(weight_decay) {}
  void step(const std::vector<Param*>& params, float lr) override;

 private:
  float beta1_, beta2_, eps_, weight_decay_;
  int64_t t_ = 0;
  std::map<std::string, Tensor> m_, v_;
};

// "sgd" (momentum 0.9) or "adam" (0.9, 0.999, 1e-8); throws std::invalid_argument otherwise.
std::unique_ptr<Optimizer> make_optimizer(const std::string& name, float weight_decay = 0.0f);

}  // namespace peat_trainer
