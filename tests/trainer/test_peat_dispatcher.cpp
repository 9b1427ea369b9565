// PeatDispatcher, the trainer's PEAT glue: every GEMM goes through the injector
// and, when a trace is open, the sampled calls are recorded with their
// attributes and operands; a candidate is swapped in exactly on the schedule;
// attached with nothing to do it is a pass-through (same bits as GoldenGemm).
#include "peat_trainer/peat_dispatcher.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace peat_trainer;

namespace {

std::string temp_path(const std::string& name) { return std::string(PEAT_TRAINER_TEST_DIR) + "/" + name; }

// One GEMM of `model`'s op `op_index`: C[M x N] = alpha * A[M x K] * B^T (B stored N x K).
struct Call {
  std::vector<float> A, B, C;
  GemmCall call;
  Call(const Model& model, uint32_t op_index, int64_t M, int64_t N, int64_t K, float alpha, uint32_t seed, Phase phase = Phase::Forward) {
    A.resize(static_cast<size_t>(M * K));
    B.resize(static_cast<size_t>(N * K));
    C.assign(static_cast<size_t>(M * N), -7.0f);
    for (size_t i = 0; i < A.size(); ++i) A[i] = static_cast<float>(((i * 7 + seed * 13) % 17)) / 8.0f - 1.0f;
    for (size_t i = 0; i < B.size(); ++i) B[i] = static_cast<float>(((i * 5 + seed * 3) % 11)) / 4.0f - 1.25f;
    call.op = model.op_names()[op_index];
    call.layer = "fc1";
    call.op_index = op_index;
    call.phase = phase;
    call.training = phase != Phase::Other;
    call.step = 3;
    call.M = M;
    call.N = N;
    call.K = K;
    call.trans_b = true;
    call.alpha = alpha;
    call.A = A.data();
    call.lda = K;
    call.B = B.data();
    call.ldb = K;
    call.C = C.data();
    call.ldc = N;
  }
  // The same product through the golden GEMM, into a fresh buffer.
  std::vector<float> golden() const {
    std::vector<float> out(C.size(), -7.0f);
    GemmCall g = call;
    g.C = out.data();
    GoldenGemm(1).gemm(g);
    return out;
  }
};

int64_t attr_int(const peat_trace_reader_t* r, uint64_t rec, uint64_t i, const char* key) {
  peat_attr_t a{};
  REQUIRE(peat_trace_attr(r, rec, i, &a) == PEAT_STATUS_OK);
  CHECK(std::string(a.key) == key);
  REQUIRE(a.type == PEAT_ATTR_INT);
  return a.i;
}

double attr_float(const peat_trace_reader_t* r, uint64_t rec, uint64_t i, const char* key) {
  peat_attr_t a{};
  REQUIRE(peat_trace_attr(r, rec, i, &a) == PEAT_STATUS_OK);
  CHECK(std::string(a.key) == key);
  REQUIRE(a.type == PEAT_ATTR_FLOAT);
  return a.f;
}

std::vector<float> load(const peat_trace_reader_t* r, uint64_t rec, peat_trace_slot_t slot, uint64_t i, std::vector<int64_t>& shape) {
  DLManagedTensor* t = nullptr;
  REQUIRE(peat_trace_load_tensor_alloc(r, rec, slot, i, &t) == PEAT_STATUS_OK);
  const DLTensor& d = t->dl_tensor;
  shape.assign(d.shape, d.shape + d.ndim);
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<float> v(static_cast<const float*>(d.data), static_cast<const float*>(d.data) + n);
  peat_trace_tensor_free(t);
  return v;
}

}  // namespace

