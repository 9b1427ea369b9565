// The runtime FI scheduler: exact firing counts for every policy condition,
// the probability within a binomial bound, op-name globs, bad policies, the
// shared call counters, and 8 threads deciding at once.
#include <catch2/catch.hpp>

#include <peat/peat.h>

#include "injector/glob.hpp"

#include <atomic>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Fixture {
  peat_session_t* session = nullptr;
  peat_injector_t* injector = nullptr;
  explicit Fixture(uint64_t seed = 0x5EA7) {
    peat_session_options_t o;
    peat_session_options_init(&o);
    o.seed = seed;
    REQUIRE(peat_session_create(&o, &session) == PEAT_STATUS_OK);
    REQUIRE(peat_injector_create(session, nullptr, &injector) == PEAT_STATUS_OK);
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
  void add(const peat_injector_policy_t& p) {
    INFO(peat_last_error_message());
    REQUIRE(peat_injector_add_policy(injector, &p, nullptr) == PEAT_STATUS_OK);
  }
  // Decides `n` calls of `op`; returns the call indices that fired.
  std::vector<uint64_t> fired(uint32_t op_id, int n, peat_action_t want = PEAT_ACTION_RUN_BOTH) {
    std::vector<uint64_t> calls;
    for (int i = 0; i < n; ++i) {
      uint64_t call = 0;
      const peat_action_t a = peat_injector_decide(injector, op_id, &call);
      REQUIRE(a != PEAT_ACTION_INVALID);
      if (a != PEAT_ACTION_RUN_GOLDEN) {
        CHECK(a == want);
        calls.push_back(call);
      }
    }
    return calls;
  }
};

peat_injector_policy_t policy(const char* pattern) {
  peat_injector_policy_t p;
  peat_injector_policy_init(&p);
  p.op_pattern = pattern;
  return p;
}

}  // namespace

TEST_CASE("every N-th call with a phase offset", "[injector][scheduler]") {
  for (uint64_t n : {1u, 3u, 4u, 7u, 64u}) {
    Fixture f;
    const uint32_t op = f.op("gemm");
    auto p = policy("gemm");
    p.every_n = n;
    p.phase_offset = n - 1;
    f.add(p);
    const auto calls = f.fired(op, 200);
    std::vector<uint64_t> want;
    for (uint64_t c = 0; c < 200; ++c)
      if (c % n == n - 1) want.push_back(c);
    CHECK(calls == want);
  }
}

TEST_CASE("first K calls, max firings, step window, phase filter", "[injector][scheduler]") {
  SECTION("first K calls") {
    Fixture f;
    const uint32_t op = f.op("conv");
    auto p = policy("*");
    p.first_calls = 7;
    f.add(p);
    CHECK(f.fired(op, 100) == std::vector<uint64_t>{0, 1, 2, 3, 4, 5, 6});
  }
  SECTION("max firings, with every 2nd call") {
    Fixture f;
    const uint32_t a = f.op("a"), b = f.op("b");
    auto p = policy("*");
    p.every_n = 2;
    p.max_firings = 3;  // over all ops the policy matches
    p.action = PEAT_ACTION_RUN_CANDIDATE;
    f.add(p);
    CHECK(f.fired(a, 4, PEAT_ACTION_RUN_CANDIDATE) == std::vector<uint64_t>{0, 2});
    CHECK(f.fired(b, 10, PEAT_ACTION_RUN_CANDIDATE) == std::vector<uint64_t>{0});
    CHECK(f.fired(a, 10, PEAT_ACTION_RUN_CANDIDATE).empty());
  }
  SECTION("step window [10, 20)") {
    Fixture f;
    const uint32_t op = f.op("mm");
    auto p = policy("mm");
    p.step_begin = 10;
    p.step_end = 20;
    f.add(p);
    int firings = 0;
    for (int64_t step = 0; step < 30; ++step) {
      REQUIRE(peat_session_set_step(f.session, step) == PEAT_STATUS_OK);
      const auto calls = f.fired(op, 3);
      firings += static_cast<int>(calls.size());
      CHECK(calls.size() == (step >= 10 && step < 20 ? 3u : 0u));
    }
    CHECK(firings == 30);
  }
  SECTION("open-ended window") {
    Fixture f;
    const uint32_t op = f.op("mm");
    auto p = policy("mm");
    p.step_begin = 5;
    f.add(p);
    REQUIRE(peat_session_set_step(f.session, 4) == PEAT_STATUS_OK);
    CHECK(f.fired(op, 5).empty());
    REQUIRE(peat_session_set_step(f.session, 1000000) == PEAT_STATUS_OK);
    CHECK(f.fired(op, 5).size() == 5);
  }
  SECTION("phase filter: backward only") {
    Fixture f;
    const uint32_t op = f.op("mm");
    auto p = policy("mm");
    p.phase_mask = 1u << PEAT_PHASE_BACKWARD;
    p.action = PEAT_ACTION_INJECT;
    peat_inject_spec_t spec;
    peat_inject_spec_init(&spec, PEAT_INJECT_BITFLIP);
    p.spec = &spec;
    f.add(p);
    for (peat_phase_t phase : {PEAT_PHASE_FORWARD, PEAT_PHASE_BACKWARD, PEAT_PHASE_OPTIMIZER, PEAT_PHASE_OTHER}) {
      REQUIRE(peat_session_set_phase(f.session, phase) == PEAT_STATUS_OK);
      CHECK(f.fired(op, 4, PEAT_ACTION_INJECT).size() == (phase == PEAT_PHASE_BACKWARD ? 4u : 0u));
    }
  }
}

