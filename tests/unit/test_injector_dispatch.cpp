// Candidate dispatch: what each action runs and propagates, the analyzer's
// comparison in the firing log, candidates that fail / write NaN / are
// missing, the stale-data fill from the previous call, shared-object
// candidates, the JSON-lines log, and 8 threads dispatching at once.
#include <catch2/catch.hpp>

#include "injector_test_util.hpp"

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

using namespace peat_test;

namespace {

const std::string kCandidates = PEAT_TEST_CANDIDATES;

// The golden kernel: output[0] = input[0] + 1 (compact f32).
int32_t golden_plus_one(void*, const DLTensor* in, int32_t n_in, DLTensor* out, int32_t n_out, const void*) {
  if (n_in != 1 || n_out != 1) return 5;
  const int64_t n = in[0].shape[0] * (in[0].ndim > 1 ? in[0].shape[1] : 1);
  const float* src = static_cast<const float*>(in[0].data);
  float* dst = static_cast<float*>(out[0].data);
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i] + 1.0f;
  return 0;
}
int32_t golden_fails(void*, const DLTensor*, int32_t, DLTensor*, int32_t, const void*) { return 17; }

struct Fixture {
  peat_session_t* session = nullptr;
  peat_injector_t* injector = nullptr;
  explicit Fixture(uint32_t max_logged = 4096) {
    REQUIRE(peat_session_create(nullptr, &session) == PEAT_STATUS_OK);
    peat_injector_options_t o;
    peat_injector_options_init(&o);
    o.max_firings_logged = max_logged;
    REQUIRE(peat_injector_create(session, &o, &injector) == PEAT_STATUS_OK);
  }
  ~Fixture() {
    peat_injector_destroy(injector);
    peat_session_destroy(session);
  }
  uint32_t op(const char* name) {
    uint32_t id = 0;
    REQUIRE(peat_session_intern_op(session, name, &id) == PEAT_STATUS_OK);
    return id;
  }
  void policy(const char* pattern, peat_action_t action, uint64_t every_n = 1, const peat_inject_spec_t* spec = nullptr,
              uint64_t phase_offset = 0) {
    peat_injector_policy_t p;
    peat_injector_policy_init(&p);
    p.op_pattern = pattern;
    p.action = action;
    p.every_n = every_n;
    p.phase_offset = phase_offset;
    p.spec = spec;
    INFO(peat_last_error_message());
    REQUIRE(peat_injector_add_policy(injector, &p, nullptr) == PEAT_STATUS_OK);
  }
  void candidate(const char* pattern, const char* symbol, void* ctx = nullptr) {
    const std::string spec = kCandidates + ":" + symbol;
    INFO(peat_last_error_message());
    REQUIRE(peat_injector_set_candidate_symbol(injector, pattern, spec.c_str(), ctx) == PEAT_STATUS_OK);
  }
  peat_firing_t firing(uint64_t i) {
    peat_firing_t f{};
    f.struct_size = sizeof f;
    REQUIRE(peat_injector_firing(injector, i, &f) == PEAT_STATUS_OK);
    return f;
  }
  uint64_t firings() {
    uint64_t n = 0;
    REQUIRE(peat_injector_firing_count(injector, &n, nullptr) == PEAT_STATUS_OK);
    return n;
  }
};

struct Io {
  HostTensor in{f32(), {8, 16}}, out{f32(), {8, 16}};
  explicit Io(uint64_t salt = 1) { in.fill_pattern(salt); }
  peat_action_t dispatch(Fixture& f, uint32_t op, uint64_t* call = nullptr, peat_kernel_fn golden = golden_plus_one,
                         const void* attrs = nullptr) {
    peat_action_t action = PEAT_ACTION_INVALID;
    const peat_status_t s = peat_injector_dispatch(f.injector, op, &in.t, 1, &out.t, 1, attrs, golden, nullptr, &action, call);
    INFO(peat_last_error_message());
    REQUIRE(s == PEAT_STATUS_OK);
    return action;
  }
  bool holds_golden() const {
    for (int64_t i = 0; i < in.numel(); ++i)
      if (out.value(i) != static_cast<float>(in.value(i) + 1.0f)) return false;
    return true;
  }
};

}  // namespace

