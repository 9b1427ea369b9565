#include "peat_trainer/optim.hpp"

#include <Eigen/Core>

#include <cmath>
#include <stdexcept>

namespace peat_trainer {

namespace {
using ArrMap = Eigen::Map<Eigen::ArrayXf>;
using ConstArrMap = Eigen::Map<const Eigen::ArrayXf>;

Tensor& state_for(std::map<std::string, Tensor>& states, const Param& p) {
  auto it = states.find(p.name);
  if (it == states.end() || it->second.shape != p.value.shape) it = states.insert_or_assign(p.name, Tensor(p.value.shape)).first;
  return it->second;
}
}  // namespace

void Sgd::step(const std::vector<Param*>& params, float lr) {
  for (Param* p : params) {
    const int64_t n = p->value.numel();
    ArrMap w(p->value.ptr(), n);
    ConstArrMap g(p->grad.ptr(), n);
    ArrMap v(state_for(velocity_, *p).ptr(), n);
    v = momentum_ * v + (g + weight_decay_ * w);
    w -= lr * v;
  }
}

void Adam::step(const std::vector<Param*>& params, float lr) {
  ++t_;
  const float c1 = 1.0f - std::pow(beta1_, static_cast<float>(t_));
  const float c2 = 1.0f - std::pow(beta2_, static_cast<float>(t_));
  for (Param* p : params) {
    const int64_t n = p->value.numel();
    ArrMap w(p->value.ptr(), n);
    ConstArrMap g0(p->grad.ptr(), n);
    ArrMap m(state_for(m_, *p).ptr(), n);
    ArrMap v(state_for(v_, *p).ptr(), n);
    const Eigen::ArrayXf g = g0 + weight_decay_ * w;
    m = beta1_ * m + (1.0f - beta1_) * g;
    v = beta2_ * v + (1.0f - beta2_) * g.square();
    w -= lr * (m / c1) / ((v / c2).sqrt() + eps_);
  }
}

std::unique_ptr<Optimizer> make_optimizer(const std::string& name, float weight_decay) {
  if (name == "sgd") return std::make_unique<Sgd>(0.9f, weight_decay);
  if (name == "adam") return std::make_unique<Adam>(0.9f, 0.999f, 1e-8f, weight_decay);
  throw std::invalid_argument("unknown optimizer '" + name + "' (expected 'sgd' or 'adam')");
}

}  // namespace peat_trainer
