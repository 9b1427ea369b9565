// Gradient checks of every layer (and of whole models) against central finite
// differences of plainly written double-precision references; the GEMM seam.
#include "reference.hpp"

#include "peat_trainer/nn.hpp"

#include <catch2/catch.hpp>

#include <functional>
#include <random>
#include <string>

using namespace peat_trainer;
using ref::Vec;

namespace {

struct Recorded {
  std::string op, layer;
  uint32_t op_index;
  Phase phase;
  GemmRole role;
  bool training;
  int64_t step, M, N, K;
  bool ta, tb;
};

// Records every call at the seam, then runs the golden GEMM.
struct Recorder final : GemmDispatcher {
  GoldenGemm golden{1};
  std::vector<Recorded> calls;
  void gemm(const GemmCall& c) override {
    calls.push_back({std::string(c.op), std::string(c.layer), c.op_index, c.phase, c.role, c.training, c.step, c.M, c.N, c.K, c.trans_a, c.trans_b});
    golden.gemm(c);
  }
};

Vec to_double(const std::vector<float>& v) { return Vec(v.begin(), v.end()); }

Tensor random_tensor(std::vector<int64_t> shape, std::mt19937& gen, double away_from_zero = 0) {
  Tensor t(std::move(shape));
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (auto& v : t.data) {
    do v = dist(gen);
    while (std::fabs(v) < away_from_zero);
  }
  return t;
}

using RefFn = std::function<Vec(const Vec& x, const std::vector<Vec>& params)>;

// max |analytic - fd| over all entries, and max |fd| (the scale).
struct Agreement {
  double worst = 0, scale = 0;
};

// The gradient of L(x, params) = sum_i r_i * f(x, params)_i by central differences.
template <typename Eval>
Agreement compare_fd(const std::vector<float>& analytic, Vec point, Eval eval, double h = 1e-6) {
  Agreement a;
  REQUIRE(analytic.size() == point.size());
  for (size_t i = 0; i < point.size(); ++i) {
    const double saved = point[i];
    point[i] = saved + h;
    const double up = eval(point);
    point[i] = saved - h;
    const double down = eval(point);
    point[i] = saved;
    const double fd = (up - down) / (2 * h);
    a.worst = std::max(a.worst, std::fabs(analytic[i] - fd));
    a.scale = std::max(a.scale, std::fabs(fd));
  }
  return a;
}

// Forward against f, then dx and every parameter gradient against finite differences.
void gradient_check(Layer& layer, const Tensor& x, const RefFn& f, uint32_t seed) {
  Recorder rec;
  Context ctx{&rec, 7, true};
  std::vector<Param*> params = layer.params();
  const Vec xd = to_double(x.data);
  std::vector<Vec> pd;
  for (Param* p : params) pd.push_back(to_double(p->value.data));

  Tensor y;
  layer.forward(ctx, x, y);
  const Vec yref = f(xd, pd);
  REQUIRE(static_cast<size_t>(y.numel()) == yref.size());
  double worst = 0;
  for (size_t i = 0; i < yref.size(); ++i) worst = std::max(worst, std::fabs(y.data[i] - yref[i]) / (1 + std::fabs(yref[i])));
  CHECK(worst <= 1e-5);

  std::mt19937 gen(seed);
  const Tensor dy = random_tensor(y.shape, gen);
  Tensor dx;
  layer.backward(ctx, dy, dx, true);
  REQUIRE(dx.shape == x.shape);
  auto loss = [&](const Vec& xx, const std::vector<Vec>& pp) {
    const Vec yy = f(xx, pp);
    double s = 0;
    for (size_t i = 0; i < yy.size(); ++i) s += dy.data[i] * yy[i];
    return s;
  };
  const Agreement ax = compare_fd(dx.data, xd, [&](const Vec& xx) { return loss(xx, pd); });
  INFO(layer.name() << " dx: worst " << ax.worst << " scale " << ax.scale);
  CHECK(ax.scale > 0.1);
  CHECK(ax.worst <= 1e-4 * ax.scale);
  for (size_t p = 0; p < params.size(); ++p) {
    const Agreement ap = compare_fd(params[p]->grad.data, pd[p], [&](const Vec& pp) {
      auto all = pd;
      all[p] = pp;
      return loss(xd, all);
    });
    INFO(params[p]->name << ": worst " << ap.worst << " scale " << ap.scale);
    CHECK(ap.scale > 0.1);
    CHECK(ap.worst <= 1e-4 * ap.scale);
  }
}

}  // namespace

