#include "peat_trainer/nn.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace peat_trainer {

namespace {

using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatMap = Eigen::Map<RowMajor>;
using ConstMatMap = Eigen::Map<const RowMajor>;
using VecMap = Eigen::Map<Eigen::VectorXf>;
using ConstVecMap = Eigen::Map<const Eigen::VectorXf>;

enum OpSlot : uint32_t { kFwd = 0, kDgrad = 1, kWgrad = 2 };
const char* const kOpSuffix[3] = {"/fwd_gemm", "/dgrad_gemm", "/wgrad_gemm"};

struct GemmShape {
  int64_t M, N, K;
  bool ta, tb;
  const float* A;
  int64_t lda;
  const float* B;
  int64_t ldb;
  float* C;
  int64_t ldc;
};

// Builds the GemmCall of one layer op and hands it to the dispatcher.
void issue(Context& ctx, const std::vector<std::string>& ops, const std::string& layer, uint32_t op_base, OpSlot slot,
           const GemmShape& s) {
  if (ctx.dispatcher == nullptr) throw std::logic_error("Context has no GemmDispatcher");
  GemmCall c;
  c.op = ops[slot];
  c.layer = layer;
  c.op_index = op_base + slot;
  c.phase = !ctx.training ? Phase::Other : (slot == kFwd ? Phase::Forward : Phase::Backward);
  c.role = slot == kFwd ? GemmRole::Forward : (slot == kDgrad ? GemmRole::InputGrad : GemmRole::WeightGrad);
  c.training = ctx.training;
  c.step = ctx.step;
  c.M = s.M;
  c.N = s.N;
  c.K = s.K;
  c.trans_a = s.ta;
  c.trans_b = s.tb;
  c.alpha = 1.0f;
  c.beta = 0.0f;
  c.A = s.A;
  c.lda = s.lda;
  c.B = s.B;
  c.ldb = s.ldb;
  c.C = s.C;
  c.ldc = s.ldc;
  ctx.dispatcher->gemm(c);
}

std::vector<std::string> op_names_for(const std::string& layer) {
  return {layer + kOpSuffix[0], layer + kOpSuffix[1], layer + kOpSuffix[2]};
}

void he_init(Tensor& w, int64_t fan_in, Rng& rng) {
  const double stddev = std::sqrt(2.0 / static_cast<double>(fan_in));
  for (auto& v : w.data) v = static_cast<float>(stddev * rng.normal());
}

void check_rank(const Tensor& x, size_t rank, const std::string& who) {
  if (x.shape.size() != rank) throw std::invalid_argument(who + ": expected a rank-" + std::to_string(rank) + " input, got " + x.shape_string());
}

}  // namespace

// ---- Linear -----------------------------------------------------------------------

Linear::Linear(std::string name, int64_t in, int64_t out, Rng& init) : Layer(std::move(name)), in_(in), out_(out) {
  weight_ = {this->name() + ".weight", Tensor({out, in}), Tensor({out, in})};
  bias_ = {this->name() + ".bias", Tensor({out}), Tensor({out})};
  he_init(weight_.value, in, init);
  op_names_ = op_names_for(this->name());
}

void Linear::forward(Context& ctx, const Tensor& x, Tensor& y) {
  if (x.shape.empty() || x.numel() != x.shape[0] * in_)
    throw std::invalid_argument(name() + ": input " + x.shape_string() + " does not have " + std::to_string(in_) + " features");
  const int64_t batch = x.shape[0];
  x_ = x;
  y.resize({batch, out_});
  const auto& ops = op_names_;
  issue(ctx, ops, name(), op_base_, kFwd, {batch, out_, in_, false, true, x.ptr(), in_, weight_.value.ptr(), in_, y.ptr(), out_});
  MatMap(y.ptr(), batch, out_).rowwise() += ConstVecMap(bias_.value.ptr(), out_).transpose();
}

void Linear::backward(Context& ctx, const Tensor& dy, Tensor& dx, bool need_dx) {
  const int64_t batch = x_.shape[0];
  if (dy.numel() != batch * out_) throw std::invalid_argument(name() + ": gradient " + dy.shape_string() + " does not match the output");
  const auto& ops = op_names_;
  issue(ctx, ops, name(), op_base_, kWgrad, {out_, in_, batch, true, false, dy.ptr(), out_, x_.ptr(), in_, weight_.grad.ptr(), in_});
  VecMap(bias_.grad.ptr(), out_) = ConstMatMap(dy.ptr(), batch, out_).colwise().sum().transpose();
  if (need_dx) {
    dx.resize(x_.shape);
    issue(ctx, ops, name(), op_base_, kDgrad, {batch, in_, out_, false, false, dy.ptr(), out_, weight_.value.ptr(), in_, dx.ptr(), in_});
  }
}

// ---- Conv2d -----------------------------------------------------------------------

