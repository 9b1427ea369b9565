// nn.hpp — layers, models and the loss of the example trainer.
//
// Every matrix product goes through Context::gemm and from there to the model's
// GemmDispatcher (gemm.hpp). Layers cache what their backward needs during the
// forward; backward overwrites (does not accumulate) parameter gradients.
#pragma once

#include "gemm.hpp"
#include "tensor.hpp"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace peat_trainer {

// A named trainable tensor and its gradient (same shape). Names are
// "<layer>.<field>", e.g. "conv1.weight", "head.bias".
struct Param {
  std::string name;
  Tensor value;
  Tensor grad;
};

// What a layer needs to issue GEMMs: the dispatcher and where in training we are.
struct Context {
  GemmDispatcher* dispatcher = nullptr;
  int64_t step = 0;
  bool training = true;
};

class Layer {
 public:
  explicit Layer(std::string name) : name_(std::move(name)) {}
  virtual ~Layer() = default;
  const std::string& name() const noexcept { return name_; }
  virtual void forward(Context& ctx, const Tensor& x, Tensor& y) = 0;
  // Given dL/dy, writes dL/dx (when need_dx) and the parameter gradients.
  virtual void backward(Context& ctx, const Tensor& dy, Tensor& dx, bool need_dx) = 0;
  virtual std::vector<Param*> params() { return {}; }
  // Names of the GEMM ops this layer issues (registered in the model's op table):
  // <name>/fwd_gemm, <name>/dgrad_gemm, <name>/wgrad_gemm for Linear and Conv2d.
  const std::vector<std::string>& gemm_ops() const noexcept { return op_names_; }
  // Called by the model with the op-table index of gemm_ops()[0]; the rest follow.
  void set_op_base(uint32_t base) noexcept { op_base_ = base; }

 protected:
  uint32_t op_base_ = 0;
  std::vector<std::string> op_names_;

 private:
  std::string name_;
};

// y = x W^T + b, x [B, in], W [out, in]. GEMM ops: <name>/fwd_gemm, /dgrad_gemm, /wgrad_gemm.
class Linear final : public Layer {
 public:
  Linear(std::string name, int64_t in, int64_t out, Rng& init);
  void forward(Context& ctx, const Tensor& x, Tensor& y) override;
  void backward(Context& ctx, const Tensor& dy, Tensor& dx, bool need_dx) override;
  std::vector<Param*> params() override { return {&weight_, &bias_}; }
  int64_t in_features() const noexcept { return in_; }
  int64_t out_features() const noexcept { return out_; }

 private:
  int64_t in_, out_;
  Param weight_, bias_;
  Tensor x_;  // cached input
};

// 2-D convolution over NHWC input by im2col + GEMM. W [cout, k*k*cin] with the
// column index (kh*k + kw)*cin + c. Zero padding `pad`, stride `stride`.
// GEMM ops: <name>/fwd_gemm (M = B*Ho*Wo, N = cout, K = k*k*cin),
// /dgrad_gemm (dcols = dy W, then col2im), /wgrad_gemm (dW = dy^T cols).
class Conv2d final : public Layer {
 public:
  Conv2d(std::string name, int64_t cin, int64_t cout, int kernel, int stride, int pad, Rng& init);
  void forward(Context& ctx, const Tensor& x, Tensor& y) override;
  void backward(Context& ctx, const Tensor& dy, Tensor& dx, bool need_dx) override;
  std::vector<Param*> params() override { return {&weight_, &bias_}; }

 private:
  int64_t cin_, cout_;
  int k_, stride_, pad_;
  Param weight_, bias_;
  std::vector<int64_t> in_shape_;
  Tensor cols_, dcols_;
};

class ReLU final : public Layer {
 public:
  using Layer::Layer;
  void forward(Context& ctx, const Tensor& x, Tensor& y) override;
  void backward(Context& ctx, const Tensor& dy, Tensor& dx, bool need_dx) override;

 private:
  Tensor y_;
};

// 2x2 max pooling, stride 2, NHWC (height and width even). Ties go to the first maximum.
class MaxPool2 final : public Layer {
 public:
  using Layer::Layer;
  void forward(Context& ctx, const Tensor& x, Tensor& y) override;
  void backward(Context& ctx, const Tensor& dy, Tensor& dx, bool need_dx) override;

 private:
  std::vector<int64_t> in_shape_;
  std::vector<int32_t> argmax_;
};

// [B, ...] -> [B, prod(...)] (NHWC order kept).
class Flatten final : public Layer {
 public:
  using Layer::Layer;
  void forward(Context& ctx, const Tensor& x, Tensor& y) override;
  void backward(Context& ctx, const Tensor& dy, Tensor& dx, bool need_dx) override;

 private:
  std::vector<int64_t> in_shape_;
};

// Mean softmax cross-entropy over a batch of logits [B, C].
struct LossResult {
  double loss = 0;      // mean over the batch
  int64_t correct = 0;  // argmax(logits) == label
};
LossResult softmax_cross_entropy(const Tensor& logits, const int32_t* labels, Tensor* dlogits);

// A sequential model whose last layer is a Linear named "head".
class Model {
 public:
  Model() = default;
  void add(std::unique_ptr<Layer> layer);  // registers the layer's GEMM ops
  Tensor& forward(Context& ctx, const Tensor& x);  // returns the logits (owned by the model)
  void backward(Context& ctx, const Tensor& dlogits);
  std::vector<Param*> params();
  // The op table: index i is GemmCall::op_index for op_names()[i]. Stable for
  // the model's lifetime; replace_head keeps the head's op names and indices.
  const std::vector<std::string>& op_names() const noexcept { return ops_; }
  // Replaces the head by a freshly initialised Linear(in, classes) ("head").
  void replace_head(int64_t classes, uint64_t seed);
  // Parameters by name (views of the model's tensors).
  std::map<std::string, const Tensor*> state() const;
  // Copies the named tensors in; every parameter must be present with its shape
  // unless its name starts with one of `skip_prefixes`. Throws std::runtime_error.
  void load_state(const std::map<std::string, Tensor>& state, const std::vector<std::string>& skip_prefixes = {});
  const std::vector<std::unique_ptr<Layer>>& layers() const noexcept { return layers_; }
  int64_t parameter_count();
  std::string summary();

 private:
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<Tensor> acts_;   // activations: acts_[i] is the output of layer i
  std::vector<Tensor> grads_;  // gradient buffers
  std::vector<std::string> ops_;
};

// 16x16x1 -> 256 -> hidden -> hidden/2 -> classes (ReLU between).
std::unique_ptr<Model> make_mlp(int image_size, int channels, int hidden, int classes, uint64_t seed);
// conv1 3x3 (c1) -> ReLU -> pool -> conv2 3x3 (c2) -> ReLU -> pool -> fc1 (hidden) -> ReLU -> head.
std::unique_ptr<Model> make_cnn(int image_size, int channels, int c1, int c2, int hidden, int classes, uint64_t seed);

}  // namespace peat_trainer