TEST_CASE("Linear: forward and gradients against finite differences", "[layers]") {
  std::mt19937 gen(1);
  Rng init(1, 0);
  Linear fc("fc", 7, 5, init);
  for (auto& v : fc.params()[1]->value.data) v = std::normal_distribution<float>(0, 1)(gen);  // non-zero bias
  const Tensor x = random_tensor({4, 7}, gen);
  gradient_check(fc, x, [](const Vec& xx, const std::vector<Vec>& p) { return ref::linear(xx, 4, 7, p[0], p[1], 5); }, 2);
}

TEST_CASE("Conv2d: forward and gradients against finite differences (padding, stride)", "[layers]") {
  struct Case {
    int64_t B, H, W, C, cout;
    int k, stride, pad;
  };
  for (const Case& c : {Case{2, 6, 5, 3, 4, 3, 1, 1}, Case{2, 7, 7, 2, 3, 2, 2, 0}, Case{1, 5, 6, 2, 2, 3, 2, 1}}) {
    std::mt19937 gen(3);
    Rng init(3, 0);
    Conv2d conv("conv", c.C, c.cout, c.k, c.stride, c.pad, init);
    for (auto& v : conv.params()[1]->value.data) v = std::normal_distribution<float>(0, 1)(gen);
    const Tensor x = random_tensor({c.B, c.H, c.W, c.C}, gen);
    gradient_check(
        conv, x,
        [c](const Vec& xx, const std::vector<Vec>& p) {
          int64_t Ho, Wo;
          return ref::conv(xx, c.B, c.H, c.W, c.C, p[0], p[1], c.cout, c.k, c.stride, c.pad, Ho, Wo);
        },
        4);
  }
}

TEST_CASE("ReLU and MaxPool2: forward and gradients against finite differences", "[layers]") {
  std::mt19937 gen(5);
  ReLU relu("relu");
  gradient_check(relu, random_tensor({3, 10}, gen, 1e-3), [](const Vec& xx, const std::vector<Vec>&) { return ref::relu(xx); }, 6);
  // Distinct values (no ties within a window) so the maximum is unambiguous.
  Tensor x({2, 4, 6, 3});
  std::vector<float> values(static_cast<size_t>(x.numel()));
  for (size_t i = 0; i < values.size(); ++i) values[i] = -1.5f + 0.02f * static_cast<float>(i);
  std::shuffle(values.begin(), values.end(), gen);
  x.data = values;
  MaxPool2 pool("pool");
  gradient_check(pool, x, [](const Vec& xx, const std::vector<Vec>&) { return ref::maxpool2(xx, 2, 4, 6, 3); }, 7);
}

TEST_CASE("softmax cross-entropy: loss, accuracy and gradient against finite differences", "[layers]") {
  std::mt19937 gen(8);
  Tensor logits = random_tensor({5, 4}, gen);
  const int32_t labels[5] = {0, 3, 2, 2, 1};
  Tensor dlogits;
  const LossResult r = softmax_cross_entropy(logits, labels, &dlogits);
  const Vec z = to_double(logits.data);
  CHECK(r.loss == Approx(ref::cross_entropy(z, 5, 4, labels)).epsilon(1e-12));
  int64_t correct = 0;
  for (int b = 0; b < 5; ++b) correct += std::max_element(logits.ptr() + 4 * b, logits.ptr() + 4 * b + 4) - (logits.ptr() + 4 * b) == labels[b];
  CHECK(r.correct == correct);
  const Agreement a = compare_fd(dlogits.data, z, [&](const Vec& zz) { return ref::cross_entropy(zz, 5, 4, labels); });
  CHECK(a.worst <= 1e-6 * std::max(1.0, a.scale));
  const int32_t bad[5] = {0, 4, 0, 0, 0};
  CHECK_THROWS_WITH(softmax_cross_entropy(logits, bad, nullptr), Catch::Contains("label 4 out of range"));
}