TEST_CASE("probability p: within a binomial bound, the same calls on every run", "[injector][scheduler]") {
  const int n = 20000;
  for (double p : {0.01, 0.3, 0.9}) {
    Fixture f1(123), f2(123), f3(124);
    for (Fixture* f : {&f1, &f2, &f3}) {
      auto pol = policy("*");
      pol.probability = p;
      f->add(pol);
    }
    const auto a = f1.fired(f1.op("x"), n), b = f2.fired(f2.op("x"), n), c = f3.fired(f3.op("x"), n);
    const double mean = n * p, sd = std::sqrt(n * p * (1 - p));
    INFO("p = " << p << " fired " << a.size());
    CHECK(std::abs(static_cast<double>(a.size()) - mean) <= 5 * sd);
    CHECK(a == b);  // same seed: the same calls
    CHECK(a != c);  // another seed: other calls
  }
  Fixture zero;
  auto pol = policy("*");
  pol.probability = 0.0;
  zero.add(pol);
  CHECK(zero.fired(zero.op("x"), 1000).empty());
}

TEST_CASE("several policies: tried in order, the first that fires decides", "[injector][scheduler]") {
  Fixture f;
  const uint32_t op = f.op("layer1.gemm");
  auto p0 = policy("layer?.gemm");
  p0.every_n = 4;
  p0.action = PEAT_ACTION_RUN_CANDIDATE;
  auto p1 = policy("*");
  p1.every_n = 2;
  p1.action = PEAT_ACTION_RUN_BOTH;
  f.add(p0);
  f.add(p1);
  for (uint64_t c = 0; c < 16; ++c) {
    uint64_t call = 99;
    const peat_action_t a = peat_injector_decide(f.injector, op, &call);
    CHECK(call == c);
    CHECK(a == (c % 4 == 0 ? PEAT_ACTION_RUN_CANDIDATE : c % 2 == 0 ? PEAT_ACTION_RUN_BOTH : PEAT_ACTION_RUN_GOLDEN));
  }
}

TEST_CASE("policies added or cleared later apply to ops already seen", "[injector][scheduler]") {
  Fixture f;
  const uint32_t op = f.op("attn");
  CHECK(f.fired(op, 10).empty());
  f.add(policy("att*"));
  CHECK(f.fired(op, 10).size() == 10);
  REQUIRE(peat_injector_clear_policies(f.injector) == PEAT_STATUS_OK);
  CHECK(f.fired(op, 10).empty());
  uint64_t count = 0;
  REQUIRE(peat_session_call_count(f.session, op, &count) == PEAT_STATUS_OK);
  CHECK(count == 30);  // decide claims the session's shared counter
}

