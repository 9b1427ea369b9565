// The runtime-FI decision on the hot path, through the public C API:
//   BM_EmptyLoop             the baseline: a loop that increments a counter
//   BM_DecideNoPolicy        an op no policy matches
//   BM_DecideNotFiring       an op with a matching every-N policy, on calls that
//                            do not fire (N = 2^40)
//   BM_DecideNotFiring8Ops   the same, rotating over 8 ops (more cache traffic)
#include <peat/peat.h>

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>

namespace {

struct Setup {
  peat_session_t* session = nullptr;
  peat_injector_t* injector = nullptr;
  uint32_t ops[8] = {};
  uint32_t idle = 0;
  Setup() {
    if (peat_session_create(nullptr, &session) != PEAT_STATUS_OK || peat_injector_create(session, nullptr, &injector) != PEAT_STATUS_OK) {
      std::fprintf(stderr, "setup failed: %s\n", peat_last_error_message());
      std::exit(1);
    }
    char name[32];
    for (int i = 0; i < 8; ++i) {
      std::snprintf(name, sizeof name, "layer%d.gemm", i);
      peat_session_intern_op(session, name, &ops[i]);
    }
    peat_session_intern_op(session, "untouched.op", &idle);
    peat_injector_policy_t p;
    peat_injector_policy_init(&p);
    p.op_pattern = "layer*.gemm";
    p.every_n = uint64_t{1} << 40;
    p.phase_offset = (uint64_t{1} << 40) - 1;
    if (peat_injector_add_policy(injector, &p, nullptr) != PEAT_STATUS_OK) std::exit(1);
  }
  ~Setup() {
    peat_injector_destroy(injector);
    peat_session_destroy(session);
  }
};

Setup& setup() {
  static Setup s;
  return s;
}

void BM_EmptyLoop(benchmark::State& state) {
  uint64_t counter = 0;
  for (auto _ : state) {
    ++counter;
    benchmark::DoNotOptimize(counter);
  }
}
BENCHMARK(BM_EmptyLoop);

void BM_DecideNoPolicy(benchmark::State& state) {
  Setup& s = setup();
  uint64_t call = 0;
  for (auto _ : state) {
    const peat_action_t a = peat_injector_decide(s.injector, s.idle, &call);
    benchmark::DoNotOptimize(a);
  }
  if (peat_injector_decide(s.injector, s.idle, &call) != PEAT_ACTION_RUN_GOLDEN) state.SkipWithError("fired");
}
BENCHMARK(BM_DecideNoPolicy);

void BM_DecideNotFiring(benchmark::State& state) {
  Setup& s = setup();
  uint64_t call = 0;
  int64_t fired = 0;
  for (auto _ : state) {
    const peat_action_t a = peat_injector_decide(s.injector, s.ops[0], &call);
    fired += a != PEAT_ACTION_RUN_GOLDEN;
    benchmark::DoNotOptimize(a);
  }
  if (fired != 0) state.SkipWithError("a call fired");
}
BENCHMARK(BM_DecideNotFiring);

void BM_DecideNotFiring8Ops(benchmark::State& state) {
  Setup& s = setup();
  uint64_t call = 0;
  unsigned i = 0;
  for (auto _ : state) {
    const peat_action_t a = peat_injector_decide(s.injector, s.ops[i++ & 7u], &call);
    benchmark::DoNotOptimize(a);
  }
}
BENCHMARK(BM_DecideNotFiring8Ops);

}  // namespace

BENCHMARK_MAIN();