TEST_CASE("dispatch: golden when nothing fires, no log entry", "[injector][dispatch]") {
  Fixture f;
  const uint32_t op = f.op("gemm");
  f.candidate("*", "peat_test_scaled");
  Io io;
  uint64_t call = 9;
  CHECK(io.dispatch(f, op, &call) == PEAT_ACTION_RUN_GOLDEN);
  CHECK(call == 0);
  CHECK(io.holds_golden());
  CHECK(f.firings() == 0);
}

TEST_CASE("dispatch RUN_BOTH: golden propagates, the pair is compared", "[injector][dispatch]") {
  Fixture f;
  const uint32_t op = f.op("layer1.gemm");
  f.policy("layer*.gemm", PEAT_ACTION_RUN_BOTH, 2);
  // Golden copies the input; the candidate returns the next float above it.
  f.candidate("layer?.gemm", "peat_test_next_ulp");
  Io io;
  const auto copy_golden = [](void*, const DLTensor* in, int32_t, DLTensor* out, int32_t, const void*) -> int32_t {
    std::memcpy(out[0].data, in[0].data, 8 * 16 * sizeof(float));
    return 0;
  };
  for (int i = 0; i < 4; ++i) io.dispatch(f, op, nullptr, copy_golden);
  REQUIRE(f.firings() == 2);
  CHECK(io.out.bytes == io.in.bytes);  // golden (a copy) propagated
  for (uint64_t k = 0; k < 2; ++k) {
    const peat_firing_t fr = f.firing(k);
    CHECK(fr.call == 2 * k);
    CHECK(fr.action == PEAT_ACTION_RUN_BOTH);
    CHECK(fr.status == PEAT_STATUS_OK);
    CHECK(fr.kept_golden == 1);
    CHECK(fr.compared == 1);
    CHECK(fr.elements == 128);
    CHECK(fr.mismatches == 128);
    CHECK(fr.max_rel_error > 0);
    CHECK(fr.max_rel_error <= std::ldexp(1.0, -23));
  }
  peat_signature_t sig;
  peat_signature_init(&sig);
  REQUIRE(peat_injector_firing_signature(f.injector, 1, &sig) == PEAT_STATUS_OK);
  CHECK(sig.count == 128);
  CHECK(sig.ulp_hist[1] == 128);  // every pair exactly 1 ULP apart
  CHECK(peat_injector_firing_signature(f.injector, 2, &sig) == PEAT_STATUS_NOT_FOUND);
}

TEST_CASE("dispatch RUN_CANDIDATE: the candidate's result propagates", "[injector][dispatch]") {
  Fixture f;
  const uint32_t op = f.op("conv");
  f.policy("conv", PEAT_ACTION_RUN_CANDIDATE);
  f.candidate("conv", "peat_test_scaled");
  Io io;
  CHECK(io.dispatch(f, op) == PEAT_ACTION_RUN_CANDIDATE);
  for (int64_t i = 0; i < io.in.numel(); ++i) CHECK(io.out.value(i) == static_cast<float>(2.0 * io.in.value(i)));
  const peat_firing_t fr = f.firing(0);
  CHECK(fr.kept_golden == 0);
  CHECK(fr.status == PEAT_STATUS_OK);
  CHECK(fr.compared == 0);
}

TEST_CASE("dispatch: failing, NaN-writing and missing candidates keep golden", "[injector][dispatch]") {
  for (peat_action_t action : {PEAT_ACTION_RUN_CANDIDATE, PEAT_ACTION_RUN_BOTH}) {
    Fixture f;
    const uint32_t bad = f.op("bad"), nan = f.op("nan"), none = f.op("none");
    f.policy("*", action);
    f.candidate("bad", "peat_test_fail");
    f.candidate("nan", "peat_test_nan");
    Io io;
    io.dispatch(f, bad);
    CHECK(io.holds_golden());
    io.dispatch(f, nan);
    CHECK(io.holds_golden());
    io.dispatch(f, none);
    CHECK(io.holds_golden());
    REQUIRE(f.firings() == 3);
    CHECK(f.firing(0).status == PEAT_STATUS_CALLBACK_FAILED);
    CHECK(f.firing(1).status == PEAT_STATUS_CORRUPT_DATA);
    CHECK(f.firing(2).status == PEAT_STATUS_NOT_FOUND);
    for (uint64_t i = 0; i < 3; ++i) {
      CHECK(f.firing(i).kept_golden == 1);
      CHECK(f.firing(i).compared == 0);
    }
    uint64_t logged = 0;
    REQUIRE(peat_session_log_count(f.session, &logged, nullptr) == PEAT_STATUS_OK);
    CHECK(logged == 3);
    char text[512];
    REQUIRE(peat_session_log_entry(f.session, 1, nullptr, text, sizeof text, nullptr) == PEAT_STATUS_OK);
    CHECK(std::string(text).find("NaN in every element") != std::string::npos);
  }
}

