// Signature of two 256 MiB f32 tensors on 2 threads vs a STREAM-style read of
// the same two buffers, in the same process (DESIGN.md §9).
//
//   bench_signature [--elements N] [google benchmark flags]
//
// Golden: N(0, 1) values; candidate: the golden perturbed at the level of a
// few ulps (a kernel with another accumulation order), with a few NaNs, zeros
// and large errors sprinkled in, so every branch of the signature is taken.
// Sparse candidate (BM_SignatureSparse): the golden with 1 % of its pairs,
// drawn at random, a few ulps off (a deterministic kernel beside the golden,
// the common case): the bitwise-equal fast path takes the other vectors.
//
// BM_CoreClock times a chain of dependent integer adds (one cycle each) on
// one thread: its rate is the core clock as the benchmark sees it, so that
// run.sh can turn a time per element into cycles per element per thread.
#include <benchmark/benchmark.h>

#include <peat/analyzer.h>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_reduce.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

int64_t g_elements = int64_t{64} << 20;  // 64 Mi floats = 256 MiB per tensor
constexpr int kThreads = 2;
float* g_golden = nullptr;
float* g_candidate = nullptr;
float* g_sparse = nullptr;
float* g_copy = nullptr;  // the golden's bytes in a buffer of their own

void fill() {
  g_golden = static_cast<float*>(std::aligned_alloc(64, static_cast<std::size_t>(g_elements) * 4));
  g_candidate = static_cast<float*>(std::aligned_alloc(64, static_cast<std::size_t>(g_elements) * 4));
  g_sparse = static_cast<float*>(std::aligned_alloc(64, static_cast<std::size_t>(g_elements) * 4));
  g_copy = static_cast<float*>(std::aligned_alloc(64, static_cast<std::size_t>(g_elements) * 4));
  if (!g_golden || !g_candidate || !g_sparse || !g_copy) std::abort();
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, g_elements, 1 << 20), [](const tbb::blocked_range<int64_t>& r) {
    std::mt19937 rng(static_cast<uint32_t>(r.begin() >> 20));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> ulps(-4.0f, 4.0f);
    for (int64_t i = r.begin(); i < r.end(); ++i) {
      const float g = normal(rng);
      g_golden[i] = g;
      float c = g + ulps(rng) * std::ldexp(std::fabs(g), -23);
      if ((i & 0xFFFFF) == 7) c = std::nanf("");
      if ((i & 0xFFFFF) == 9) c = 0;
      if ((i & 0xFFFFF) == 11) c = g * 2;
      g_candidate[i] = c;
    }
    std::mt19937 pick(static_cast<uint32_t>(r.begin() >> 20) + 977u);
    std::uniform_int_distribution<int> percent(0, 99), step(1, 4);
    for (int64_t i = r.begin(); i < r.end(); ++i) {
      uint32_t w;
      std::memcpy(&w, &g_golden[i], 4);
      if (percent(pick) == 0) w += static_cast<uint32_t>(pick() & 1 ? step(pick) : -step(pick));
      std::memcpy(&g_sparse[i], &w, 4);
    }
    std::memcpy(g_copy + r.begin(), g_golden + r.begin(), static_cast<std::size_t>(r.size()) * 4);
  });
}

DLTensor tensor(float* data, int64_t* shape) {
  DLTensor t{};
  t.data = data;
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = 2;
  t.dtype = DLDataType{kDLFloat, 32, 1};
  t.shape = shape;
  return t;
}

void BM_StreamRead(benchmark::State& state) {
  tbb::task_arena arena(kThreads);
  const auto* a = reinterpret_cast<const uint32_t*>(g_golden);
  const auto* b = reinterpret_cast<const uint32_t*>(g_candidate);
  for (auto _ : state) {
    uint32_t total = arena.execute([&] {
      return tbb::parallel_reduce(
          tbb::blocked_range<int64_t>(0, g_elements, 1 << 16), uint32_t{0},
          [&](const tbb::blocked_range<int64_t>& r, uint32_t acc) {
            for (int64_t i = r.begin(); i < r.end(); ++i) acc += a[i] ^ b[i];
            return acc;
          },
          [](uint32_t x, uint32_t y) { return x + y; });
    });
    benchmark::DoNotOptimize(total);
  }
  state.SetBytesProcessed(state.iterations() * g_elements * 8);
}

// The floor of any comparison: one pass computing only what numpy's
// allclose-style checks compute (max |c - g|, the count failing
// |c - g| > atol + rtol |g|, the bitwise mismatches), vectorised by the
// compiler for the best ISA of the CPU. Its ratio to BM_StreamRead says how
// close to the bandwidth bound a few operations per element get on this
// machine; the signature does far more per element (exact sums, four
// histograms, the ratio c/g), which is what its own ratio pays for.
struct FloorPartial {
  float max_abs = 0;
  uint64_t fails = 0, mismatches = 0;
};

__attribute__((target_clones("avx512f", "avx2", "default"))) FloorPartial floor_pass(const float* g, const float* c,
                                                                                    int64_t begin, int64_t end) {
  // The maximum is taken over the bit patterns of |e| (ordered like the
  // values for non-negative floats) because GCC vectorises an integer max
  // reduction but not a float one without -ffast-math.
  uint32_t max_bits = 0;
  uint32_t fails = 0, mismatches = 0;  // per call: at most 2^16 elements
  const auto* gb = reinterpret_cast<const uint32_t*>(g);
  const auto* cb = reinterpret_cast<const uint32_t*>(c);
  for (int64_t i = begin; i < end; ++i) {
    const float e = std::fabs(c[i] - g[i]);
    uint32_t bits;
    std::memcpy(&bits, &e, 4);
    max_bits = bits > max_bits ? bits : max_bits;
    fails += e > 1e-5f + 1e-3f * std::fabs(g[i]) ? 1u : 0u;
    mismatches += gb[i] != cb[i] ? 1u : 0u;
  }
  float max_abs;
  std::memcpy(&max_abs, &max_bits, 4);
  return FloorPartial{max_abs, fails, mismatches};
}

