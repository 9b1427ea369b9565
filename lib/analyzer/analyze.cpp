// The signature on the CPU: validation, config defaults, the chunked parallel
// pass over (golden, candidate) and the merge of partial signatures.
//
// Work is cut into fixed chunks of chunk_elements(numel) elements of the logical (row-major)
// index space. oneTBB runs the chunks in parallel; each writes its partial
// signature (and spatial-map partial) into a slot allocated once per call, and
// the slots are merged in index order. The result therefore does not depend on
// the number of threads. Under ThreadSanitizer the same chunks run on the
// calling thread (lib/core/sanitizers.hpp says why): TSan cannot see oneTBB's
// hand-offs, and the suppressed false reports on every byte a worker reads cost
// it quadratic time. Per element, the hot loop calls
// peat::hd::classify_pair (backends/common/signature_element.h), the same
// function the GPU kernels call.
#include "lib/analyzer/analyze.hpp"

#include "lib/analyzer/exact_acc.hpp"
#include "lib/analyzer/map.hpp"
#include "lib/analyzer/simd_f32.hpp"
#include "lib/core/dtype.hpp"
#include "lib/core/error.hpp"
#include "lib/core/sanitizers.hpp"

#include "backends/common/signature_element.h"
#include "backends/common/signature_plan.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_reduce.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace peat::impl::analyzer {
namespace {

constexpr int64_t kChunk = int64_t{1} << 16;
constexpr int64_t kMaxChunks = 256;  // bounds the per-call partials (about 2.4 KB each)

// Elements per chunk: kChunk, or more (a multiple of it) for tensors above
// kChunk * kMaxChunks elements. Each chunk costs a fast-path call, a
// partial's fold and a merge: at 64 Mi elements, 1,024 chunks of 64 Ki took
// 5-7 % more time than 256 of 256 Ki where most pairs are bitwise equal
// (`bench_signature`, interleaved). A function of the element count only, so
// the partials do not depend on the thread count.
int64_t chunk_elements(int64_t numel) {
  const int64_t per = (numel + kMaxChunks - 1) / kMaxChunks;
  return std::max(kChunk, ((per + kChunk - 1) / kChunk) * kChunk);
}

double smallest_normal(Float f) { return signature_plan::smallest_normal(store_code(f)); }

template <typename T>
T load(const std::byte* base, int64_t offset) {
  T value;
  std::memcpy(&value, base + offset * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return value;
}

// Per-chunk accumulation: the integer parts go straight into a partial
// signature; the sums go into carry-save exact accumulators (exact_acc.hpp),
// flushed into the partial's exact sums once per chunk; the ratio extrema are
// kept here and merged in at the end of the chunk.
struct ChunkSums {
  ExactAcc acc[kSumCount];  // the sums (simd_f32.hpp)
  uint64_t ratio_n = 0;
  double ratio_min = 0, ratio_max = 0;

  void ratio_add(double r) {
    if (ratio_n == 0 || hd::less_total(r, ratio_min)) ratio_min = r;
    if (ratio_n == 0 || hd::less_total(ratio_max, r)) ratio_max = r;
    ratio_n += 1;
    const double d = r - 1.0;
    acc[kSumRatioDev].add(d);
    acc[kSumRatioDevSq].add(d * d);
  }

  // XOR bit positions without a loop over the set bits: nibble j of nib[k]
  // counts bit 4j+k (up to 15 pairs), widened into byte counters (byte m of
  // bytes[k] counts bit 8m+k, of bytes[4+k] bit 8m+4+k) and flushed into the
  // histogram before a byte can pass 255.
  uint64_t nib[4] = {0, 0, 0, 0};
  uint64_t bytes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int nib_n = 0, bytes_n = 0;

  void xor_add(uint64_t x, uint64_t* hist) {
    constexpr uint64_t kOnes = 0x1111111111111111ull;
    nib[0] += x & kOnes;
    nib[1] += (x >> 1) & kOnes;
    nib[2] += (x >> 2) & kOnes;
    nib[3] += (x >> 3) & kOnes;
    if (++nib_n == 15) {
      widen();
      if (bytes_n > 240) xor_flush(hist);
    }
  }
  void widen() {
    constexpr uint64_t kLow = 0x0F0F0F0F0F0F0F0Full;
    for (int k = 0; k < 4; ++k) {
      bytes[k] += nib[k] & kLow;
      bytes[4 + k] += (nib[k] >> 4) & kLow;
      nib[k] = 0;
    }
    bytes_n += nib_n;
    nib_n = 0;
  }
  void xor_flush(uint64_t* hist) {
    widen();
    for (int k = 0; k < 8; ++k) {
      for (int m = 0; m < 8; ++m) hist[8 * m + k] += (bytes[k] >> (8 * m)) & 0xFF;
      bytes[k] = 0;
    }
    bytes_n = 0;
  }
};

F32FastParams fast_params(const ResolvedConfig& cfg, bool map) {
  F32FastParams p;
  p.rtol = cfg.rtol;
  p.atol = cfg.atol;
  float f = static_cast<float>(cfg.ratio_min_abs);
  if (static_cast<double>(f) < cfg.ratio_min_abs) f = std::nextafter(f, std::numeric_limits<float>::infinity());
  p.ratio_min_abs = f;
  p.stop_on_tolerance_fail = map;
  return p;
}

F32FastState fast_state(peat_signature_t& s, ChunkSums& sums) {
  F32FastState st;
  st.max_abs = s.max_abs_error;
  st.max_abs_index = s.max_abs_error_index;
  st.max_abs_g = s.max_abs_error_golden;
  st.max_abs_c = s.max_abs_error_candidate;
  st.max_rel = s.max_rel_error;
  st.max_rel_index = s.max_rel_error_index;
  st.max_abs_golden = s.max_abs_golden;
  st.ratio_n = sums.ratio_n;
  st.ratio_min = sums.ratio_min;
  st.ratio_max = sums.ratio_max;
  st.acc = sums.acc;
  st.ulp_hist = s.ulp_hist;
  st.rel_hist = s.rel_hist;
  st.xor_bit_hist = s.xor_bit_hist;
  st.popcount_hist = s.xor_popcount_hist;
  st.top_bit_hist = s.xor_top_bit_hist;
  st.top_bit_set_hist = s.xor_top_bit_set_hist;
  st.low_bit_hist = s.candidate_low_bit_hist;
  return st;
}

void store_fast_state(const F32FastState& st, peat_signature_t& s, ChunkSums& sums) {
  s.bitwise_mismatch_count += st.bitwise;
  s.value_mismatch_count += st.bitwise;  // ordinary pairs: finite, non-zero, so value and bits differ together
  s.tolerance_fail_count += st.tolerance_fail;
  s.finite_count += st.finite;
  s.max_abs_error = st.max_abs;
  s.max_abs_error_index = st.max_abs_index;
  s.max_abs_error_golden = st.max_abs_g;
  s.max_abs_error_candidate = st.max_abs_c;
  s.max_rel_error = st.max_rel;
  s.max_rel_error_index = st.max_rel_index;
  s.max_abs_golden = st.max_abs_golden;
  sums.ratio_n = st.ratio_n;
  sums.ratio_min = st.ratio_min;
  sums.ratio_max = st.ratio_max;
}

template <typename G, typename C, bool kMap>
void process_run(const std::byte* gbase, int64_t g_off, int64_t g_stride, const std::byte* cbase, int64_t c_off,
                 int64_t c_stride, int64_t n, int64_t index0, const ResolvedConfig& cfg, peat_signature_t& s,
                 ChunkSums& sums, MapPartial* map, const MapTarget* target) {
  using GB = typename G::Bits;
  using CB = typename C::Bits;
  const double rtol = cfg.rtol, atol = cfg.atol, ratio_min_abs = cfg.ratio_min_abs;
  auto scalar_range = [&](int64_t ja, int64_t jb) {
  for (int64_t j = ja; j < jb; ++j) {
    const GB gb = load<GB>(gbase, g_off + j * g_stride);
    GB cb;
    if constexpr (std::is_same_v<G, C>) {
      cb = load<CB>(cbase, c_off + j * c_stride);
    } else {
      cb = hd::from_double<G>(C::to_double(load<CB>(cbase, c_off + j * c_stride)));
    }
    const hd::PairInfo p = hd::classify_pair<G>(gb, cb, rtol, atol, ratio_min_abs);
    const uint32_t f = p.flags;
    const int64_t index = index0 + j;
    s.bitwise_mismatch_count += (f & hd::kBitwiseMismatch) ? 1 : 0;
    s.value_mismatch_count += (f & hd::kValueMismatch) ? 1 : 0;
    s.tolerance_fail_count += (f & hd::kToleranceFail) ? 1 : 0;
    s.ulp_hist[p.ulp_bucket] += 1;
    s.rel_hist[p.rel_bucket] += 1;
    s.xor_popcount_hist[hd::popcount64(p.xor_bits)] += 1;
    if (p.xor_bits != 0) {
      sums.xor_add(p.xor_bits, s.xor_bit_hist);
      hd::bit_positions_add(s, p);
    }
    if (f & hd::kFinite) [[likely]] {
      s.finite_count += 1;
      if (p.abs_err > s.max_abs_error || s.max_abs_error_index < 0) {
        s.max_abs_error = p.abs_err;
        s.max_abs_error_index = index;
        s.max_abs_error_golden = p.g;
        s.max_abs_error_candidate = p.c;
      }
      const double abs_g = std::fabs(p.g);
      s.max_abs_golden = abs_g > s.max_abs_golden ? abs_g : s.max_abs_golden;
      sums.acc[kSumError].add(p.err);
      sums.acc[kSumAbsError].add(p.abs_err);
      sums.acc[kSumSqError].add(p.err * p.err);
      sums.acc[kSumSqGolden].add(p.g * p.g);
      sums.acc[kSumSqCandidate].add(p.c * p.c);
      sums.acc[kSumGoldenCandidate].add(p.g * p.c);
      if ((f & hd::kRelDefined) && (p.rel > s.max_rel_error || s.max_rel_error_index < 0)) {
        s.max_rel_error = p.rel;
        s.max_rel_error_index = index;
      }
      if (f & hd::kRatio) sums.ratio_add(p.ratio);
    } else {
      s.golden_nan_count += (f & hd::kGoldenNan) ? 1 : 0;
      s.golden_inf_count += (f & hd::kGoldenInf) ? 1 : 0;
      s.candidate_nan_count += (f & hd::kCandidateNan) ? 1 : 0;
      s.candidate_inf_count += (f & hd::kCandidateInf) ? 1 : 0;
      s.new_nonfinite_count += (f & hd::kNewNonfinite) ? 1 : 0;
      s.lost_nonfinite_count += (f & hd::kLostNonfinite) ? 1 : 0;
    }
    s.sign_flip_count += (f & hd::kSignFlip) ? 1 : 0;
    s.dropped_count += (f & hd::kDropped) ? 1 : 0;
    s.spurious_count += (f & hd::kSpurious) ? 1 : 0;
    if constexpr (kMap) {
      const uint32_t want = cfg.map_mismatch == PEAT_MISMATCH_BITWISE ? hd::kBitwiseMismatch : hd::kToleranceFail;
      if (f & want) record_mismatch(*map, *target, index);
    }
  }
  };
  // The SIMD fast path: f32 against f32, both contiguous.
  constexpr bool kF32 = std::is_same_v<G, hd::FormatF32> && std::is_same_v<C, hd::FormatF32>;
  constexpr bool kBF16 = std::is_same_v<G, hd::FormatBF16> && std::is_same_v<C, hd::FormatBF16>;
  constexpr bool kF16 = std::is_same_v<G, hd::FormatF16> && std::is_same_v<C, hd::FormatF16>;
  const bool fast = (kF32 || kBF16 || kF16) && g_stride == 1 && c_stride == 1 &&
                    (!kMap || cfg.map_mismatch == PEAT_MISMATCH_TOLERANCE);
  if (fast) {
    const GB* gw = reinterpret_cast<const GB*>(gbase) + g_off;
    const GB* cw = reinterpret_cast<const GB*>(cbase) + c_off;
    const int64_t lanes = f32_fast_lanes();
    int64_t j = 0;
    while (j < n) {
      F32FastState st = fast_state(s, sums);
      int64_t done = 0;
      if constexpr (kF32)
        done = f32_fast(gw + j, cw + j, n - j, index0 + j, fast_params(cfg, kMap), st);
      else if constexpr (kBF16)
        done = bf16_fast(gw + j, cw + j, n - j, index0 + j, fast_params(cfg, kMap), st);
      else if constexpr (kF16)
        done = f16_fast(gw + j, cw + j, n - j, index0 + j, fast_params(cfg, kMap), st);
      if (done > 0) store_fast_state(st, s, sums);
      j += done;
      const int64_t k = std::min(n, j + lanes);  // the vector that stopped the fast path
      scalar_range(j, k);
      j = k;
    }
  } else {
    scalar_range(0, n);
  }
  s.count += static_cast<uint64_t>(n);
}

void fold_sums(peat_signature_t& s, ChunkSums& sums) {
  peat_exact_sum_t* const targets[kSumCount] = {&s.sum_error,        &s.sum_abs_error,        &s.sum_sq_error,
                                                &s.sum_sq_golden,    &s.sum_sq_candidate,     &s.sum_golden_candidate,
                                                &s.ratio_dev_sum,    &s.ratio_dev_sq_sum};
  for (int q = 0; q < kSumCount; ++q) sums.acc[q].flush_into(*targets[q]);
  sums.xor_flush(s.xor_bit_hist);
  if (sums.ratio_n > 0) {
    if (s.ratio_count == 0) {
      s.ratio_min = sums.ratio_min;
      s.ratio_max = sums.ratio_max;
    } else {
      if (hd::less_total(sums.ratio_min, s.ratio_min)) s.ratio_min = sums.ratio_min;
      if (hd::less_total(s.ratio_max, sums.ratio_max)) s.ratio_max = sums.ratio_max;
    }
    s.ratio_count += sums.ratio_n;
    sums.ratio_n = 0;
  }
}

// Walks the elements [begin, end) of the logical index space in row-major
// order as runs along the last dimension, calling fn(g_offset, g_stride,
// c_offset, c_stride, n, first_index) with offsets in elements.
template <typename Fn>
void for_each_run(const TensorView& g, const TensorView& c, int64_t begin, int64_t end, Fn&& fn) {
  if (begin >= end) return;
  if ((g.contiguous && c.contiguous) || g.ndim == 0) {
    fn(g.contiguous ? begin : g.offset_of(begin), int64_t{1}, c.contiguous ? begin : c.offset_of(begin), int64_t{1},
       end - begin, begin);
    return;
  }
  const int nd = g.ndim;
  std::array<int64_t, kMaxDims> idx{};
  int64_t rest = begin;
  for (int d = nd - 1; d >= 0; --d) {
    idx[d] = rest % g.shape[d];
    rest /= g.shape[d];
  }
  int64_t pos = begin;
  const int64_t inner = g.shape[nd - 1];
  while (pos < end) {
    int64_t g_off = 0, c_off = 0;
    for (int d = 0; d < nd; ++d) {
      g_off += idx[d] * g.strides[d];
      c_off += idx[d] * c.strides[d];
    }
    const int64_t n = std::min(inner - idx[nd - 1], end - pos);
    fn(g_off, g.strides[nd - 1], c_off, c.strides[nd - 1], n, pos);
    pos += n;
    idx[nd - 1] += n;
    for (int d = nd - 1; d > 0 && idx[d] == g.shape[d]; --d) {
      idx[d] = 0;
      ++idx[d - 1];
    }
  }
}

template <typename G, typename C>
void run_all(const TensorView& g, const TensorView& c, const ResolvedConfig& cfg, peat_signature_t& out,
             peat_spatial_map_t* map) {
  const int64_t numel = g.numel;
  const int64_t chunk = chunk_elements(numel);
  const int64_t chunks = (numel + chunk - 1) / chunk;
  std::vector<peat_signature_t> partials(static_cast<std::size_t>(std::max<int64_t>(chunks, 1)), empty_signature());
  std::vector<MapPartial> map_partials(map ? partials.size() : 0);
  MapTarget target{};
  if (map) target = map_target(*map);

  auto do_chunk = [&](int64_t k) {
    peat_signature_t& s = partials[static_cast<std::size_t>(k)];
    s.golden_dtype = g.dtype;  // the header merge() checks
    s.candidate_dtype = c.dtype;
    s.rtol = cfg.rtol;
    s.atol = cfg.atol;
    s.reduction_length = cfg.reduction_length;
    s.unit_roundoff = cfg.unit_roundoff;
    ChunkSums sums;
    const int64_t begin = k * chunk, end = std::min(numel, begin + chunk);
    MapPartial* mp = map ? &map_partials[static_cast<std::size_t>(k)] : nullptr;
    if (mp) map_partial_begin(*mp, cfg.index_base + begin, cfg.index_base + end);
    for_each_run(g, c, begin, end, [&](int64_t go, int64_t gs, int64_t co, int64_t cs, int64_t n, int64_t first) {
      if (mp)
        process_run<G, C, true>(g.base, go, gs, c.base, co, cs, n, cfg.index_base + first, cfg, s, sums, mp, &target);
      else
        process_run<G, C, false>(g.base, go, gs, c.base, co, cs, n, cfg.index_base + first, cfg, s, sums, nullptr,
                                 nullptr);
    });
    fold_sums(s, sums);
    if (mp) map_partial_end(*mp);
  };

  const bool parallel = cfg.num_threads > 1 && chunks > 1 && !kThreadSanitizer;
  auto run = [&] {
    if (!parallel) {
      for (int64_t k = 0; k < chunks; ++k) do_chunk(k);
    } else {
      tbb::parallel_for(tbb::blocked_range<int64_t>(0, chunks, 1), [&](const tbb::blocked_range<int64_t>& r) {
        for (int64_t k = r.begin(); k != r.end(); ++k) do_chunk(k);
      });
    }
  };
  // The partials merged: exact, so any order and grouping gives the same
  // bytes. In parallel when the chunks ran in parallel: merged one after
  // another on one thread, 1,024 partials took a few per cent of a 64 Mi
  // element call.
  auto merge_chunks = [&] {
    return tbb::parallel_reduce(
        tbb::blocked_range<int64_t>(0, chunks, 64), empty_signature(),
        [&](const tbb::blocked_range<int64_t>& r, peat_signature_t acc) {
          for (int64_t k = r.begin(); k != r.end(); ++k) merge(acc, partials[static_cast<std::size_t>(k)]);
          return acc;
        },
        [](peat_signature_t a, const peat_signature_t& b) {
          merge(a, b);
          return a;
        });
  };
  peat_signature_t total = empty_signature();
  if (parallel) {
    tbb::task_arena arena(cfg.num_threads);
    arena.execute(run);
    total = arena.execute(merge_chunks);
  } else {
    run();
    for (int64_t k = 0; k < chunks; ++k) merge(total, partials[static_cast<std::size_t>(k)]);
  }
  total.golden_dtype = g.dtype;
  total.candidate_dtype = c.dtype;
  total.rtol = cfg.rtol;
  total.atol = cfg.atol;
  total.reduction_length = cfg.reduction_length;
  total.unit_roundoff = cfg.unit_roundoff;
  out = total;
  if (map) {
    MapPartial whole;
    map_partial_begin(whole, cfg.index_base, cfg.index_base);
    for (int64_t k = 0; k < chunks; ++k) map_partial_merge(whole, map_partials[static_cast<std::size_t>(k)]);
    map_partial_store(whole, *map);
  }
}

template <typename G>
void dispatch_candidate(Float cf, const TensorView& g, const TensorView& c, const ResolvedConfig& cfg,
                        peat_signature_t& out, peat_spatial_map_t* map) {
  switch (cf) {
    case Float::F16: return run_all<G, hd::FormatF16>(g, c, cfg, out, map);
    case Float::BF16: return run_all<G, hd::FormatBF16>(g, c, cfg, out, map);
    case Float::F32: return run_all<G, hd::FormatF32>(g, c, cfg, out, map);
    case Float::F64: return run_all<G, hd::FormatF64>(g, c, cfg, out, map);
  }
}

bool same_dtype(DLDataType a, DLDataType b) { return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes; }

}  // namespace

peat_signature_t empty_signature() noexcept {
  peat_signature_t s;
  std::memset(&s, 0, sizeof(s));
  s.struct_size = sizeof(peat_signature_t);
  s.max_abs_error_index = -1;
  s.max_rel_error_index = -1;
  return s;
}

ResolvedConfig resolve_config(const TensorView& golden, const peat_signature_config_t& config) {
  const Float gf = require_float(golden.dtype, "golden");
  ResolvedConfig r;
  double def_rtol = 0, def_atol = 0;
  default_tolerance(gf, def_rtol, def_atol);
  auto check_finite = [](double v, const char* name) {
    if (std::isnan(v)) fail(PEAT_STATUS_INVALID_ARGUMENT, "config.{} is NaN", name);
  };
  check_finite(config.rtol, "rtol");
  check_finite(config.atol, "atol");
  check_finite(config.unit_roundoff, "unit_roundoff");
  check_finite(config.ratio_min_abs, "ratio_min_abs");
  r.rtol = config.rtol < 0 ? def_rtol : config.rtol;
  r.atol = config.atol < 0 ? def_atol : config.atol;
  if (config.reduction_length < 0)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "config.reduction_length is negative ({})", config.reduction_length);
  r.reduction_length = config.reduction_length;
  if (config.unit_roundoff < 0 || std::isinf(config.unit_roundoff))
    fail(PEAT_STATUS_INVALID_ARGUMENT, "config.unit_roundoff must be finite and >= 0 (got {})", config.unit_roundoff);
  r.unit_roundoff = config.unit_roundoff > 0 ? config.unit_roundoff : unit_roundoff(gf);
  r.ratio_min_abs = config.ratio_min_abs < 0 ? smallest_normal(gf) : config.ratio_min_abs;
  if (config.index_base < 0)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "config.index_base is negative ({})", config.index_base);
  r.index_base = config.index_base;
  if (config.map_mismatch != PEAT_MISMATCH_TOLERANCE && config.map_mismatch != PEAT_MISMATCH_BITWISE)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "config.map_mismatch has unknown value {}", config.map_mismatch);
  r.map_mismatch = config.map_mismatch;
  if (config.num_threads < 0)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "config.num_threads is negative ({})", config.num_threads);
  r.num_threads = config.num_threads;
  if (config.tile_rows < 1 || config.tile_cols < 1)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "config.tile_rows and tile_cols must be >= 1 (got {} x {})", config.tile_rows,
         config.tile_cols);
  r.tile_rows = config.tile_rows;
  r.tile_cols = config.tile_cols;
  return r;
}