TEST_CASE("whole CNN and MLP: parameter gradients against finite differences of a double model", "[layers]") {
  std::mt19937 gen(9);
  const int32_t labels[3] = {1, 3, 0};
  SECTION("cnn") {
    // conv1 3x3 (2 -> 3) relu pool, conv2 3x3 (3 -> 4) relu pool, flatten, fc1 (16 -> 5) relu, head (5 -> 4)
    auto model = make_cnn(8, 2, 3, 4, 5, 4, 21);
    auto params = model->params();
    REQUIRE(params.size() == 8);
    const Tensor x = random_tensor({3, 8, 8, 2}, gen);
    auto forward = [&](const std::vector<Vec>& p) {
      int64_t Ho, Wo;
      Vec a = ref::maxpool2(ref::relu(ref::conv(to_double(x.data), 3, 8, 8, 2, p[0], p[1], 3, 3, 1, 1, Ho, Wo)), 3, 8, 8, 3);
      a = ref::maxpool2(ref::relu(ref::conv(a, 3, 4, 4, 3, p[2], p[3], 4, 3, 1, 1, Ho, Wo)), 3, 4, 4, 4);
      a = ref::relu(ref::linear(a, 3, 16, p[4], p[5], 5));
      return ref::linear(a, 3, 5, p[6], p[7], 4);
    };
    std::vector<Vec> pd;
    for (Param* p : params) pd.push_back(to_double(p->value.data));
    Recorder rec;
    Context ctx{&rec, 0, true};
    Tensor dlogits;
    const LossResult r = softmax_cross_entropy(model->forward(ctx, x), labels, &dlogits);
    CHECK(r.loss == Approx(ref::cross_entropy(forward(pd), 3, 4, labels)).epsilon(1e-5));
    model->backward(ctx, dlogits);
    for (size_t i = 0; i < params.size(); ++i) {
      const Agreement a = compare_fd(params[i]->grad.data, pd[i], [&](const Vec& pi) {
        auto all = pd;
        all[i] = pi;
        return ref::cross_entropy(forward(all), 3, 4, labels);
      });
      INFO(params[i]->name << ": worst " << a.worst << " scale " << a.scale);
      CHECK(a.scale > 1e-3);
      CHECK(a.worst <= 1e-3 * a.scale);
    }
  }
  SECTION("mlp") {
    auto model = make_mlp(4, 1, 6, 3, 22);  // 16 -> 6 -> 3 -> 3
    auto params = model->params();
    REQUIRE(params.size() == 6);
    const Tensor x = random_tensor({3, 4, 4, 1}, gen);
    auto forward = [&](const std::vector<Vec>& p) {
      Vec a = ref::relu(ref::linear(to_double(x.data), 3, 16, p[0], p[1], 6));
      a = ref::relu(ref::linear(a, 3, 6, p[2], p[3], 3));
      return ref::linear(a, 3, 3, p[4], p[5], 3);
    };
    const int32_t y3[3] = {1, 2, 0};
    std::vector<Vec> pd;
    for (Param* p : params) pd.push_back(to_double(p->value.data));
    Recorder rec;
    Context ctx{&rec, 0, true};
    Tensor dlogits;
    softmax_cross_entropy(model->forward(ctx, x), y3, &dlogits);
    model->backward(ctx, dlogits);
    for (size_t i = 0; i < params.size(); ++i) {
      const Agreement a = compare_fd(params[i]->grad.data, pd[i], [&](const Vec& pi) {
        auto all = pd;
        all[i] = pi;
        return ref::cross_entropy(forward(all), 3, 3, y3);
      });
      INFO(params[i]->name << ": worst " << a.worst << " scale " << a.scale);
      CHECK(a.worst <= 1e-3 * a.scale + 1e-7);
    }
  }
}