TEST_CASE("decide_call does not move the counter", "[injector][scheduler]") {
  Fixture f;
  const uint32_t op = f.op("mm");
  auto p = policy("mm");
  p.every_n = 3;
  f.add(p);
  CHECK(peat_injector_decide_call(f.injector, op, 3) == PEAT_ACTION_RUN_BOTH);
  CHECK(peat_injector_decide_call(f.injector, op, 4) == PEAT_ACTION_RUN_GOLDEN);
  uint64_t count = 1;
  REQUIRE(peat_session_call_count(f.session, op, &count) == PEAT_STATUS_OK);
  CHECK(count == 0);
  CHECK(peat_injector_decide_call(f.injector, 77, 0) == PEAT_ACTION_INVALID);
  CHECK(peat_injector_decide_call(nullptr, op, 0) == PEAT_ACTION_INVALID);
}

TEST_CASE("op-name globs", "[injector][scheduler][glob]") {
  using peat::impl::injector::glob_match;
  CHECK(glob_match("*", ""));
  CHECK(glob_match("*", "anything"));
  CHECK(glob_match("aten::mm", "aten::mm"));
  CHECK_FALSE(glob_match("aten::mm", "aten::mmm"));
  CHECK(glob_match("aten::*mm", "aten::addmm"));
  CHECK(glob_match("layer?.conv*", "layer3.conv1/fwd"));
  CHECK_FALSE(glob_match("layer?.conv*", "layer12.conv1"));
  CHECK(glob_match("layer[0-3].*", "layer2.x"));
  CHECK_FALSE(glob_match("layer[0-3].*", "layer5.x"));
  CHECK(glob_match("layer[!0-3].*", "layer5.x"));
  CHECK(glob_match("layer[^0-3].*", "layer7.x"));
  CHECK(glob_match("a\\*b", "a*b"));
  CHECK_FALSE(glob_match("a\\*b", "axb"));
  CHECK(glob_match("[]]x", "]x"));
  CHECK(glob_match("*a*b*c*", "xxaxxbxxcxx"));
  CHECK_FALSE(glob_match("*a*b*c*", "xxaxxcxxbxx"));
  CHECK(glob_match("**", "abc"));
  CHECK_FALSE(glob_match("?", ""));
  for (const char* bad : {"[abc", "abc\\", "[]", "[z-a]", "", "x[!"}) {
    INFO(bad);
    CHECK_THROWS(peat::impl::injector::validate_glob(bad, "pattern"));
  }
  CHECK_NOTHROW(peat::impl::injector::validate_glob("a[bc]*?\\[", "pattern"));
}

