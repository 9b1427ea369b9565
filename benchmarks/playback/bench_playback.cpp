// Playback of a trace of kRecords GEMM invocations (kDim^3, f32, zstd codec)
// through a golden-equivalent candidate: serial, pipelined on 2 threads, and
// the baseline of the candidate alone on the same operands (no trace, no
// analysis). Public C API only.
#include <peat/peat.h>

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

constexpr int64_t kDim = 96;
constexpr int kRecords = 32;

int32_t gemm(void*, const DLTensor* in, int32_t, DLTensor* out, int32_t, const void*) {
  const auto* a = static_cast<const float*>(in[0].data);
  const auto* b = static_cast<const float*>(in[1].data);
  auto* c = static_cast<float*>(out[0].data);
  for (int64_t i = 0; i < kDim; ++i) {
    for (int64_t j = 0; j < kDim; ++j) c[i * kDim + j] = 0;
    for (int64_t p = 0; p < kDim; ++p)
      for (int64_t j = 0; j < kDim; ++j) c[i * kDim + j] += a[i * kDim + p] * b[p * kDim + j];
  }
  return 0;
}

struct Fixture {
  std::string path = "/tmp/peat-bench-playback-" + std::to_string(::getpid()) + ".peat";
  std::vector<std::vector<float>> a, b, c;
  int64_t shape[2] = {kDim, kDim};
  peat_trace_reader_t* reader = nullptr;

  DLTensor view(std::vector<float>& v) {
    DLTensor t{};
    t.data = v.data();
    t.device = DLDevice{kDLCPU, 0};
    t.ndim = 2;
    t.dtype = DLDataType{kDLFloat, 32, 1};
    t.shape = shape;
    return t;
  }

  Fixture() {
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> d(-1, 1);
    peat_session_t* s = nullptr;
    peat_session_create(nullptr, &s);
    uint32_t op = 0;
    peat_session_intern_op(s, "gemm", &op);
    peat_profiler_options_t o;
    peat_profiler_options_init(&o);
    o.path = path.c_str();
    peat_profiler_t* p = nullptr;
    if (peat_profiler_create(s, &o, &p) != PEAT_STATUS_OK) std::abort();
    for (int r = 0; r < kRecords; ++r) {
      a.emplace_back(kDim * kDim);
      b.emplace_back(kDim * kDim);
      c.emplace_back(kDim * kDim);
      for (auto& x : a.back()) x = d(rng);
      for (auto& x : b.back()) x = d(rng);
      DLTensor in[2] = {view(a.back()), view(b.back())}, out = view(c.back());
      gemm(nullptr, in, 2, &out, 1, nullptr);
      const DLTensor* ins[2] = {&in[0], &in[1]};
      const DLTensor* outs[1] = {&out};
      peat_op_record_t rec;
      peat_op_record_init(&rec);
      rec.op = op;
      rec.module_path = r % 2 ? "fc1" : "fc2";
      rec.inputs = ins;
      rec.n_inputs = 2;
      rec.outputs = outs;
      rec.n_outputs = 1;
      peat_profiler_record_op(p, &rec, nullptr, nullptr);
    }
    peat_profiler_close(p);
    peat_profiler_destroy(p);
    peat_session_destroy(s);
    if (peat_trace_open(path.c_str(), nullptr, &reader) != PEAT_STATUS_OK) std::abort();
  }
  ~Fixture() {
    peat_trace_close(reader);
    std::remove(path.c_str());
  }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

void run_playback(benchmark::State& state, bool pipelined) {
  Fixture& f = fixture();
  peat_playback_options_t o;
  peat_playback_options_init(&o);
  o.thread_safe = pipelined ? 1 : 0;
  o.num_threads = 2;
  peat_playback_t* pb = nullptr;
  if (peat_playback_create(f.reader, &o, &pb) != PEAT_STATUS_OK) std::abort();
  peat_playback_set_candidate(pb, gemm, nullptr);
  for (auto _ : state) {
    if (peat_playback_run(pb) != PEAT_STATUS_OK) std::abort();
  }
  peat_playback_summary_t s{};
  s.struct_size = sizeof s;
  peat_playback_summary(pb, &s);
  if (s.exact != kRecords) state.SkipWithError("playback of the golden kernel was not exact");
  state.counters["records_per_s"] = benchmark::Counter(double(kRecords), benchmark::Counter::kIsIterationInvariantRate);
  peat_playback_destroy(pb);
}

void BM_PlaybackSerial(benchmark::State& state) { run_playback(state, false); }
void BM_PlaybackPipelined(benchmark::State& state) { run_playback(state, true); }

// Baseline: the candidate alone over the same operands.
void BM_CandidateOnly(benchmark::State& state) {
  Fixture& f = fixture();
  std::vector<float> out(kDim * kDim);
  for (auto _ : state) {
    for (int r = 0; r < kRecords; ++r) {
      DLTensor in[2] = {f.view(f.a[r]), f.view(f.b[r])}, o = f.view(out);
      gemm(nullptr, in, 2, &o, 1, nullptr);
      benchmark::DoNotOptimize(out.data());
    }
  }
  state.counters["records_per_s"] = benchmark::Counter(double(kRecords), benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

BENCHMARK(BM_CandidateOnly)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_PlaybackSerial)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_PlaybackPipelined)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_MAIN();
