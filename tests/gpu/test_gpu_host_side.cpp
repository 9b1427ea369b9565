// The host side of the GPU plugins' spatial map, checked without a device:
// gpu_signature_entry.hpp resolves the map geometry, and completes a map
// piece from what the signature kernel leaves (per-row/column/tile/lane
// counters, a mismatch mask) — first/last mismatch, runs, covered range — and
// merges it into the caller's map. Here the kernel's part is replayed on the
// host (classify_pair and the kernel's counter arithmetic) and the result is
// compared with the CPU backend's map of the same data, in one piece and in
// several (index_base), for both mismatch criteria.
//
// The signature kernel's algorithm is replayed too: the same grid
// (signature_blocks), the grid-stride assignment of elements to threads,
// per-thread accumulate_pair, the block reduction in the kernel's slot order
// and the host merge in block order; the result must be the CPU's signature.
#include "gpu_signature_entry.hpp"
#include "kernels/kernel_launch.h"

#include <cmath>
#include <cstdio>
#include <string>

namespace {

// Only what the map helpers use of a runtime's traits.
struct HostOnly {
  using error_t = int;
  using stream_t = void*;
  using event_t = void*;
  static constexpr const char* name = "host-only";
};
using Entries = peat::gpu::GpuEntries<HostOnly>;

int g_failures = 0;
void check(bool ok, const std::string& what) {
  if (!ok) {
    ++g_failures;
    std::printf("FAIL: %s\n", what.c_str());
  }
}

void run_case(int64_t rows, int64_t cols, int pieces, peat_mismatch_kind_t kind, uint32_t seed) {
  const std::string what = std::to_string(rows) + "x" + std::to_string(cols) + " in " + std::to_string(pieces) +
                           (kind == PEAT_MISMATCH_BITWISE ? " (bitwise)" : " (tolerance)");
  const int64_t n = rows * cols;
  std::vector<float> g(static_cast<std::size_t>(n)), c(static_cast<std::size_t>(n));
  uint32_t s = seed;
  for (int64_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    const float x = static_cast<float>(s >> 8) * 1e-6f - 4.0f;
    g[static_cast<std::size_t>(i)] = x;
    const uint32_t r = (s >> 4) % 100;
    // Runs of mismatches (a stretch every so often), isolated ones, ULP-level noise.
    const bool stretch = (i / 37) % 11 == 3;
    c[static_cast<std::size_t>(i)] = stretch || r < 3 ? x * 1.01f : (r < 20 ? std::nextafter(x, 10.0f) : x);
  }
  peat_signature_config_t cfg;
  peat_signature_config_init(&cfg);
  cfg.spatial_rows = rows;
  cfg.spatial_cols = cols;
  cfg.tile_rows = 7;
  cfg.tile_cols = 16;
  cfg.map_mismatch = kind;
  int64_t shape[2] = {rows, cols};
  DLTensor tg{}, tc{};
  tg.data = g.data();
  tg.device = DLDevice{kDLCPU, 0};
  tg.ndim = 2;
  tg.dtype = DLDataType{kDLFloat, 32, 1};
  tg.shape = shape;
  tc = tg;
  tc.data = c.data();
  peat_signature_t sig;
  peat_signature_init(&sig);
  peat_spatial_map_t cpu;
  peat_spatial_map_init(&cpu);
  check(peat_analyze_accumulate(&tg, &tc, &cfg, &sig, &cpu) == PEAT_STATUS_OK, what + ": CPU analyze");

  double rtol = 0, atol = 0;
  peat_default_tolerance(tg.dtype, &rtol, &atol);
  const uint32_t want = kind == PEAT_MISMATCH_BITWISE ? peat::hd::kBitwiseMismatch : peat::hd::kToleranceFail;
  peat_spatial_map_t gpu;
  peat_spatial_map_init(&gpu);
  const int64_t piece_rows = rows / pieces;
  for (int k = 0; k < pieces; ++k) {
    const int64_t r0 = k * piece_rows, r1 = k == pieces - 1 ? rows : r0 + piece_rows, base = r0 * cols;
    const int64_t m = (r1 - r0) * cols;
    int64_t pshape[2] = {r1 - r0, cols};
    DLTensor piece_tensor = tg;
    piece_tensor.shape = pshape;
    cfg.index_base = base;
    peat_spatial_map_t piece;
    peat_spatial_map_init(&piece);
    check(Entries::map_geometry(&piece_tensor, m, cfg, piece) == PEAT_STATUS_OK, what + ": geometry");
    const int64_t tiles = piece.tile_grid_rows * piece.tile_grid_cols;
    std::vector<uint64_t> counts(static_cast<std::size_t>(piece.rows + piece.cols + tiles + 96), 0);
    std::vector<uint32_t> mask(static_cast<std::size_t>((m + 31) / 32), 0);
    // The kernel's part (signature_kernels.cu: record_mismatch), replayed.
    for (int64_t i = 0; i < m; ++i) {
      uint32_t gb, cb;
      std::memcpy(&gb, &g[static_cast<std::size_t>(base + i)], 4);
      std::memcpy(&cb, &c[static_cast<std::size_t>(base + i)], 4);
      const peat::hd::PairInfo p = peat::hd::classify_pair<peat::hd::FormatF32>(gb, cb, rtol, atol, 1.17549435e-38);
      if ((p.flags & want) == 0) continue;
      const int64_t index = base + i, row = index / piece.cols, col = index - row * piece.cols;
      mask[static_cast<std::size_t>(i >> 5)] |= 1u << (i & 31);
      counts[static_cast<std::size_t>(row)] += 1;
      counts[static_cast<std::size_t>(piece.rows + col)] += 1;
      counts[static_cast<std::size_t>(piece.rows + piece.cols + (row / piece.tile_rows) * piece.tile_grid_cols +
                                      col / piece.tile_cols)] += 1;
      counts[static_cast<std::size_t>(piece.rows + piece.cols + tiles + (index & 31))] += 1;
      counts[static_cast<std::size_t>(piece.rows + piece.cols + tiles + 32 + (index & 63))] += 1;
    }
    check(Entries::merge_map_piece(piece, counts, mask, m, base, gpu) == PEAT_STATUS_OK,
          what + ": merge piece: " + peat_last_error_message());
  }
  check(cpu.mismatch_count > 0, what + ": the data has mismatches");
  check(cpu.rows == gpu.rows && cpu.cols == gpu.cols && cpu.tile_grid_rows == gpu.tile_grid_rows &&
            cpu.tile_grid_cols == gpu.tile_grid_cols,
        what + ": geometry");
  if (cpu.rows == gpu.rows && cpu.cols == gpu.cols && cpu.tile_grid_rows == gpu.tile_grid_rows &&
      cpu.tile_grid_cols == gpu.tile_grid_cols) {
    check(std::memcmp(cpu.row_counts, gpu.row_counts, static_cast<std::size_t>(cpu.rows) * 8) == 0, what + ": rows");
    check(std::memcmp(cpu.col_counts, gpu.col_counts, static_cast<std::size_t>(cpu.cols) * 8) == 0, what + ": cols");
    check(std::memcmp(cpu.tile_counts, gpu.tile_counts,
                      static_cast<std::size_t>(cpu.tile_grid_rows * cpu.tile_grid_cols) * 8) == 0,
          what + ": tiles");
  }
  check(std::memcmp(cpu.lane32_counts, gpu.lane32_counts, sizeof(cpu.lane32_counts)) == 0, what + ": lane32");
  check(std::memcmp(cpu.lane64_counts, gpu.lane64_counts, sizeof(cpu.lane64_counts)) == 0, what + ": lane64");
  check(cpu.mismatch_count == gpu.mismatch_count, what + ": mismatch_count");
  check(cpu.first_mismatch == gpu.first_mismatch && cpu.last_mismatch == gpu.last_mismatch, what + ": first/last");
  check(cpu.longest_run == gpu.longest_run && cpu.longest_run_start == gpu.longest_run_start,
        what + ": longest run " + std::to_string(cpu.longest_run) + "@" + std::to_string(cpu.longest_run_start) +
            " vs " + std::to_string(gpu.longest_run) + "@" + std::to_string(gpu.longest_run_start));
  check(cpu.covered_begin == gpu.covered_begin && cpu.covered_end == gpu.covered_end &&
            cpu.leading_run == gpu.leading_run && cpu.trailing_run == gpu.trailing_run,
        what + ": covered range and edge runs");
  peat_spatial_map_release(&cpu);
  peat_spatial_map_release(&gpu);
}

// The signature kernel's algorithm (signature_kernels.cu) on the host, for
// golden format G and a candidate of the same format.
template <typename G>
peat_signature_t replay_signature(const std::vector<typename G::Bits>& g, const std::vector<typename G::Bits>& c,
                                  double rtol, double atol, double ratio_min_abs) {
  namespace k = peat::kernels;
  const int64_t n = static_cast<int64_t>(g.size());
  const int32_t blocks = k::signature_blocks(n);
  const int64_t stride = static_cast<int64_t>(blocks) * k::kBlockThreads;
  peat_signature_t total;
  peat_signature_init(&total);
  std::vector<peat_signature_t> mine(k::kBlockThreads), slot(k::kSignatureSlots);
  for (int32_t b = 0; b < blocks; ++b) {
    for (int t = 0; t < k::kBlockThreads; ++t) {
      peat_signature_init(&mine[static_cast<std::size_t>(t)]);
      for (int64_t i = static_cast<int64_t>(b) * k::kBlockThreads + t; i < n; i += stride) {
        const auto p = peat::hd::classify_pair<G>(g[static_cast<std::size_t>(i)], c[static_cast<std::size_t>(i)], rtol,
                                                  atol, ratio_min_abs);
        peat::hd::accumulate_pair(mine[static_cast<std::size_t>(t)], p, i);
      }
    }
    for (int round = 0; round < k::kBlockThreads / k::kSignatureSlots; ++round)
      for (int t = round * k::kSignatureSlots; t < (round + 1) * k::kSignatureSlots; ++t) {
        if (round == 0) slot[static_cast<std::size_t>(t)] = mine[static_cast<std::size_t>(t)];
        else peat::hd::merge_signature_data(slot[static_cast<std::size_t>(t % k::kSignatureSlots)], mine[static_cast<std::size_t>(t)]);
      }
    for (int width = k::kSignatureSlots / 2; width >= 1; width /= 2)
      for (int t = 0; t < width; ++t)
        peat::hd::merge_signature_data(slot[static_cast<std::size_t>(t)], slot[static_cast<std::size_t>(t + width)]);
    peat::hd::merge_signature_data(total, slot[0]);
  }
  return total;
}

bool close(double a, double b) {
  if (a == b || (std::isnan(a) && std::isnan(b))) return true;
  return std::fabs(a - b) <= 1e-12 * std::fmax(std::fabs(a), std::fabs(b));
}

void signature_case(int64_t n, uint32_t seed) {
  const std::string what = "signature replay of " + std::to_string(n) + " f32";
  std::vector<uint32_t> g(static_cast<std::size_t>(n)), c(static_cast<std::size_t>(n));
  uint32_t s = seed;
  for (int64_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    const float x = static_cast<float>(static_cast<int32_t>(s)) * 1e-9f;
    float y = x * (1.0f + static_cast<float>((s >> 3) & 0xF) * 1e-7f);
    if ((s >> 9) % 997 == 0) y = 0;
    if ((s >> 9) % 991 == 0) y = NAN;
    if ((s >> 9) % 983 == 0) y = -x;
    std::memcpy(&g[static_cast<std::size_t>(i)], &x, 4);
    std::memcpy(&c[static_cast<std::size_t>(i)], &y, 4);
  }
  double rtol = 0, atol = 0;
  const DLDataType f32{kDLFloat, 32, 1};
  peat_default_tolerance(f32, &rtol, &atol);
  peat_signature_t gpu = replay_signature<peat::hd::FormatF32>(g, c, rtol, atol, 1.17549435e-38);
  int64_t shape[1] = {n};
  DLTensor tg{}, tc{};
  tg.data = g.data();
  tg.device = DLDevice{kDLCPU, 0};
  tg.ndim = 1;
  tg.dtype = f32;
  tg.shape = shape;
  tc = tg;
  tc.data = c.data();
  peat_signature_t cpu;
  peat_signature_init(&cpu);
  check(peat_analyze(&tg, &tc, nullptr, &cpu, nullptr) == PEAT_STATUS_OK, what + ": CPU analyze");
#define SAME(f) check(cpu.f == gpu.f, what + ": " #f)
  SAME(count); SAME(bitwise_mismatch_count); SAME(value_mismatch_count); SAME(candidate_nan_count);
  SAME(new_nonfinite_count); SAME(sign_flip_count); SAME(dropped_count); SAME(tolerance_fail_count);
  SAME(finite_count); SAME(max_abs_error); SAME(max_abs_error_index); SAME(max_abs_error_golden);
  SAME(max_abs_error_candidate); SAME(max_rel_error); SAME(max_rel_error_index); SAME(max_abs_golden);
  SAME(ratio_count); SAME(ratio_min); SAME(ratio_max);
#undef SAME
  check(std::memcmp(cpu.ulp_hist, gpu.ulp_hist, sizeof(cpu.ulp_hist)) == 0, what + ": ulp_hist");
  check(std::memcmp(cpu.rel_hist, gpu.rel_hist, sizeof(cpu.rel_hist)) == 0, what + ": rel_hist");
  check(std::memcmp(cpu.xor_bit_hist, gpu.xor_bit_hist, sizeof(cpu.xor_bit_hist)) == 0, what + ": xor_bit_hist");
  check(std::memcmp(cpu.xor_popcount_hist, gpu.xor_popcount_hist, sizeof(cpu.xor_popcount_hist)) == 0,
        what + ": xor_popcount_hist");
  // Exact sums: identical digits whatever the merge tree.
#define SAME_SUM(f) check(std::memcmp(&cpu.f, &gpu.f, sizeof(cpu.f)) == 0, what + ": " #f)
  SAME_SUM(sum_error); SAME_SUM(sum_abs_error); SAME_SUM(sum_sq_error); SAME_SUM(sum_sq_golden);
  SAME_SUM(sum_sq_candidate); SAME_SUM(sum_golden_candidate); SAME_SUM(ratio_dev_sum); SAME_SUM(ratio_dev_sq_sum);
#undef SAME_SUM
  // Header fields as the plugin sets them, then the sums through the derived metrics.
  gpu.golden_dtype = gpu.candidate_dtype = f32;
  gpu.rtol = rtol;
  gpu.atol = atol;
  gpu.unit_roundoff = cpu.unit_roundoff;
  using Metric = peat_status_t (*)(const peat_signature_t*, double*);
  const Metric metrics[] = {peat_signature_rmse, peat_signature_relative_l2, peat_signature_sqnr_db, peat_signature_cosine};
  for (Metric m : metrics) {
    double a = 0, b = 0;
    check(m(&cpu, &a) == m(&gpu, &b) && close(a, b), what + ": a derived metric (sums) differs");
  }
}

}  // namespace

int main() {
  signature_case(1000, 5);
  signature_case(300001, 6);  // many blocks, several elements per thread
  run_case(64, 100, 1, PEAT_MISMATCH_TOLERANCE, 1);
  run_case(64, 100, 4, PEAT_MISMATCH_TOLERANCE, 2);
  run_case(33, 257, 3, PEAT_MISMATCH_BITWISE, 3);
  run_case(1, 4099, 1, PEAT_MISMATCH_BITWISE, 4);
  std::printf("GPU host side (signature replay, map assembly) vs CPU: %d failures\n", g_failures);
  return g_failures == 0 ? 0 : 1;
}
