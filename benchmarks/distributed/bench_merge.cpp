// The cost of merging one exact signature (peat_signature_merge), which rank
// 0 pays per output of every record it imports from another rank
// (peat_playback_import regroups in record order). The signatures are those
// of 64x64 f32 outputs with rounding-level error, so every histogram and
// exact sum is populated.
#include <peat/analyzer.h>

#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace {

peat_signature_t signature_of(uint32_t seed) {
  std::vector<float> g(64 * 64), c(64 * 64);
  uint32_t s = seed;
  for (std::size_t i = 0; i < g.size(); ++i) {
    s = s * 1664525u + 1013904223u;
    g[i] = static_cast<float>(s >> 8) / 16777216.0f - 0.5f;
    c[i] = std::nextafter(g[i], (s & 1) ? 1.0f : -1.0f);
  }
  int64_t shape[2] = {64, 64};
  DLTensor tg{}, tc{};
  for (DLTensor* t : {&tg, &tc}) {
    t->device = DLDevice{kDLCPU, 0};
    t->ndim = 2;
    t->dtype = DLDataType{kDLFloat, 32, 1};
    t->shape = shape;
  }
  tg.data = g.data();
  tc.data = c.data();
  peat_signature_t sig;
  peat_signature_init(&sig);
  peat_analyze(&tg, &tc, nullptr, &sig, nullptr);
  return sig;
}

void BM_SignatureMerge(benchmark::State& state) {
  const peat_signature_t a = signature_of(1), b = signature_of(2);
  peat_signature_t acc = a;
  for (auto _ : state) {
    peat_signature_merge(&acc, &b);
    benchmark::DoNotOptimize(acc);
  }
  state.counters["merges_per_s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SignatureMerge);

}  // namespace

BENCHMARK_MAIN();