void resolve_spatial(const TensorView& golden, const peat_signature_config_t& config, ResolvedConfig& r, bool piece) {
  int64_t rows = 0, cols = 0;
  const Problem p = signature_plan::spatial_view(config.spatial_rows, config.spatial_cols,
                                                 golden.ndim == 0 ? 1 : golden.shape[golden.ndim - 1], golden.numel,
                                                 r.index_base, r.index_base == 0 && !piece, rows, cols);
  if (!p.ok()) throw Error(p.status, p.message);
  r.rows = rows;
  r.cols = cols;
  r.tile_grid_rows = (rows + r.tile_rows - 1) / r.tile_rows;
  r.tile_grid_cols = (cols + r.tile_cols - 1) / r.tile_cols;
}

void default_tolerance(Float f, double& rtol, double& atol) {
  switch (f) {
    case Float::F16: rtol = 1e-3; atol = 1e-5; return;
    case Float::BF16: rtol = 1.6e-2; atol = 1e-5; return;
    case Float::F32: rtol = 1.3e-6; atol = 1e-5; return;
    case Float::F64: rtol = 1e-7; atol = 1e-7; return;
  }
}

namespace {
void analyze_impl(const TensorView& golden, const TensorView& candidate, const peat_signature_config_t& config,
                  peat_signature_t& out, peat_spatial_map_t* map, bool piece) {
  require_same_shape(golden, "golden", candidate, "candidate");
  const Float gf = require_float(golden.dtype, "golden");
  const Float cf = require_float(candidate.dtype, "candidate");
  if (!is_host(golden.device))
    fail(PEAT_STATUS_UNSUPPORTED, "golden: device type {} is not host memory (use the backend's signature_accumulate)",
         static_cast<int>(golden.device.device_type));
  if (!is_host(candidate.device))
    fail(PEAT_STATUS_UNSUPPORTED,
         "candidate: device type {} is not host memory (use the backend's signature_accumulate)",
         static_cast<int>(candidate.device.device_type));
  ResolvedConfig cfg = resolve_config(golden, config);
  if (map) {
    resolve_spatial(golden, config, cfg, piece);
    prepare_map(*map, cfg, &out, sizeof(out));
  }
  switch (gf) {
    case Float::F16: dispatch_candidate<hd::FormatF16>(cf, golden, candidate, cfg, out, map); break;
    case Float::BF16: dispatch_candidate<hd::FormatBF16>(cf, golden, candidate, cfg, out, map); break;
    case Float::F32: dispatch_candidate<hd::FormatF32>(cf, golden, candidate, cfg, out, map); break;
    case Float::F64: dispatch_candidate<hd::FormatF64>(cf, golden, candidate, cfg, out, map); break;
  }
}
}  // namespace