void BM_AllcloseFloor(benchmark::State& state) {
  tbb::task_arena arena(kThreads);
  for (auto _ : state) {
    FloorPartial total = arena.execute([&] {
      return tbb::parallel_reduce(
          tbb::blocked_range<int64_t>(0, g_elements, 1 << 16), FloorPartial{},
          [&](const tbb::blocked_range<int64_t>& r, FloorPartial acc) {
            const FloorPartial p = floor_pass(g_golden, g_candidate, r.begin(), r.end());
            acc.max_abs = std::max(acc.max_abs, p.max_abs);
            acc.fails += p.fails;
            acc.mismatches += p.mismatches;
            return acc;
          },
          [](FloorPartial x, const FloorPartial& y) {
            x.max_abs = std::max(x.max_abs, y.max_abs);
            x.fails += y.fails;
            x.mismatches += y.mismatches;
            return x;
          });
    });
    benchmark::DoNotOptimize(total);
  }
  state.SetBytesProcessed(state.iterations() * g_elements * 8);
}

void signature(benchmark::State& state, bool with_map, int threads = kThreads, float* candidate = g_candidate) {
  int64_t shape[2] = {g_elements / 8192, 8192};
  const DLTensor g = tensor(g_golden, shape), c = tensor(candidate, shape);
  peat_signature_config_t cfg;
  peat_signature_config_init(&cfg);
  cfg.num_threads = threads;
  peat_signature_t sig;
  peat_signature_init(&sig);
  peat_spatial_map_t map;
  peat_spatial_map_init(&map);
  for (auto _ : state) {
    if (peat_analyze(&g, &c, &cfg, &sig, with_map ? &map : nullptr) != PEAT_STATUS_OK) {
      state.SkipWithError(peat_last_error_message());
      break;
    }
    benchmark::DoNotOptimize(sig);
  }
  state.counters["tolerance_fails"] = static_cast<double>(sig.tolerance_fail_count);
  state.counters["bitwise_mismatches"] = static_cast<double>(sig.bitwise_mismatch_count);
  // Share of 16-element blocks (one AVX-512 vector) holding a differing pair.
  int64_t mixed = 0;
  for (int64_t i = 0; i + 16 <= g_elements; i += 16)
    mixed += std::memcmp(g_golden + i, candidate + i, 64) != 0 ? 1 : 0;
  state.counters["differing_vector_share"] = static_cast<double>(mixed) / static_cast<double>(g_elements / 16);
  state.SetBytesProcessed(state.iterations() * g_elements * 8);
  peat_spatial_map_release(&map);
}

void BM_Signature(benchmark::State& state) { signature(state, false); }
void BM_SignatureWithMap(benchmark::State& state) { signature(state, true); }
void BM_Signature1Thread(benchmark::State& state) { signature(state, false, 1); }
void BM_SignatureSparse(benchmark::State& state) { signature(state, false, kThreads, g_sparse); }
void BM_SignatureSparse1Thread(benchmark::State& state) { signature(state, false, 1, g_sparse); }
// No pair differs: the bitwise-equal path alone. The candidate is a copy of
// the golden in another buffer, so that both are read from memory, as in the
// stream read (the golden against itself would read half the bytes).
void BM_SignatureIdentical(benchmark::State& state) { signature(state, false, kThreads, g_copy); }
void BM_SignatureIdentical1Thread(benchmark::State& state) { signature(state, false, 1, g_copy); }

// 2^28 dependent adds (one cycle of latency each, 8 per loop trip so the loop
// overhead runs beside them); real_time / 2^28 = one cycle.
void BM_CoreClock(benchmark::State& state) {
  constexpr int64_t kTrips = int64_t{1} << 25;
  for (auto _ : state) {
    uint64_t x = 1;
    for (int64_t i = 0; i < kTrips; ++i) {
#if defined(__x86_64__)
      asm volatile(
          "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
          "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0"
          : "+r"(x));
#else
      asm volatile("" : "+r"(x));
      x += 8;
#endif
    }
    benchmark::DoNotOptimize(x);
  }
  state.counters["adds"] = static_cast<double>(kTrips * 8);
}

}  // namespace

BENCHMARK(BM_StreamRead)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(BM_AllcloseFloor)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(BM_Signature)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(BM_SignatureWithMap)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(BM_Signature1Thread)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(BM_SignatureSparse)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(BM_SignatureSparse1Thread)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(BM_SignatureIdentical)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(BM_SignatureIdentical1Thread)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(BM_CoreClock)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(0.5);

int main(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--elements") {
      g_elements = std::atoll(argv[i + 1]);
      for (int j = i; j + 2 <= argc; ++j) argv[j] = argv[j + 2];
      argc -= 2;
      break;
    }
  g_elements = (g_elements / 8192) * 8192;
  fill();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::free(g_golden);
  std::free(g_candidate);
  std::free(g_sparse);
  return 0;
}