TEST_CASE("every GEMM of a training step and of an evaluation goes through the seam, described", "[seam]") {
  auto model = make_cnn(8, 1, 3, 4, 5, 10, 30);
  const auto& ops = model->op_names();
  REQUIRE(ops.size() == 12);
  CHECK(ops[0] == "conv1/fwd_gemm");
  CHECK(ops[1] == "conv1/dgrad_gemm");
  CHECK(ops[2] == "conv1/wgrad_gemm");
  CHECK(ops[11] == "head/wgrad_gemm");
  Recorder rec;
  Context ctx{&rec, 42, true};
  std::mt19937 gen(31);
  const Tensor x = random_tensor({2, 8, 8, 1}, gen);
  const int32_t labels[2] = {3, 7};
  Tensor dlogits;
  softmax_cross_entropy(model->forward(ctx, x), labels, &dlogits);
  model->backward(ctx, dlogits);
  // (op, phase, role, M, N, K, trans_a, trans_b); the first layer needs no input gradient.
  struct Want {
    const char* op;
    Phase phase;
    GemmRole role;
    int64_t M, N, K;
    bool ta, tb;
  };
  const Want want[] = {
      {"conv1/fwd_gemm", Phase::Forward, GemmRole::Forward, 2 * 64, 3, 9, false, true},
      {"conv2/fwd_gemm", Phase::Forward, GemmRole::Forward, 2 * 16, 4, 27, false, true},
      {"fc1/fwd_gemm", Phase::Forward, GemmRole::Forward, 2, 5, 16, false, true},
      {"head/fwd_gemm", Phase::Forward, GemmRole::Forward, 2, 10, 5, false, true},
      {"head/wgrad_gemm", Phase::Backward, GemmRole::WeightGrad, 10, 5, 2, true, false},
      {"head/dgrad_gemm", Phase::Backward, GemmRole::InputGrad, 2, 5, 10, false, false},
      {"fc1/wgrad_gemm", Phase::Backward, GemmRole::WeightGrad, 5, 16, 2, true, false},
      {"fc1/dgrad_gemm", Phase::Backward, GemmRole::InputGrad, 2, 16, 5, false, false},
      {"conv2/wgrad_gemm", Phase::Backward, GemmRole::WeightGrad, 4, 27, 2 * 16, true, false},
      {"conv2/dgrad_gemm", Phase::Backward, GemmRole::InputGrad, 2 * 16, 27, 4, false, false},
      {"conv1/wgrad_gemm", Phase::Backward, GemmRole::WeightGrad, 3, 9, 2 * 64, true, false},
  };
  REQUIRE(rec.calls.size() == std::size(want));
  for (size_t i = 0; i < rec.calls.size(); ++i) {
    const Recorded& c = rec.calls[i];
    INFO("call " << i << " " << c.op);
    CHECK(c.op == want[i].op);
    CHECK(ops.at(c.op_index) == c.op);
    CHECK(c.layer == c.op.substr(0, c.op.find('/')));
    CHECK(c.phase == want[i].phase);
    CHECK(c.role == want[i].role);
    CHECK(c.training);
    CHECK(c.step == 42);
    CHECK(c.M == want[i].M);
    CHECK(c.N == want[i].N);
    CHECK(c.K == want[i].K);
    CHECK(c.ta == want[i].ta);
    CHECK(c.tb == want[i].tb);
  }
  // An evaluation forward: four forward GEMMs marked training = false, phase Other.
  rec.calls.clear();
  Context eval{&rec, 42, false};
  model->forward(eval, x);
  REQUIRE(rec.calls.size() == 4);
  for (const auto& c : rec.calls) CHECK((!c.training && c.phase == Phase::Other && c.role == GemmRole::Forward));
  // replace_head keeps the head's op names and indices.
  model->replace_head(6, 99);
  rec.calls.clear();
  model->forward(ctx, x);
  CHECK(rec.calls.back().op == "head/fwd_gemm");
  CHECK(rec.calls.back().op_index == 9);
  CHECK(rec.calls.back().N == 6);
}