TEST_CASE("dispatch INJECT: an error model on the golden output, compared", "[injector][dispatch]") {
  Fixture f;
  const uint32_t op = f.op("mm");
  peat_inject_spec_t spec;
  peat_inject_spec_init(&spec, PEAT_INJECT_BITFLIP);
  spec.field = PEAT_BIT_FIELD_EXPONENT;
  f.policy("mm", PEAT_ACTION_INJECT, 1, &spec);
  Io io;
  CHECK(io.dispatch(f, op) == PEAT_ACTION_INJECT);
  int64_t differ = 0;
  for (int64_t i = 0; i < io.in.numel(); ++i) differ += io.out.value(i) != static_cast<float>(io.in.value(i) + 1.0f);
  CHECK(differ == 1);
  const peat_firing_t fr = f.firing(0);
  CHECK(fr.injected == 1);
  CHECK(fr.compared == 1);
  CHECK(fr.mismatches == 1);
  CHECK(fr.kept_golden == 0);
  peat_signature_t sig;
  peat_signature_init(&sig);
  REQUIRE(peat_injector_firing_signature(f.injector, 0, &sig) == PEAT_STATUS_OK);
  uint64_t exponent_flips = 0;
  for (int b = 23; b < 31; ++b) exponent_flips += sig.xor_bit_hist[b];
  CHECK(exponent_flips == 1);
  // The same (seed, op, call) injects the same bits in a second session.
  Fixture g;
  const uint32_t op2 = g.op("mm");
  g.policy("mm", PEAT_ACTION_INJECT, 1, &spec);
  Io io2;
  io2.dispatch(g, op2);
  CHECK(io2.out.bytes == io.out.bytes);
}

TEST_CASE("dispatch INJECT with stale data: the op's previous output", "[injector][dispatch]") {
  Fixture f;
  const uint32_t op = f.op("attn");
  peat_inject_spec_t spec;
  peat_inject_spec_init(&spec, PEAT_INJECT_REGION);
  spec.region = PEAT_REGION_ROWS;
  spec.first = 2;
  spec.extent = 3;
  spec.fill = PEAT_FILL_STALE;
  f.policy("attn", PEAT_ACTION_INJECT, 2, &spec, 1);  // calls 1, 3, ...
  Io first(1), second(2);
  CHECK(first.dispatch(f, op) == PEAT_ACTION_RUN_GOLDEN);
  CHECK(second.dispatch(f, op) == PEAT_ACTION_INJECT);
  for (int64_t i = 0; i < 128; ++i) {
    const int64_t row = i / 16;
    const float expect = row >= 2 && row < 5 ? first.out.value(i) : static_cast<float>(second.in.value(i) + 1.0f);
    CHECK(second.out.value(i) == expect);
  }
  CHECK(f.firing(0).injected == 48);
}

