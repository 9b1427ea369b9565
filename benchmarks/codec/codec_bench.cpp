// Trace codec on realistic training tensors, one thread (MB/s per core):
//   weights       f32 ~ N(0, 0.02)                     (a freshly initialised layer)
//   activations   f32 ReLU output: half exact zeros, the rest |N(0, 1)|
//   gradients     f32 N(0, 1) scaled per 1024-block by 10^U(-6, -2) (wide dynamic range)
//   weights_bf16  bf16 ~ N(0, 0.02)
// For each: encode and decode with byte-shuffle + zstd level 1 (the profiler's
// default) and with the raw codec (a copy: the baseline). Counters: bytes/s of
// raw tensor bytes, and size_ratio = encoded / raw.
#include <benchmark/benchmark.h>

#include "trace/codec.hpp"

#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace {

constexpr std::size_t kElements = std::size_t{4} << 20;  // 16 MiB of f32

struct Data {
  std::vector<std::byte> bytes;
  std::size_t elem_size = 4;
};

std::vector<std::byte> f32_bytes(const std::vector<float>& v) {
  std::vector<std::byte> out(v.size() * 4);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

std::array<Data, 4> make_sets() {
  std::mt19937_64 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> uniform(-6.0f, -2.0f);
  std::vector<float> w(kElements), a(kElements), g(kElements);
  for (auto& x : w) x = 0.02f * normal(rng);
  for (auto& x : a) {
    const float v = normal(rng);
    x = v > 0 ? v : 0.0f;
  }
  for (std::size_t b = 0; b < kElements; b += 1024) {
    const float scale = std::pow(10.0f, uniform(rng));
    for (std::size_t i = b; i < b + 1024; ++i) g[i] = scale * normal(rng);
  }
  std::vector<std::byte> bf(kElements * 2);
  for (std::size_t i = 0; i < kElements; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &w[i], 4);
    const uint16_t h = static_cast<uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);  // nearest even
    std::memcpy(bf.data() + 2 * i, &h, 2);
  }
  return {Data{f32_bytes(w), 4}, Data{f32_bytes(a), 4}, Data{f32_bytes(g), 4}, Data{bf, 2}};
}

const Data& data(int kind) {
  static const std::array<Data, 4> sets = make_sets();
  return sets[static_cast<std::size_t>(kind)];
}

const char* kKinds[] = {"weights", "activations", "gradients", "weights_bf16"};

void BM_Encode(benchmark::State& state) {
  const auto codec = static_cast<peat_trace_codec_t>(state.range(0));
  const Data& d = data(static_cast<int>(state.range(1)));
  std::vector<std::byte> out;
  out.reserve(peat::impl::trace::encoded_bound(codec, d.bytes.size()));
  std::size_t encoded = 0;
  for (auto _ : state) {
    out.clear();
    encoded = peat::impl::trace::encode(codec, 1, d.bytes.data(), d.bytes.size(), d.elem_size, out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * d.bytes.size()));
  state.counters["size_ratio"] = static_cast<double>(encoded) / static_cast<double>(d.bytes.size());
  state.SetLabel(kKinds[state.range(1)]);
}

void BM_Decode(benchmark::State& state) {
  const auto codec = static_cast<peat_trace_codec_t>(state.range(0));
  const Data& d = data(static_cast<int>(state.range(1)));
  std::vector<std::byte> encoded;
  peat::impl::trace::encode(codec, 1, d.bytes.data(), d.bytes.size(), d.elem_size, encoded);
  std::vector<std::byte> out(d.bytes.size()), scratch;
  for (auto _ : state) {
    const char* why = peat::impl::trace::decode(codec, encoded.data(), encoded.size(), out.data(), out.size(), d.elem_size,
                                          scratch);
    if (*why) state.SkipWithError(why);
    benchmark::DoNotOptimize(out.data());
  }
  if (std::memcmp(out.data(), d.bytes.data(), out.size()) != 0) state.SkipWithError("decode is not bit-exact");
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * d.bytes.size()));
  state.SetLabel(kKinds[state.range(1)]);
}

void Args(benchmark::internal::Benchmark* b) {
  for (int codec : {PEAT_TRACE_CODEC_RAW, PEAT_TRACE_CODEC_SHUFFLE_ZSTD})
    for (int kind = 0; kind < 4; ++kind) b->Args({codec, kind});
  b->ArgNames({"codec", "tensor"});
  b->Unit(benchmark::kMillisecond);
  b->MinTime(0.3);
}

}  // namespace

BENCHMARK(BM_Encode)->Apply(Args);
BENCHMARK(BM_Decode)->Apply(Args);
BENCHMARK_MAIN();