Conv2d::Conv2d(std::string name, int64_t cin, int64_t cout, int kernel, int stride, int pad, Rng& init)
    : Layer(std::move(name)), cin_(cin), cout_(cout), k_(kernel), stride_(stride), pad_(pad) {
  if (kernel < 1 || stride < 1 || pad < 0) throw std::invalid_argument(this->name() + ": bad kernel/stride/pad");
  const int64_t kk = int64_t{kernel} * kernel * cin;
  weight_ = {this->name() + ".weight", Tensor({cout, kk}), Tensor({cout, kk})};
  bias_ = {this->name() + ".bias", Tensor({cout}), Tensor({cout})};
  he_init(weight_.value, kk, init);
  op_names_ = op_names_for(this->name());
}

void Conv2d::forward(Context& ctx, const Tensor& x, Tensor& y) {
  check_rank(x, 4, name());
  if (x.shape[3] != cin_) throw std::invalid_argument(name() + ": input " + x.shape_string() + " has the wrong channel count");
  in_shape_ = x.shape;
  const int64_t B = x.shape[0], H = x.shape[1], W = x.shape[2];
  const int64_t Ho = (H + 2 * pad_ - k_) / stride_ + 1, Wo = (W + 2 * pad_ - k_) / stride_ + 1;
  if (Ho <= 0 || Wo <= 0) throw std::invalid_argument(name() + ": input " + x.shape_string() + " smaller than the kernel");
  const int64_t kk = int64_t{k_} * k_ * cin_, M = B * Ho * Wo;
  cols_.resize({M, kk});
  // im2col: row (b, oh, ow), column (kh, kw, c).
  float* col = cols_.ptr();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t oh = 0; oh < Ho; ++oh)
      for (int64_t ow = 0; ow < Wo; ++ow)
        for (int kh = 0; kh < k_; ++kh) {
          const int64_t ih = oh * stride_ - pad_ + kh;
          for (int kw = 0; kw < k_; ++kw) {
            const int64_t iw = ow * stride_ - pad_ + kw;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) {
              std::fill(col, col + cin_, 0.0f);
            } else {
              const float* src = x.ptr() + ((b * H + ih) * W + iw) * cin_;
              std::copy(src, src + cin_, col);
            }
            col += cin_;
          }
        }
  y.resize({B, Ho, Wo, cout_});
  const auto& ops = op_names_;
  issue(ctx, ops, name(), op_base_, kFwd, {M, cout_, kk, false, true, cols_.ptr(), kk, weight_.value.ptr(), kk, y.ptr(), cout_});
  MatMap(y.ptr(), M, cout_).rowwise() += ConstVecMap(bias_.value.ptr(), cout_).transpose();
}

void Conv2d::backward(Context& ctx, const Tensor& dy, Tensor& dx, bool need_dx) {
  const int64_t B = in_shape_[0], H = in_shape_[1], W = in_shape_[2];
  const int64_t Ho = (H + 2 * pad_ - k_) / stride_ + 1, Wo = (W + 2 * pad_ - k_) / stride_ + 1;
  const int64_t kk = int64_t{k_} * k_ * cin_, M = B * Ho * Wo;
  if (dy.numel() != M * cout_) throw std::invalid_argument(name() + ": gradient " + dy.shape_string() + " does not match the output");
  const auto& ops = op_names_;
  issue(ctx, ops, name(), op_base_, kWgrad, {cout_, kk, M, true, false, dy.ptr(), cout_, cols_.ptr(), kk, weight_.grad.ptr(), kk});
  VecMap(bias_.grad.ptr(), cout_) = ConstMatMap(dy.ptr(), M, cout_).colwise().sum().transpose();
  if (!need_dx) return;
  dcols_.resize({M, kk});
  issue(ctx, ops, name(), op_base_, kDgrad, {M, kk, cout_, false, false, dy.ptr(), cout_, weight_.value.ptr(), kk, dcols_.ptr(), kk});
  // col2im: scatter-add the column gradients back onto the input.
  dx.resize(in_shape_);
  dx.zero();
  const float* col = dcols_.ptr();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t oh = 0; oh < Ho; ++oh)
      for (int64_t ow = 0; ow < Wo; ++ow)
        for (int kh = 0; kh < k_; ++kh) {
          const int64_t ih = oh * stride_ - pad_ + kh;
          for (int kw = 0; kw < k_; ++kw) {
            const int64_t iw = ow * stride_ - pad_ + kw;
            if (ih >= 0 && ih < H && iw >= 0 && iw < W) {
              float* dst = dx.ptr() + ((b * H + ih) * W + iw) * cin_;
              for (int64_t c = 0; c < cin_; ++c) dst[c] += col[c];
            }
            col += cin_;
          }
        }
}

// ---- ReLU, MaxPool2, Flatten ---------------------------------------------------------