TEST_CASE("bad policies are refused, naming the field", "[injector][scheduler][errors]") {
  Fixture f;
  const auto refuse = [&](const peat_injector_policy_t& p, peat_status_t want, const char* needle) {
    CHECK(peat_injector_add_policy(f.injector, &p, nullptr) == want);
    INFO(peat_last_error_message());
    CHECK(std::string(peat_last_error_message()).find(needle) != std::string::npos);
  };
  auto p = policy("[abc");
  refuse(p, PEAT_STATUS_INVALID_ARGUMENT, "op_pattern");
  p = policy(nullptr);
  refuse(p, PEAT_STATUS_INVALID_ARGUMENT, "op_pattern");
  p = policy("*");
  p.every_n = 0;
  refuse(p, PEAT_STATUS_INVALID_ARGUMENT, "every_n");
  p = policy("*");
  p.every_n = 4;
  p.phase_offset = 4;
  refuse(p, PEAT_STATUS_INVALID_ARGUMENT, "phase_offset");
  p = policy("*");
  p.probability = 1.01;
  refuse(p, PEAT_STATUS_INVALID_ARGUMENT, "probability");
  p.probability = -0.1;
  refuse(p, PEAT_STATUS_INVALID_ARGUMENT, "probability");
  p.probability = NAN;
  refuse(p, PEAT_STATUS_INVALID_ARGUMENT, "probability");
  p = policy("*");
  p.action = PEAT_ACTION_RUN_GOLDEN;
  refuse(p, PEAT_STATUS_INVALID_ARGUMENT, "action");
  p.action = 9;
  refuse(p, PEAT_STATUS_INVALID_ARGUMENT, "action");
  p = policy("*");
  p.phase_mask = 0;
  refuse(p, PEAT_STATUS_INVALID_ARGUMENT, "phase_mask");
  p.phase_mask = 0x10;
  refuse(p, PEAT_STATUS_INVALID_ARGUMENT, "phase_mask");
  p = policy("*");
  p.step_begin = 5;
  p.step_end = 5;
  refuse(p, PEAT_STATUS_INVALID_ARGUMENT, "step_end");
  p = policy("*");
  p.action = PEAT_ACTION_INJECT;
  refuse(p, PEAT_STATUS_INVALID_ARGUMENT, "policy.spec");
  peat_inject_spec_t spec;
  peat_inject_spec_init(&spec, PEAT_INJECT_STUCK_AT);  // no bit chosen
  p.spec = &spec;
  refuse(p, PEAT_STATUS_INVALID_ARGUMENT, "policy.spec.bit");
  spec.bit = 1;
  p.output_index = -1;
  refuse(p, PEAT_STATUS_INVALID_ARGUMENT, "output_index");
  p.output_index = 0;
  peat_inject_spec_init(&spec, PEAT_INJECT_REGION);
  DLTensor dummy{};
  spec.stale = &dummy;
  refuse(p, PEAT_STATUS_INVALID_ARGUMENT, "stale");
  p = policy("*");
  p.struct_size = sizeof(p) + 4;
  refuse(p, PEAT_STATUS_VERSION_MISMATCH, "struct_size");
  CHECK(peat_injector_add_policy(f.injector, nullptr, nullptr) == PEAT_STATUS_INVALID_ARGUMENT);
  CHECK(peat_injector_add_policy(nullptr, &p, nullptr) == PEAT_STATUS_INVALID_ARGUMENT);
  uint32_t index = 7;
  p = policy("*");
  REQUIRE(peat_injector_add_policy(f.injector, &p, &index) == PEAT_STATUS_OK);
  CHECK(index == 0);
  REQUIRE(peat_injector_add_policy(f.injector, &p, &index) == PEAT_STATUS_OK);
  CHECK(index == 1);
  uint64_t call = 5;
  CHECK(peat_injector_decide(f.injector, 12345, &call) == PEAT_ACTION_INVALID);
  CHECK(call == 5);
  CHECK(std::string(peat_last_error_message()).find("12345") != std::string::npos);
}

TEST_CASE("8 threads deciding at once: exact firing counts", "[injector][scheduler][threads]") {
  Fixture f;
  const uint32_t a = f.op("block.a"), b = f.op("block.b"), c = f.op("other");
  auto pa = policy("block.a");
  pa.every_n = 5;
  pa.phase_offset = 2;
  auto pb = policy("block.b");
  pb.max_firings = 777;
  pb.action = PEAT_ACTION_RUN_CANDIDATE;
  f.add(pa);
  f.add(pb);
  const int threads = 8, per_thread = 5000;
  std::atomic<int64_t> fired_a{0}, fired_b{0}, fired_c{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i) {
        const uint32_t op = (i + t) % 3 == 0 ? a : (i + t) % 3 == 1 ? b : c;
        uint64_t call = 0;
        const peat_action_t act = peat_injector_decide(f.injector, op, &call);
        if (act == PEAT_ACTION_RUN_GOLDEN) continue;
        if (op == a) {
          fired_a += (call % 5 == 2);
          fired_a += (call % 5 != 2) * 1000000;  // a firing on a wrong call shows up
        }
        if (op == b) fired_b += 1;
        if (op == c) fired_c += 1;
      }
    });
  for (auto& th : pool) th.join();
  uint64_t calls_a = 0;
  REQUIRE(peat_session_call_count(f.session, a, &calls_a) == PEAT_STATUS_OK);
  CHECK(static_cast<uint64_t>(fired_a.load()) == (calls_a + 2) / 5);
  CHECK(fired_b.load() == 777);
  CHECK(fired_c.load() == 0);
}