TEST_CASE("dispatch: golden failure, bad arguments, candidate loading errors", "[injector][dispatch][errors]") {
  Fixture f;
  const uint32_t op = f.op("x");
  Io io;
  peat_action_t action;
  CHECK(peat_injector_dispatch(f.injector, op, &io.in.t, 1, &io.out.t, 1, nullptr, golden_fails, nullptr, &action,
                               nullptr) == PEAT_STATUS_CALLBACK_FAILED);
  CHECK(std::string(peat_last_error_message()).find("returned 17") != std::string::npos);
  CHECK(peat_injector_dispatch(f.injector, op, &io.in.t, 1, &io.out.t, 1, nullptr, nullptr, nullptr, &action,
                               nullptr) == PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(peat_injector_dispatch(f.injector, op, nullptr, 1, &io.out.t, 1, nullptr, golden_plus_one, nullptr, &action,
                               nullptr) == PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(peat_injector_dispatch(f.injector, op, &io.in.t, -1, &io.out.t, 1, nullptr, golden_plus_one, nullptr, &action,
                               nullptr) == PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(peat_injector_dispatch(f.injector, 999, &io.in.t, 1, &io.out.t, 1, nullptr, golden_plus_one, nullptr, &action,
                               nullptr) == PEAT_STATUS_NOT_FOUND);
  CHECK(peat_injector_dispatch(nullptr, op, &io.in.t, 1, &io.out.t, 1, nullptr, golden_plus_one, nullptr, &action,
                               nullptr) == PEAT_STATUS_INVALID_ARGUMENT);
  DLTensor broken = io.out.t;
  broken.ndim = -1;
  CHECK(peat_injector_dispatch(f.injector, op, &io.in.t, 1, &broken, 1, nullptr, golden_plus_one, nullptr, &action,
                               nullptr) == PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(std::string(peat_last_error_message()).find("outputs[0]") != std::string::npos);

  CHECK(peat_injector_set_candidate_symbol(f.injector, "*", "/nonexistent/libnope.so:f", nullptr) ==
        PEAT_STATUS_NOT_FOUND);
  CHECK(std::string(peat_last_error_message()).find("libnope.so") != std::string::npos);
  CHECK(peat_injector_set_candidate_symbol(f.injector, "*", (kCandidates + ":no_such_symbol").c_str(), nullptr) ==
        PEAT_STATUS_NOT_FOUND);
  CHECK(std::string(peat_last_error_message()).find("no_such_symbol") != std::string::npos);
  for (const char* malformed : {"no-colon", ":sym", "lib.so:"})
    CHECK(peat_injector_set_candidate_symbol(f.injector, "*", malformed, nullptr) == PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(peat_injector_set_candidate_symbol(f.injector, "[x", (kCandidates + ":peat_test_exact").c_str(), nullptr) ==
        PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(peat_injector_set_candidate(f.injector, "*", nullptr, nullptr) == PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(peat_injector_set_candidate(f.injector, nullptr, golden_plus_one, nullptr) == PEAT_STATUS_INVALID_ARGUMENT);
}

TEST_CASE("dispatch: ctx and attrs reach the kernels, and a later candidate replaces an earlier one", "[injector][dispatch]") {
  Fixture f;
  const uint32_t op = f.op("mm");
  f.policy("mm", PEAT_ACTION_RUN_CANDIDATE);
  f.candidate("*", "peat_test_scaled");
  int64_t calls = 0;
  f.candidate("m?", "peat_test_counting", &calls);
  Io io;
  const int attrs = 42;
  io.dispatch(f, op, nullptr, golden_plus_one, &attrs);
  io.dispatch(f, op, nullptr, golden_plus_one, &attrs);
  CHECK(calls == 2);
  CHECK(io.out.bytes == io.in.bytes);  // the counting candidate copies
  CHECK(f.firing(1).status == PEAT_STATUS_OK);
  const int wrong = 7;
  io.dispatch(f, op, nullptr, golden_plus_one, &wrong);
  CHECK(f.firing(2).status == PEAT_STATUS_CALLBACK_FAILED);
  CHECK(io.holds_golden());
}

TEST_CASE("the firing log: capacity, dropped count, JSON lines", "[injector][dispatch][log]") {
  Fixture f(3);
  const uint32_t op = f.op("layer0.fwd");
  f.policy("*", PEAT_ACTION_RUN_BOTH);
  f.candidate("*", "peat_test_exact");
  REQUIRE(peat_session_set_step(f.session, 12) == PEAT_STATUS_OK);
  REQUIRE(peat_session_set_phase(f.session, PEAT_PHASE_BACKWARD) == PEAT_STATUS_OK);
  Io io;
  const auto copy_golden = [](void*, const DLTensor* in, int32_t, DLTensor* out, int32_t, const void*) -> int32_t {
    std::memcpy(out[0].data, in[0].data, 8 * 16 * sizeof(float));
    return 0;
  };
  for (int i = 0; i < 5; ++i) io.dispatch(f, op, nullptr, copy_golden);
  uint64_t count = 0, dropped = 0;
  REQUIRE(peat_injector_firing_count(f.injector, &count, &dropped) == PEAT_STATUS_OK);
  CHECK(count == 3);
  CHECK(dropped == 2);
  const std::string path = "injector_log_test.jsonl";
  REQUIRE(peat_injector_write_log(f.injector, path.c_str(), 0) == PEAT_STATUS_OK);
  REQUIRE(peat_injector_write_log(f.injector, path.c_str(), 1) == PEAT_STATUS_OK);  // append: 6 lines
  std::ifstream in(path);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    CHECK(j["op_name"] == "layer0.fwd");
    CHECK(j["call"] == static_cast<uint64_t>(lines % 3));
    CHECK(j["step"] == 12);
    CHECK(j["phase"] == PEAT_PHASE_BACKWARD);
    CHECK(j["action_name"] == "run_both");
    CHECK(j["status_name"] == "ok");
    CHECK(j["compared"] == 1);
    CHECK(j["mismatches"] == 0);
    CHECK(j["max_abs_error"] == 0.0);
    ++lines;
  }
  CHECK(lines == 6);
  std::remove(path.c_str());
  CHECK(peat_injector_write_log(f.injector, "/nonexistent-dir/x.jsonl", 0) == PEAT_STATUS_IO_ERROR);
  peat_firing_t fr{};
  fr.struct_size = sizeof fr;
  CHECK(peat_injector_firing(f.injector, 3, &fr) == PEAT_STATUS_NOT_FOUND);
  fr.struct_size = sizeof fr + 1;
  CHECK(peat_injector_firing(f.injector, 0, &fr) == PEAT_STATUS_VERSION_MISMATCH);
  fr.struct_size = offsetof(peat_firing_t, step);  // an older, smaller struct
  REQUIRE(peat_injector_firing(f.injector, 1, &fr) == PEAT_STATUS_OK);
  CHECK(fr.call == 1);
}

TEST_CASE("8 threads dispatching at once", "[injector][dispatch][threads]") {
  Fixture f(1 << 16);
  const uint32_t a = f.op("t.a"), b = f.op("t.b");
  f.policy("t.a", PEAT_ACTION_RUN_BOTH, 3);
  peat_inject_spec_t spec;
  peat_inject_spec_init(&spec, PEAT_INJECT_VALUE);
  spec.value_kind = PEAT_VALUE_NAN;
  f.policy("t.b", PEAT_ACTION_INJECT, 5, &spec);
  f.candidate("t.*", "peat_test_next_ulp");
  const int threads = 8, per_thread = 300;
  std::atomic<int> wrong{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      Io io(static_cast<uint64_t>(t) + 100);
      for (int i = 0; i < per_thread; ++i) {
        const uint32_t op = (i % 2) ? a : b;
        peat_action_t action = PEAT_ACTION_INVALID;
        uint64_t call = 0;
        if (peat_injector_dispatch(f.injector, op, &io.in.t, 1, &io.out.t, 1, nullptr, golden_plus_one, nullptr, &action,
                                   &call) != PEAT_STATUS_OK) {
          ++wrong;
          continue;
        }
        const bool should_fire = op == a ? call % 3 == 0 : call % 5 == 0;
        if ((action != PEAT_ACTION_RUN_GOLDEN) != should_fire) ++wrong;
        if (action != PEAT_ACTION_INJECT && !io.holds_golden()) ++wrong;
      }
    });
  for (auto& th : pool) th.join();
  CHECK(wrong == 0);
  const uint64_t calls_each = threads * per_thread / 2;
  const uint64_t expect = (calls_each + 2) / 3 + (calls_each + 4) / 5;
  CHECK(f.firings() == expect);
  uint64_t injected = 0, compared_both = 0;
  for (uint64_t i = 0; i < f.firings(); ++i) {
    const peat_firing_t fr = f.firing(i);
    if (fr.action == PEAT_ACTION_INJECT) injected += fr.injected == 1 && fr.new_nonfinite == 1;
    if (fr.action == PEAT_ACTION_RUN_BOTH) compared_both += fr.compared == 1 && fr.mismatches == 128;
  }
  CHECK(injected == (calls_each + 4) / 5);
  CHECK(compared_both == (calls_each + 2) / 3);
}

TEST_CASE("decide_policy + inject: the caller carries out an INJECT itself", "[injector][dispatch]") {
  peat_inject_spec_t spec;
  peat_inject_spec_init(&spec, PEAT_INJECT_BITFLIP);
  spec.count = 3;
  // Session A: dispatch injects. Session B: decide_policy + inject on the golden output.
  Fixture a, b;
  const uint32_t op_a = a.op("mm"), op_b = b.op("mm");
  for (Fixture* f : {&a, &b}) {
    f->policy("other", PEAT_ACTION_RUN_BOTH);
    f->policy("mm", PEAT_ACTION_INJECT, 2, &spec);
  }
  Io io_a, io_b;
  for (int i = 0; i < 3; ++i) {
    const peat_action_t action_a = io_a.dispatch(a, op_a);
    uint64_t call = 0;
    int32_t policy = 7;
    const peat_action_t action_b = peat_injector_decide_policy(b.injector, op_b, &call, &policy);
    CHECK(action_a == action_b);
    REQUIRE(golden_plus_one(nullptr, &io_b.in.t, 1, &io_b.out.t, 1, nullptr) == 0);
    if (action_b == PEAT_ACTION_INJECT) {
      CHECK(policy == 1);
      peat_inject_truth_t truth;
      peat_inject_truth_init(&truth);
      REQUIRE(peat_injector_inject(b.injector, policy, op_b, call, &io_b.out.t, nullptr, &truth) == PEAT_STATUS_OK);
      CHECK(truth.changed == 3);
    } else {
      CHECK(policy == -1);
    }
    CHECK(io_a.out.bytes == io_b.out.bytes);  // the same bits either way
  }
  CHECK(peat_injector_inject(b.injector, 0, op_b, 0, &io_b.out.t, nullptr, nullptr) == PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(peat_injector_inject(b.injector, 2, op_b, 0, &io_b.out.t, nullptr, nullptr) == PEAT_STATUS_NOT_FOUND);
  CHECK(peat_injector_inject(b.injector, -1, op_b, 0, &io_b.out.t, nullptr, nullptr) == PEAT_STATUS_NOT_FOUND);
  CHECK(peat_injector_inject(b.injector, 1, 99, 0, &io_b.out.t, nullptr, nullptr) == PEAT_STATUS_NOT_FOUND);
  CHECK(peat_injector_inject(b.injector, 1, op_b, 0, nullptr, nullptr, nullptr) == PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(peat_injector_inject(nullptr, 1, op_b, 0, &io_b.out.t, nullptr, nullptr) == PEAT_STATUS_INVALID_ARGUMENT);
  int32_t policy = 5;
  CHECK(peat_injector_decide_policy(b.injector, 99, nullptr, &policy) == PEAT_ACTION_INVALID);
  CHECK(policy == -1);
  CHECK(peat_injector_decide_policy(nullptr, op_b, nullptr, nullptr) == PEAT_ACTION_INVALID);
}

TEST_CASE("inject with a stale-data policy: given stale tensor, or zeros", "[injector][dispatch]") {
  Fixture f;
  const uint32_t op = f.op("attn");
  peat_inject_spec_t spec;
  peat_inject_spec_init(&spec, PEAT_INJECT_REGION);
  spec.region = PEAT_REGION_COLUMNS;
  spec.first = 15;
  spec.fill = PEAT_FILL_STALE;
  f.policy("attn", PEAT_ACTION_INJECT, 1, &spec);
  Io io, previous(5);
  REQUIRE(golden_plus_one(nullptr, &io.in.t, 1, &io.out.t, 1, nullptr) == 0);
  HostTensor before = io.out;
  REQUIRE(peat_injector_inject(f.injector, 0, op, 0, &io.out.t, &previous.in.t, nullptr) == PEAT_STATUS_OK);
  for (int64_t i = 0; i < 128; ++i) CHECK(io.out.word(i) == (i % 16 == 15 ? previous.in.word(i) : before.word(i)));
  REQUIRE(peat_injector_inject(f.injector, 0, op, 0, &io.out.t, nullptr, nullptr) == PEAT_STATUS_OK);
  for (int64_t i = 0; i < 128; ++i) CHECK(io.out.word(i) == (i % 16 == 15 ? 0u : before.word(i)));
}