TEST_CASE("GoldenGemm: transposes, leading dimensions, alpha, beta, thread split", "[seam]") {
  std::mt19937 gen(40);
  std::normal_distribution<float> dist(0, 1);
  for (int threads : {1, 3}) {
    GoldenGemm golden(threads);
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb)
        for (float beta : {0.0f, 0.5f}) {
          const int64_t M = 200, N = 50, K = 64, lda = (ta ? M : K) + 1, ldb = (tb ? K : N) + 2, ldc = N + 3;
          std::vector<float> A((ta ? K : M) * lda), B((tb ? N : K) * ldb), C(M * ldc);
          for (auto& v : A) v = dist(gen);
          for (auto& v : B) v = dist(gen);
          for (auto& v : C) v = beta == 0.0f ? NAN : dist(gen);  // beta = 0: C must not be read
          const std::vector<float> C0 = C;
          GemmCall call;
          call.op = "test/fwd_gemm";
          call.M = M, call.N = N, call.K = K, call.trans_a = ta, call.trans_b = tb, call.alpha = -1.25f, call.beta = beta;
          call.A = A.data(), call.lda = lda, call.B = B.data(), call.ldb = ldb, call.C = C.data(), call.ldc = ldc;
          golden.gemm(call);
          double worst = 0;
          int64_t pad_touched = 0;
          for (int64_t i = 0; i < M; ++i) {
            for (int64_t j = 0; j < N; ++j) {
              double s = 0, abs = 0;
              for (int64_t k = 0; k < K; ++k) {
                const double p = static_cast<double>(ta ? A[k * lda + i] : A[i * lda + k]) * (tb ? B[j * ldb + k] : B[k * ldb + j]);
                s += p;
                abs += std::fabs(p);
              }
              const double want = -1.25 * s + (beta != 0.0f ? beta * C0[i * ldc + j] : 0.0);
              worst = std::max(worst, std::fabs(C[i * ldc + j] - want) / (1.25 * abs + 1));
            }
            for (int64_t j = N; j < ldc; ++j) pad_touched += !(std::isnan(C[i * ldc + j]) && std::isnan(C0[i * ldc + j])) && C[i * ldc + j] != C0[i * ldc + j];
          }
          INFO("threads " << threads << " ta " << ta << " tb " << tb << " beta " << beta);
          CHECK(worst <= 70 * 0x1p-24);
          CHECK(pad_touched == 0);
        }
  }
}

TEST_CASE("GoldenGemm refuses malformed calls naming the op and the field", "[seam]") {
  GoldenGemm golden(1);
  std::vector<float> A(12, 1.0f), B(12, 1.0f), C(9, 0.0f);
  GemmCall c;
  c.op = "fc9/fwd_gemm";
  c.M = 3, c.N = 3, c.K = 4, c.A = A.data(), c.lda = 4, c.B = B.data(), c.ldb = 3, c.C = C.data(), c.ldc = 3;
  golden.gemm(c);
  CHECK(C[0] == 4.0f);
  GemmCall bad = c;
  bad.lda = 3;
  CHECK_THROWS_WITH(golden.gemm(bad), Catch::Contains("'fc9/fwd_gemm'") && Catch::Contains("lda 3 too small for A"));
  bad = c;
  bad.trans_b = true;  // B^T needs ldb >= K = 4
  CHECK_THROWS_WITH(golden.gemm(bad), Catch::Contains("ldb 3 too small for B^T"));
  bad = c;
  bad.ldc = 2;
  CHECK_THROWS_WITH(golden.gemm(bad), Catch::Contains("ldc 2 < N"));
  bad = c;
  bad.K = -1;
  CHECK_THROWS_WITH(golden.gemm(bad), Catch::Contains("negative dimension"));
  bad = c;
  bad.A = nullptr;
  CHECK_THROWS_WITH(golden.gemm(bad), Catch::Contains("A or B is null"));
  bad = c;
  bad.K = 0;  // C = beta * C with beta = 0: zeros, A and B unused
  bad.A = nullptr;
  C.assign(9, 5.0f);
  golden.gemm(bad);
  CHECK(C[8] == 0.0f);
}

TEST_CASE("CandidateDispatcher: the selected ops run the candidate, the rest the fallback", "[seam]") {
  static int calls = 0;
  const CGemmFn fake = [](int, int, int64_t M, int64_t N, int64_t, float, const float*, int64_t, const float*, int64_t, float, float* C, int64_t ldc) {
    ++calls;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = 0.0f;
  };
  Recorder rec;
  CandidateDispatcher cand(fake, [](const GemmCall& c) { return c.op.find("head/") == 0; }, &rec);
  auto model = make_mlp(4, 1, 6, 3, 50);
  Context ctx{&cand, 0, true};
  std::mt19937 gen(51);
  const Tensor x = random_tensor({2, 4, 4, 1}, gen);
  Tensor& logits = model->forward(ctx, x);
  // The head's fwd GEMM went to the candidate (zeros), so the logits are the head bias: zero at init.
  for (float v : logits.data) CHECK(v == 0.0f);
  CHECK(cand.candidate_calls() == 1);
  CHECK(cand.fallback_calls() == 2);
  CHECK(calls == 1);
  CHECK(rec.calls.size() == 2);
  CHECK_THROWS(CandidateDispatcher(nullptr, {}, &rec));
}