TEST_CASE("PeatDispatcher records each sampled GEMM with its attributes and operands", "[peat_dispatcher]") {
  const auto model = make_mlp(16, 1, 32, 10, 1);
  const std::string path = temp_path("peat_dispatcher_record.peat");
  PeatOptions o;
  o.trace = path;
  o.record_every = 2;  // calls 0 and 2 of each op
  {
    PeatDispatcher pd(o);
    pd.attach(*model);
    std::vector<std::vector<float>> expected;
    for (uint32_t c = 0; c < 3; ++c) {
      Call k(*model, 1, 5, 4, 3, 0.5f, c);
      pd.gemm(k.call);
      CHECK(k.C == k.golden());  // the golden result propagates
      expected.push_back(k.C);
    }
    Call other(*model, 0, 2, 3, 4, 1.0f, 9);
    pd.gemm(other.call);
    CHECK(pd.golden_calls() == 4);
    CHECK(pd.candidate_calls() == 0);
    CHECK(pd.recorded() == 3);  // op 1: calls 0 and 2; op 0: call 0
    pd.close();

    peat_trace_reader_t* r = nullptr;
    REQUIRE(peat_trace_open(path.c_str(), nullptr, &r) == PEAT_STATUS_OK);
    peat_trace_filter_t f;
    peat_trace_filter_init(&f);
    f.kinds = 1u << PEAT_TRACE_KIND_OP;
    std::vector<uint64_t> recs;
    for (uint64_t i = 0; peat_trace_next(r, &f, i, &i) == PEAT_STATUS_OK; ++i) recs.push_back(i);
    REQUIRE(recs.size() == 3);
    for (size_t n = 0; n < 2; ++n) {
      const uint64_t rec = recs[n];
      peat_trace_record_info_t info{};
      info.struct_size = sizeof info;
      REQUIRE(peat_trace_record_info(r, rec, &info) == PEAT_STATUS_OK);
      CHECK(std::string(info.name) == model->op_names()[1]);
      CHECK(std::string(info.module_path) == "fc1");
      CHECK(info.call_index == 2 * n);
      CHECK(info.step == 3);
      CHECK(info.phase == PEAT_PHASE_FORWARD);
      REQUIRE(info.n_attrs == 7);
      CHECK(attr_int(r, rec, 0, "M") == 5);
      CHECK(attr_int(r, rec, 1, "N") == 4);
      CHECK(attr_int(r, rec, 2, "K") == 3);
      CHECK(attr_int(r, rec, 3, "trans_a") == 0);
      CHECK(attr_int(r, rec, 4, "trans_b") == 1);
      CHECK(attr_float(r, rec, 5, "alpha") == 0.5);
      CHECK(attr_float(r, rec, 6, "beta") == 0.0);
      // Inputs are op(A) [M, K] and op(B) [K, N]; the output is C.
      std::vector<int64_t> shape;
      const Call k(*model, 1, 5, 4, 3, 0.5f, static_cast<uint32_t>(2 * n));
      CHECK(load(r, rec, PEAT_TRACE_SLOT_INPUT, 0, shape) == k.A);
      CHECK(shape == std::vector<int64_t>{5, 3});
      const std::vector<float> bt = load(r, rec, PEAT_TRACE_SLOT_INPUT, 1, shape);
      CHECK(shape == std::vector<int64_t>{3, 4});
      for (int64_t kk = 0; kk < 3; ++kk)
        for (int64_t j = 0; j < 4; ++j) CHECK(bt[static_cast<size_t>(kk * 4 + j)] == k.B[static_cast<size_t>(j * 3 + kk)]);
      CHECK(load(r, rec, PEAT_TRACE_SLOT_OUTPUT, 0, shape) == expected[2 * n]);
      CHECK(shape == std::vector<int64_t>{5, 4});
    }
    peat_trace_close(r);
  }
  std::remove(path.c_str());
}

TEST_CASE("PeatDispatcher swaps the candidate in exactly on the injector's schedule", "[peat_dispatcher]") {
  const auto model = make_mlp(16, 1, 32, 10, 1);
  PeatOptions o;
  // The candidate that forgets alpha: with alpha = 0.5 its result is twice the golden one.
  o.fi_candidate = std::string(PEAT_CANDIDATES_LIBRARY) + ":peat_cand_no_alpha_kernel";
  o.fi_every = 3;  // calls 0, 3, 6, ... of each selected op
  o.fi_ops = model->op_names()[1];
  PeatDispatcher pd(o);
  pd.attach(*model);
  int64_t candidate = 0;
  for (uint32_t c = 0; c < 9; ++c) {
    // Call 6 is an evaluation forward: runtime FI applies to training phases only.
    Call k(*model, 1, 6, 5, 4, 0.5f, c, c == 6 ? Phase::Other : Phase::Forward);
    pd.gemm(k.call);
    const std::vector<float> g = k.golden();
    const bool on_schedule = c % 3 == 0 && c != 6;
    INFO("call " << c);
    if (on_schedule) {
      ++candidate;
      // (its own summation order: equal to twice the golden result up to rounding)
      for (size_t i = 0; i < g.size(); ++i) CHECK(k.C[i] == Approx(2.0f * g[i]).margin(1e-5));
      CHECK(k.C != g);
    } else {
      CHECK(k.C == g);
    }
    // Other ops never see the candidate.
    Call other(*model, 0, 3, 2, 4, 0.5f, c);
    pd.gemm(other.call);
    CHECK(other.C == other.golden());
  }
  CHECK(candidate == 2);
  CHECK(pd.candidate_calls() == 2);
  CHECK(pd.golden_calls() == 16);
  uint64_t firings = 0;
  REQUIRE(peat_injector_firing_count(pd.injector(), &firings, nullptr) == PEAT_STATUS_OK);
  CHECK(firings == 2);
}

TEST_CASE("PeatDispatcher attached with nothing to do is a pass-through", "[peat_dispatcher]") {
  // A short training run through GoldenGemm and through an idle PeatDispatcher:
  // the same parameters bit for bit, no candidate call, nothing recorded.
  const Dataset train = make_shapes_dataset(256, 5);
  const Dataset test = make_shapes_dataset(64, 6);
  TrainConfig tc;
  tc.epochs = 1;
  tc.batch = 32;
  auto run = [&](GemmDispatcher* d, PeatDispatcher* pd) {
    auto model = make_cnn(16, 1, 4, 8, 16, 10, 3);
    if (pd) pd->attach(*model);
    Trainer t(*model, *d);
    if (pd) pd->hook(t);
    t.fit(train, test, tc);
    std::vector<float> flat;
    for (const auto& [name, tensor] : model->state()) flat.insert(flat.end(), tensor->data.begin(), tensor->data.end());
    return flat;
  };
  GoldenGemm golden(1);
  const std::vector<float> a = run(&golden, nullptr);
  PeatDispatcher pd(PeatOptions{});
  const std::vector<float> b = run(&pd, &pd);
  REQUIRE(a.size() == b.size());
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
  CHECK(pd.candidate_calls() == 0);
  CHECK(pd.golden_calls() > 0);
  CHECK(pd.recorded() == 0);
  CHECK(pd.profiler() == nullptr);
  uint64_t firings = 1;
  REQUIRE(peat_injector_firing_count(pd.injector(), &firings, nullptr) == PEAT_STATUS_OK);
  CHECK(firings == 0);
}
