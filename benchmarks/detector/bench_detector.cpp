// Cost of one peat_detect call on the signature of a 64x64 f32 tensor with one
// flipped exponent bit (with its spatial map), against a copy of the signature
// (the baseline: reading the input once).
#include <peat/peat.h>

#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

namespace {

struct Fixture {
  peat_signature_t sig;
  peat_spatial_map_t map;
  Fixture() {
    std::vector<float> g(4096), c;
    for (size_t i = 0; i < g.size(); ++i) g[i] = 1.0f + static_cast<float>(i % 97) / 97.0f;
    c = g;
    uint32_t b;
    std::memcpy(&b, &c[1234], 4);
    b ^= 1u << 27;
    std::memcpy(&c[1234], &b, 4);
    int64_t shape[2] = {64, 64};
    DLTensor tg{}, tc{};
    tg.data = g.data();
    tg.device = DLDevice{kDLCPU, 0};
    tg.ndim = 2;
    tg.dtype = DLDataType{kDLFloat, 32, 1};
    tg.shape = shape;
    tc = tg;
    tc.data = c.data();
    peat_signature_init(&sig);
    peat_spatial_map_init(&map);
    peat_analyze(&tg, &tc, nullptr, &sig, &map);
  }
  ~Fixture() { peat_spatial_map_release(&map); }
};

void BM_CopySignature(benchmark::State& state) {
  Fixture f;
  peat_signature_t out;
  for (auto _ : state) {
    std::memcpy(&out, &f.sig, sizeof out);
    benchmark::DoNotOptimize(out);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_CopySignature);

void BM_Detect(benchmark::State& state) {
  Fixture f;
  peat_detect_context_t ctx;
  peat_detect_context_init(&ctx);
  ctx.map = &f.map;
  peat_detection_t det;
  peat_detection_init(&det);
  for (auto _ : state) {
    peat_detect(&f.sig, &ctx, &det);
    benchmark::DoNotOptimize(det);
  }
}
BENCHMARK(BM_Detect);

}  // namespace

BENCHMARK_MAIN();