void ReLU::forward(Context&, const Tensor& x, Tensor& y) {
  y.resize(x.shape);
  Eigen::Map<Eigen::ArrayXf>(y.ptr(), y.numel()) = Eigen::Map<const Eigen::ArrayXf>(x.ptr(), x.numel()).max(0.0f);
  y_ = y;
}

void ReLU::backward(Context&, const Tensor& dy, Tensor& dx, bool need_dx) {
  if (!need_dx) return;
  dx.resize(y_.shape);
  const int64_t n = dx.numel();
  for (int64_t i = 0; i < n; ++i) dx.data[i] = y_.data[i] > 0.0f ? dy.data[i] : 0.0f;
}

void MaxPool2::forward(Context&, const Tensor& x, Tensor& y) {
  check_rank(x, 4, name());
  const int64_t B = x.shape[0], H = x.shape[1], W = x.shape[2], C = x.shape[3];
  if (H % 2 || W % 2) throw std::invalid_argument(name() + ": height and width must be even, got " + x.shape_string());
  in_shape_ = x.shape;
  const int64_t Ho = H / 2, Wo = W / 2;
  y.resize({B, Ho, Wo, C});
  argmax_.resize(static_cast<size_t>(y.numel()));
  int64_t o = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t oh = 0; oh < Ho; ++oh)
      for (int64_t ow = 0; ow < Wo; ++ow)
        for (int64_t c = 0; c < C; ++c, ++o) {
          float best = -std::numeric_limits<float>::infinity();
          int64_t at = 0;
          for (int dh = 0; dh < 2; ++dh)
            for (int dw = 0; dw < 2; ++dw) {
              const int64_t i = ((b * H + 2 * oh + dh) * W + 2 * ow + dw) * C + c;
              if (x.data[i] > best || (dh == 0 && dw == 0)) {
                best = x.data[i];
                at = i;
              }
            }
          y.data[o] = best;
          argmax_[o] = static_cast<int32_t>(at);
        }
}

void MaxPool2::backward(Context&, const Tensor& dy, Tensor& dx, bool need_dx) {
  if (!need_dx) return;
  dx.resize(in_shape_);
  dx.zero();
  for (size_t o = 0; o < argmax_.size(); ++o) dx.data[argmax_[o]] += dy.data[o];
}

void Flatten::forward(Context&, const Tensor& x, Tensor& y) {
  if (x.shape.empty()) throw std::invalid_argument(name() + ": scalar input");
  in_shape_ = x.shape;
  y.data = x.data;
  y.shape = {x.shape[0], x.shape[0] ? x.numel() / x.shape[0] : 0};
}

void Flatten::backward(Context&, const Tensor& dy, Tensor& dx, bool need_dx) {
  if (!need_dx) return;
  dx.data = dy.data;
  dx.shape = in_shape_;
}

// ---- loss -----------------------------------------------------------------------------

LossResult softmax_cross_entropy(const Tensor& logits, const int32_t* labels, Tensor* dlogits) {
  if (logits.shape.size() != 2) throw std::invalid_argument("softmax_cross_entropy: logits must be [batch, classes], got " + logits.shape_string());
  const int64_t B = logits.shape[0], C = logits.shape[1];
  if (dlogits) dlogits->resize(logits.shape);
  LossResult r;
  double total = 0;
  for (int64_t b = 0; b < B; ++b) {
    const float* z = logits.ptr() + b * C;
    const int32_t y = labels[b];
    if (y < 0 || y >= C) throw std::invalid_argument("softmax_cross_entropy: label " + std::to_string(y) + " out of range");
    int64_t arg = 0;
    for (int64_t c = 1; c < C; ++c)
      if (z[c] > z[arg]) arg = c;
    r.correct += arg == y;
    const double m = z[arg];
    double sum = 0;
    for (int64_t c = 0; c < C; ++c) sum += std::exp(static_cast<double>(z[c]) - m);
    const double lse = m + std::log(sum);
    total += lse - z[y];
    if (dlogits) {
      float* g = dlogits->ptr() + b * C;
      for (int64_t c = 0; c < C; ++c)
        g[c] = static_cast<float>((std::exp(static_cast<double>(z[c]) - lse) - (c == y ? 1.0 : 0.0)) / static_cast<double>(B));
    }
  }
  r.loss = B ? total / static_cast<double>(B) : 0.0;
  return r;
}

// ---- Model -----------------------------------------------------------------------------

void Model::add(std::unique_ptr<Layer> layer) {
  const auto& ops = layer->gemm_ops();
  layer->set_op_base(static_cast<uint32_t>(ops_.size()));
  ops_.insert(ops_.end(), ops.begin(), ops.end());
  layers_.push_back(std::move(layer));
  acts_.resize(layers_.size());
  grads_.resize(layers_.size());
}

