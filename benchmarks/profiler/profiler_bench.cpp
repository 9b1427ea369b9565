// Cost of peat_profiler_record_op on the caller's thread (public C API):
//   BM_RecordSkipped   a call the sampling rules do not select (every_n = 100:
//                      99 of 100 calls), the common case at 1 % sampling
//   BM_RecordSelected  every call recorded: a 64 KiB f32 input copied and
//                      queued; sustained, so it includes waiting for the queue
//                      (compression on TBB workers and the write bound it)
//   BM_ClaimCall       baseline: only peat_session_next_call, which any
//                      integration does anyway
#include <benchmark/benchmark.h>

#include <peat/peat.h>

#include <cstdio>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

struct Fixture {
  peat_session_t* session = nullptr;
  peat_profiler_t* profiler = nullptr;
  uint32_t op = 0;
  std::string path;
  std::vector<float> data = std::vector<float>(16384, 0.5f);
  int64_t shape[1] = {16384};
  DLTensor tensor{};
  const DLTensor* inputs[1] = {&tensor};

  explicit Fixture(uint64_t every_n) {
    path = "/tmp/peat-bench-profiler-" + std::to_string(::getpid()) + ".peat";
    peat_session_create(nullptr, &session);
    peat_session_intern_op(session, "bench::gemm", &op);
    peat_profiler_options_t o;
    peat_profiler_options_init(&o);
    o.path = path.c_str();
    peat_profiler_create(session, &o, &profiler);
    peat_sample_rule_t rule;
    peat_sample_rule_init(&rule);
    rule.op_glob = "bench::*";
    rule.every_n = every_n;
    peat_profiler_add_rule(profiler, &rule);
    tensor.data = data.data();
    tensor.device = DLDevice{kDLCPU, 0};
    tensor.ndim = 1;
    tensor.dtype = DLDataType{kDLFloat, 32, 1};
    tensor.shape = shape;
  }
  ~Fixture() {
    peat_profiler_destroy(profiler);
    peat_session_destroy(session);
    std::remove(path.c_str());
  }
  peat_status_t record() {
    peat_op_record_t rec;
    peat_op_record_init(&rec);
    rec.op = op;
    rec.inputs = inputs;
    rec.n_inputs = 1;
    return peat_profiler_record_op(profiler, &rec, nullptr, nullptr);
  }
};

void BM_ClaimCall(benchmark::State& state) {
  Fixture f(100);
  uint64_t call = 0;
  for (auto _ : state) {
    peat_session_next_call(f.session, f.op, &call);
    benchmark::DoNotOptimize(call);
  }
}

void BM_RecordSkipped(benchmark::State& state) {
  Fixture f(1000000000);  // the first call is recorded, none after
  for (auto _ : state) benchmark::DoNotOptimize(f.record());
}

void BM_RecordSelected(benchmark::State& state) {
  Fixture f(1);
  for (auto _ : state) benchmark::DoNotOptimize(f.record());
}

}  // namespace

BENCHMARK(BM_ClaimCall);
BENCHMARK(BM_RecordSkipped);
BENCHMARK(BM_RecordSelected)->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