void analyze(const TensorView& golden, const TensorView& candidate, const peat_signature_config_t& config,
             peat_signature_t& out, peat_spatial_map_t* map) {
  analyze_impl(golden, candidate, config, out, map, false);
}

void analyze_piece(const TensorView& golden, const TensorView& candidate, const peat_signature_config_t& config,
                   peat_signature_t& out, peat_spatial_map_t* map) {
  analyze_impl(golden, candidate, config, out, map, true);
}

void merge(peat_signature_t& into, const peat_signature_t& from) {
  if (from.golden_dtype.bits == 0) return;  // empty: identity
  if (into.golden_dtype.bits == 0) {
    const uint32_t size = into.struct_size;
    into = from;
    into.struct_size = size;
    return;
  }
  if (!same_dtype(into.golden_dtype, from.golden_dtype))
    fail(PEAT_STATUS_INVALID_ARGUMENT, "cannot merge signatures of golden dtypes {} and {}",
         dtype_name(into.golden_dtype), dtype_name(from.golden_dtype));
  if (into.rtol != from.rtol || into.atol != from.atol)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "cannot merge signatures with different tolerances (rtol {} atol {} vs {} {})",
         into.rtol, into.atol, from.rtol, from.atol);
  if (into.reduction_length != from.reduction_length || into.unit_roundoff != from.unit_roundoff)
    fail(PEAT_STATUS_INVALID_ARGUMENT,
         "cannot merge signatures with different reduction_length/unit_roundoff ({}/{} vs {}/{})",
         into.reduction_length, into.unit_roundoff, from.reduction_length, from.unit_roundoff);
  into.flags |= from.flags;
  if (!same_dtype(into.candidate_dtype, from.candidate_dtype)) {
    into.flags |= PEAT_SIGNATURE_FLAG_MIXED_CANDIDATE_DTYPES;
    const auto key = [](DLDataType d) { return (static_cast<uint32_t>(d.code) << 8) | d.bits; };
    if (key(from.candidate_dtype) < key(into.candidate_dtype)) into.candidate_dtype = from.candidate_dtype;
  }
  // The data fields merge on the device too (block partials): one PEAT_HD function.
  hd::merge_signature_data(into, from);
}

}  // namespace peat::impl::analyzer