Tensor& Model::forward(Context& ctx, const Tensor& x) {
  if (layers_.empty()) throw std::logic_error("Model::forward: no layers");
  for (size_t i = 0; i < layers_.size(); ++i) layers_[i]->forward(ctx, i == 0 ? x : acts_[i - 1], acts_[i]);
  return acts_.back();
}

void Model::backward(Context& ctx, const Tensor& dlogits) {
  for (size_t i = layers_.size(); i-- > 0;) {
    const Tensor& dy = i + 1 == layers_.size() ? dlogits : grads_[i];
    Tensor scratch;
    layers_[i]->backward(ctx, dy, i > 0 ? grads_[i - 1] : scratch, i > 0);
  }
}

std::vector<Param*> Model::params() {
  std::vector<Param*> all;
  for (auto& l : layers_) {
    auto p = l->params();
    all.insert(all.end(), p.begin(), p.end());
  }
  return all;
}

void Model::replace_head(int64_t classes, uint64_t seed) {
  auto* head = layers_.empty() ? nullptr : dynamic_cast<Linear*>(layers_.back().get());
  if (head == nullptr || head->name() != "head") throw std::logic_error("Model::replace_head: the last layer is not a Linear named 'head'");
  Rng init(seed, 0x4EADu);
  auto fresh = std::make_unique<Linear>("head", head->in_features(), classes, init);
  fresh->set_op_base(static_cast<uint32_t>(ops_.size() - 3));
  layers_.back() = std::move(fresh);
}

std::map<std::string, const Tensor*> Model::state() const {
  std::map<std::string, const Tensor*> s;
  for (auto& l : layers_)
    for (Param* p : l->params()) s[p->name] = &p->value;
  return s;
}

void Model::load_state(const std::map<std::string, Tensor>& state, const std::vector<std::string>& skip_prefixes) {
  for (Param* p : params()) {
    bool skip = false;
    for (const auto& prefix : skip_prefixes) skip = skip || p->name.rfind(prefix, 0) == 0;
    if (skip) continue;
    auto it = state.find(p->name);
    if (it == state.end()) throw std::runtime_error("load_state: no tensor '" + p->name + "' in the checkpoint");
    if (it->second.shape != p->value.shape)
      throw std::runtime_error("load_state: '" + p->name + "' has shape " + it->second.shape_string() + " in the checkpoint, the model wants " +
                               p->value.shape_string());
    p->value.data = it->second.data;
  }
}

int64_t Model::parameter_count() {
  int64_t n = 0;
  for (Param* p : params()) n += p->value.numel();
  return n;
}

std::string Model::summary() {
  std::ostringstream os;
  for (auto& l : layers_) {
    os << "  " << l->name();
    for (Param* p : l->params()) os << "  " << p->name << p->value.shape_string();
    os << "\n";
  }
  os << "  " << parameter_count() << " parameters, " << ops_.size() << " GEMM ops";
  return os.str();
}

std::unique_ptr<Model> make_mlp(int image_size, int channels, int hidden, int classes, uint64_t seed) {
  auto m = std::make_unique<Model>();
  Rng init(seed, 0x4D4Cu);
  const int64_t in = int64_t{image_size} * image_size * channels;
  m->add(std::make_unique<Flatten>("flatten"));
  m->add(std::make_unique<Linear>("fc1", in, hidden, init));
  m->add(std::make_unique<ReLU>("relu1"));
  m->add(std::make_unique<Linear>("fc2", hidden, hidden / 2, init));
  m->add(std::make_unique<ReLU>("relu2"));
  m->add(std::make_unique<Linear>("head", hidden / 2, classes, init));
  return m;
}

std::unique_ptr<Model> make_cnn(int image_size, int channels, int c1, int c2, int hidden, int classes, uint64_t seed) {
  if (image_size % 4) throw std::invalid_argument("make_cnn: image size must be a multiple of 4");
  auto m = std::make_unique<Model>();
  Rng init(seed, 0xC44u);
  m->add(std::make_unique<Conv2d>("conv1", channels, c1, 3, 1, 1, init));
  m->add(std::make_unique<ReLU>("relu1"));
  m->add(std::make_unique<MaxPool2>("pool1"));
  m->add(std::make_unique<Conv2d>("conv2", c1, c2, 3, 1, 1, init));
  m->add(std::make_unique<ReLU>("relu2"));
  m->add(std::make_unique<MaxPool2>("pool2"));
  m->add(std::make_unique<Flatten>("flatten"));
  const int64_t flat = int64_t{image_size / 4} * (image_size / 4) * c2;
  m->add(std::make_unique<Linear>("fc1", flat, hidden, init));
  m->add(std::make_unique<ReLU>("relu3"));
  m->add(std::make_unique<Linear>("head", hidden, classes, init));
  return m;
}

}  // namespace peat_trainer
