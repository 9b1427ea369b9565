// conformance.hpp — the conformance suite of a backend table against the CPU
// backend (DESIGN.md §4): on the same data, the table's signature_accumulate
// gives the CPU's signature and spatial map, and its inject writes the same
// bits and the same ground truth, for every dtype and every error model.
// run_conformance() is called by test_device_conformance.cpp (a real device
// plugin) and by test_gpu_host_emulation.cpp (the plugins' host code over
// host memory, with the kernels replayed on the host).
#pragma once

#include <peat/peat.h>

#include "float_bits.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

int g_failures = 0, g_checks = 0;

void check(bool ok, const std::string& what) {
  ++g_checks;
  if (!ok) {
    ++g_failures;
    std::printf("FAIL: %s\n", what.c_str());
  }
}

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
double uniform(uint64_t& s) { return static_cast<double>(splitmix(s) >> 11) * (1.0 / 9007199254740992.0); }

struct Dtype {
  const char* name;
  DLDataType dl;
  int size;
};
const Dtype kF16{"f16", {kDLFloat, 16, 1}, 2}, kBF16{"bf16", {kDLBfloat, 16, 1}, 2}, kF32{"f32", {kDLFloat, 32, 1}, 4},
    kF64{"f64", {kDLFloat, 64, 1}, 8};

// Stores a double into `dt` storage at element i.
void put(std::vector<unsigned char>& buf, const Dtype& dt, std::size_t i, double v) {
  unsigned char* p = buf.data() + i * static_cast<std::size_t>(dt.size);
  if (dt.dl.bits == 64) { std::memcpy(p, &v, 8); return; }
  const float f = static_cast<float>(v);
  if (dt.dl.bits == 32) { std::memcpy(p, &f, 4); return; }
  const uint16_t h = dt.dl.code == kDLBfloat ? peat::hd::float_to_bf16(f) : peat::hd::float_to_f16(f);
  std::memcpy(p, &h, 2);
}

// Golden values and a candidate with every kind of difference the signature
// counts: ULP-level noise, bit flips, dropped and spurious values, sign flips,
// NaN and Inf on either side.
void make_pair(const Dtype& g, const Dtype& c, std::size_t n, uint64_t seed, std::vector<unsigned char>& gb,
               std::vector<unsigned char>& cb) {
  gb.assign(n * static_cast<std::size_t>(g.size), 0);
  cb.assign(n * static_cast<std::size_t>(c.size), 0);
  uint64_t s = seed;
  for (std::size_t i = 0; i < n; ++i) {
    double x = (uniform(s) * 2 - 1) * std::ldexp(1.0, static_cast<int>(splitmix(s) % 12) - 6);
    double y = x * (1 + (uniform(s) - 0.5) * 1e-3);
    const uint64_t r = splitmix(s) % 1000;
    if (r == 0) y = 0;                  // dropped
    else if (r == 1) { x = 0; }         // spurious
    else if (r == 2) y = -x;            // sign flip
    else if (r == 3) y = NAN;           // new NaN
    else if (r == 4) y = INFINITY;      // new Inf
    else if (r == 5) { x = NAN; y = NAN; }
    else if (r == 6) { x = -INFINITY; y = 1.0; }
    else if (r < 300) y = x;            // exact
    else if (r < 310) y = x * 3.5;      // large error
    put(gb, g, i, x);
    put(cb, c, i, y);
  }
}

DLTensor host_tensor(void* data, const Dtype& dt, int32_t ndim, int64_t* shape) {
  DLTensor t{};
  t.data = data;
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = ndim;
  t.dtype = dt.dl;
  t.shape = shape;
  return t;
}

struct Device {
  const peat_backend_api_t* api;
  int32_t type;
  void* upload(const std::vector<unsigned char>& host) {
    void* p = nullptr;
    check(api->alloc(0, host.size(), &p) == PEAT_STATUS_OK, std::string("alloc: ") + api->last_error());
    check(api->copy(p, DLDevice{static_cast<DLDeviceType>(type), 0}, host.data(), DLDevice{kDLCPU, 0}, host.size(),
                    nullptr) == PEAT_STATUS_OK, "upload");
    return p;
  }
  void download(std::vector<unsigned char>& host, const void* p) {
    check(api->copy(host.data(), DLDevice{kDLCPU, 0}, p, DLDevice{static_cast<DLDeviceType>(type), 0}, host.size(),
                    nullptr) == PEAT_STATUS_OK, "download");
    check(api->synchronize(0, nullptr) == PEAT_STATUS_OK, "synchronize");
  }
  DLTensor tensor(void* data, const Dtype& dt, int32_t ndim, int64_t* shape) {
    DLTensor t = host_tensor(data, dt, ndim, shape);
    t.device = DLDevice{static_cast<DLDeviceType>(type), 0};
    return t;
  }
};

bool close(double a, double b) {
  if (a == b || (std::isnan(a) && std::isnan(b))) return true;
  return std::fabs(a - b) <= 1e-12 * std::fmax(std::fabs(a), std::fabs(b));
}

void compare_signatures(const peat_signature_t& a, const peat_signature_t& b, const std::string& what) {
  const auto eq = [&](bool ok, const char* field) { check(ok, what + ": " + field + " differs"); };
#define SAME(f) eq(a.f == b.f, #f)
  SAME(count); SAME(bitwise_mismatch_count); SAME(value_mismatch_count); SAME(golden_nan_count);
  SAME(golden_inf_count); SAME(candidate_nan_count); SAME(candidate_inf_count); SAME(new_nonfinite_count);
  SAME(lost_nonfinite_count); SAME(sign_flip_count); SAME(dropped_count); SAME(spurious_count);
  SAME(tolerance_fail_count); SAME(finite_count); SAME(max_abs_error); SAME(max_abs_error_index);
  SAME(max_abs_error_golden); SAME(max_abs_error_candidate); SAME(max_rel_error); SAME(max_rel_error_index);
  SAME(max_abs_golden); SAME(ratio_count); SAME(ratio_min); SAME(ratio_max); SAME(rtol); SAME(atol);
  SAME(reduction_length); SAME(unit_roundoff); SAME(flags);
  SAME(golden_dtype.code); SAME(golden_dtype.bits); SAME(candidate_dtype.code); SAME(candidate_dtype.bits);
#undef SAME
  eq(std::memcmp(a.ulp_hist, b.ulp_hist, sizeof(a.ulp_hist)) == 0, "ulp_hist");
  eq(std::memcmp(a.rel_hist, b.rel_hist, sizeof(a.rel_hist)) == 0, "rel_hist");
  eq(std::memcmp(a.xor_bit_hist, b.xor_bit_hist, sizeof(a.xor_bit_hist)) == 0, "xor_bit_hist");
  eq(std::memcmp(a.xor_popcount_hist, b.xor_popcount_hist, sizeof(a.xor_popcount_hist)) == 0, "xor_popcount_hist");
  // The sums are exact (peat_exact_sum_t): the device's merge tree (blocks)
  // differs from the CPU's (chunks), yet the digits must be identical.
#define SAME_SUM(f) eq(std::memcmp(&a.f, &b.f, sizeof(a.f)) == 0, #f)
  SAME_SUM(sum_error); SAME_SUM(sum_abs_error); SAME_SUM(sum_sq_error); SAME_SUM(sum_sq_golden);
  SAME_SUM(sum_sq_candidate); SAME_SUM(sum_golden_candidate); SAME_SUM(ratio_dev_sum); SAME_SUM(ratio_dev_sq_sum);
#undef SAME_SUM
  // The derived metrics read the sums the public way.
  using Metric = peat_status_t (*)(const peat_signature_t*, double*);
  const std::pair<Metric, const char*> metrics[] = {{peat_signature_rmse, "rmse"},
                                                    {peat_signature_relative_l2, "relative_l2"},
                                                    {peat_signature_sqnr_db, "sqnr_db"},
                                                    {peat_signature_cosine, "cosine"}};
  for (const auto& [fn, name] : metrics) {
    double x = 0, y = 0;
    const peat_status_t sa = fn(&a, &x), sb = fn(&b, &y);
    eq(sa == sb && (sa != PEAT_STATUS_OK || close(x, y)), name);
  }
}

void compare_maps(const peat_spatial_map_t& a, const peat_spatial_map_t& b, const std::string& what) {
  const auto eq = [&](bool ok, const char* field) { check(ok, what + ": map " + field + " differs"); };
  eq(a.rows == b.rows && a.cols == b.cols && a.tile_grid_rows == b.tile_grid_rows && a.tile_grid_cols == b.tile_grid_cols,
     "geometry");
  if (a.rows != b.rows || a.cols != b.cols || a.tile_grid_rows != b.tile_grid_rows || a.tile_grid_cols != b.tile_grid_cols)
    return;
  eq(std::memcmp(a.row_counts, b.row_counts, static_cast<std::size_t>(a.rows) * 8) == 0, "row_counts");
  eq(std::memcmp(a.col_counts, b.col_counts, static_cast<std::size_t>(a.cols) * 8) == 0, "col_counts");
  eq(std::memcmp(a.tile_counts, b.tile_counts, static_cast<std::size_t>(a.tile_grid_rows * a.tile_grid_cols) * 8) == 0,
     "tile_counts");
  eq(std::memcmp(a.lane32_counts, b.lane32_counts, sizeof(a.lane32_counts)) == 0, "lane32_counts");
  eq(std::memcmp(a.lane64_counts, b.lane64_counts, sizeof(a.lane64_counts)) == 0, "lane64_counts");
  eq(a.mismatch_count == b.mismatch_count && a.first_mismatch == b.first_mismatch && a.last_mismatch == b.last_mismatch,
     "count/first/last");
  eq(a.longest_run == b.longest_run && a.longest_run_start == b.longest_run_start, "longest run");
  eq(a.covered_begin == b.covered_begin && a.covered_end == b.covered_end && a.leading_run == b.leading_run &&
         a.trailing_run == b.trailing_run,
     "covered range / edge runs");
}

// Signature of (golden, candidate) on the CPU in one call and on the device
// in `pieces` consecutive calls (index_base), with the spatial map.
void signature_case(Device& dev, const Dtype& g, const Dtype& c, int64_t rows, int64_t cols, int pieces,
                    peat_mismatch_kind_t kind) {
  const std::size_t n = static_cast<std::size_t>(rows * cols);
  std::vector<unsigned char> gb, cb;
  make_pair(g, c, n, 1234 + n, gb, cb);
  const std::string what = std::string("signature ") + g.name + "/" + c.name + " " + std::to_string(rows) + "x" +
                           std::to_string(cols) + (pieces > 1 ? " in pieces" : "") +
                           (kind == PEAT_MISMATCH_BITWISE ? " bitwise map" : "");
  peat_signature_config_t cfg;
  peat_signature_config_init(&cfg);
  cfg.spatial_rows = rows;
  cfg.spatial_cols = cols;
  cfg.tile_rows = 16;
  cfg.tile_cols = 24;
  cfg.map_mismatch = kind;

  int64_t shape[2] = {rows, cols};
  DLTensor hg = host_tensor(gb.data(), g, 2, shape), hc = host_tensor(cb.data(), c, 2, shape);
  peat_signature_t cpu;
  peat_signature_init(&cpu);
  peat_spatial_map_t cpu_map;
  peat_spatial_map_init(&cpu_map);
  check(peat_analyze_accumulate(&hg, &hc, &cfg, &cpu, &cpu_map) == PEAT_STATUS_OK,
        what + ": CPU analyze: " + peat_last_error_message());

  void* dg = dev.upload(gb);
  void* dc = dev.upload(cb);
  peat_signature_t gpu;
  peat_signature_init(&gpu);
  peat_spatial_map_t gpu_map;
  peat_spatial_map_init(&gpu_map);
  const int64_t piece_rows = rows / pieces;
  for (int k = 0; k < pieces; ++k) {
    const int64_t r0 = k * piece_rows, r1 = k == pieces - 1 ? rows : r0 + piece_rows;
    int64_t pshape[2] = {r1 - r0, cols};
    DLTensor tg = dev.tensor(dg, g, 2, pshape), tc = dev.tensor(dc, c, 2, pshape);
    tg.byte_offset = static_cast<uint64_t>(r0 * cols * g.size);
    tc.byte_offset = static_cast<uint64_t>(r0 * cols * c.size);
    cfg.index_base = r0 * cols;
    const peat_status_t st = dev.api->signature_accumulate(&tg, &tc, &cfg, &gpu, &gpu_map, nullptr);
    check(st == PEAT_STATUS_OK, what + ": device signature_accumulate: " + dev.api->last_error());
  }
  compare_signatures(cpu, gpu, what);
  compare_maps(cpu_map, gpu_map, what);
  peat_spatial_map_release(&cpu_map);
  peat_spatial_map_release(&gpu_map);
  dev.api->free(0, dg);
  dev.api->free(0, dc);
}

// One injection on the CPU backend and on the device from the same data.
void inject_case(Device& dev, const peat_backend_api_t* cpu, const Dtype& dt, const std::string& name,
                 const std::function<void(peat_inject_spec_t&)>& set, peat_inject_kind_t kind) {
  const int64_t rows = 70, cols = 90;  // not multiples of the tiles: edge tiles are partial
  const std::size_t n = static_cast<std::size_t>(rows * cols);
  std::vector<unsigned char> data, other;
  make_pair(dt, dt, n, 99 + static_cast<uint64_t>(kind), data, other);
  int64_t shape[2] = {rows, cols};
  const std::string what = "inject " + name + " " + dt.name;

  std::vector<unsigned char> host = data, host_stale = other;
  DLTensor ht = host_tensor(host.data(), dt, 2, shape), hs = host_tensor(host_stale.data(), dt, 2, shape);
  peat_inject_spec_t spec;
  peat_inject_spec_init(&spec, kind);
  set(spec);
  if (spec.fill == PEAT_FILL_STALE) spec.stale = &hs;
  peat_inject_truth_t cpu_truth;
  peat_inject_truth_init(&cpu_truth);
  const peat_status_t cs = cpu->inject(&ht, &spec, 42, 7, 3, &cpu_truth, nullptr);
  check(cs == PEAT_STATUS_OK, what + ": CPU inject: " + cpu->last_error());

  void* d = dev.upload(data);
  void* ds = dev.upload(other);
  DLTensor dt_ = dev.tensor(d, dt, 2, shape), dst = dev.tensor(ds, dt, 2, shape);
  if (spec.fill == PEAT_FILL_STALE) spec.stale = &dst;
  peat_inject_truth_t gpu_truth;
  peat_inject_truth_init(&gpu_truth);
  const peat_status_t gs = dev.api->inject(&dt_, &spec, 42, 7, 3, &gpu_truth, nullptr);
  check(gs == PEAT_STATUS_OK, what + ": device inject: " + dev.api->last_error());
  std::vector<unsigned char> back(data.size());
  dev.download(back, d);
  check(back == host, what + ": tensor bits differ from the CPU's");
  check(gpu_truth.changed > 0 || cpu_truth.changed == 0, what + ": nothing changed");
  check(std::memcmp(&cpu_truth, &gpu_truth, sizeof(cpu_truth)) == 0, what + ": truth differs from the CPU's (changed " +
                                                                         std::to_string(cpu_truth.changed) + " vs " +
                                                                         std::to_string(gpu_truth.changed) + ")");
  dev.api->free(0, d);
  dev.api->free(0, ds);
}

// Runs the suite against `api` (device 0); prints each failure; returns the
// number of failed checks.
inline int run_conformance(const peat_backend_api_t* api, const char* name) {
  Device dev{api, api->device_type};
  check(dev.api->signature_accumulate != nullptr && dev.api->inject != nullptr, "numeric entries are filled");
  peat_backend_t* cpu_backend = nullptr;
  check(peat_backend_get("cpu", &cpu_backend) == PEAT_STATUS_OK, "cpu backend");
  const peat_backend_api_t* cpu = peat_backend_table(cpu_backend);

  // Signatures: every dtype, mixed dtypes, pieces, both map kinds, and a
  // large tensor that takes the full grid and the grid-stride loop.
  const Dtype all[] = {kF16, kBF16, kF32, kF64};
  for (const Dtype& g : all) signature_case(dev, g, g, 100, 130, 1, PEAT_MISMATCH_TOLERANCE);
  signature_case(dev, kF32, kBF16, 100, 130, 1, PEAT_MISMATCH_TOLERANCE);
  signature_case(dev, kBF16, kF32, 100, 130, 1, PEAT_MISMATCH_BITWISE);
  signature_case(dev, kF16, kF64, 64, 33, 1, PEAT_MISMATCH_TOLERANCE);
  signature_case(dev, kF32, kF32, 300, 211, 3, PEAT_MISMATCH_BITWISE);
  signature_case(dev, kF32, kF32, 2048, 2053, 1, PEAT_MISMATCH_TOLERANCE);

  // Injections: every kind and its variants, every dtype.
  struct Case {
    const char* name;
    peat_inject_kind_t kind;
    std::function<void(peat_inject_spec_t&)> set;
  };
  const std::vector<Case> cases = {
      {"bitflip single", PEAT_INJECT_BITFLIP, [](peat_inject_spec_t&) {}},
      {"bitflip count 40 x 3 bits", PEAT_INJECT_BITFLIP, [](peat_inject_spec_t& s) { s.count = 40; s.bits = 3; }},
      {"bitflip p=0.01 adjacent mantissa", PEAT_INJECT_BITFLIP,
       [](peat_inject_spec_t& s) { s.probability = 0.01; s.bits = 2; s.adjacent = 1; s.field = PEAT_BIT_FIELD_MANTISSA; }},
      {"bitflip exponent field", PEAT_INJECT_BITFLIP,
       [](peat_inject_spec_t& s) { s.count = 100; s.field = PEAT_BIT_FIELD_EXPONENT; }},
      {"bitflip fixed bit list", PEAT_INJECT_BITFLIP, [](peat_inject_spec_t& s) {
         static const int64_t elements[] = {5, 17, 17, 4000, 6299, 0};
         s.elements = elements; s.count = 6; s.bit = 9; s.bits = 2; }},
      {"stuck-at all", PEAT_INJECT_STUCK_AT, [](peat_inject_spec_t& s) { s.bit = 3; s.stuck_value = 1; }},
      {"stuck-at lane", PEAT_INJECT_STUCK_AT,
       [](peat_inject_spec_t& s) { s.bit = 12; s.stuck_value = 1; s.scope = PEAT_STUCK_LANE; s.lane_period = 32; s.lane = 5; }},
      {"stuck-at region tiles", PEAT_INJECT_STUCK_AT, [](peat_inject_spec_t& s) {
         s.bit = 14; s.stuck_value = 0; s.scope = PEAT_STUCK_REGION; s.region = PEAT_REGION_TILES; s.first = 3; s.extent = 9; }},
      {"value random", PEAT_INJECT_VALUE,
       [](peat_inject_spec_t& s) { s.value_kind = PEAT_VALUE_RANDOM; s.count = 100; s.range = 10; }},
      {"value NaN p", PEAT_INJECT_VALUE, [](peat_inject_spec_t& s) { s.value_kind = PEAT_VALUE_NAN; s.probability = 0.003; }},
      {"value zero", PEAT_INJECT_VALUE, [](peat_inject_spec_t& s) { s.count = 200; }},
      {"value constant", PEAT_INJECT_VALUE,
       [](peat_inject_spec_t& s) { s.value_kind = PEAT_VALUE_CONSTANT; s.value = 1.0 / 3.0; s.count = 77; }},
      {"region rows garbage", PEAT_INJECT_REGION,
       [](peat_inject_spec_t& s) { s.region = PEAT_REGION_ROWS; s.first = 10; s.extent = 5; s.fill = PEAT_FILL_GARBAGE; }},
      {"region columns zeros", PEAT_INJECT_REGION,
       [](peat_inject_spec_t& s) { s.region = PEAT_REGION_COLUMNS; s.first = 80; s.extent = 10; }},
      {"region last tile stale", PEAT_INJECT_REGION,
       [](peat_inject_spec_t& s) { s.region = PEAT_REGION_LAST_TILE; s.fill = PEAT_FILL_STALE; }},
      {"region remainder", PEAT_INJECT_REGION, [](peat_inject_spec_t& s) { s.region = PEAT_REGION_REMAINDER; }},
      {"scale", PEAT_INJECT_SCALE, [](peat_inject_spec_t& s) { s.alpha = 1.5; }},
      {"transpose", PEAT_INJECT_TRANSPOSE, [](peat_inject_spec_t& s) { s.rows = 90; s.cols = 70; }},
      {"shift +3 garbage", PEAT_INJECT_SHIFT, [](peat_inject_spec_t& s) { s.offset = 3; s.fill = PEAT_FILL_GARBAGE; }},
      {"shift -2 keep", PEAT_INJECT_SHIFT, [](peat_inject_spec_t& s) { s.offset = -2; s.fill = PEAT_FILL_KEEP; }},
      {"ulp uniform", PEAT_INJECT_ULP_NOISE, [](peat_inject_spec_t& s) { s.ulp = 4; }},
      {"ulp fixed", PEAT_INJECT_ULP_NOISE, [](peat_inject_spec_t& s) { s.ulp = 2; s.distribution = PEAT_ULP_FIXED; }},
      {"ulp normal", PEAT_INJECT_ULP_NOISE, [](peat_inject_spec_t& s) { s.ulp = 3; s.distribution = PEAT_ULP_NORMAL; }},
  };
  for (const Dtype& dt : all) {
    for (const Case& c : cases) inject_case(dev, cpu, dt, c.name, c.set, c.kind);
    // Precision rounding to every format, both roundings, with and without saturation.
    for (int32_t format = PEAT_FORMAT_BF16; format <= PEAT_FORMAT_FP8_E5M2; ++format)
      for (int32_t rounding : {PEAT_ROUND_NEAREST_EVEN, PEAT_ROUND_TRUNCATE})
        for (int32_t saturate : {0, 1})
          inject_case(dev, cpu, dt,
                      "precision format " + std::to_string(format) + " rounding " + std::to_string(rounding) +
                          " saturate " + std::to_string(saturate),
                      [=](peat_inject_spec_t& s) { s.format = format; s.rounding = rounding; s.saturate = saturate; },
                      PEAT_INJECT_PRECISION);
  }
  std::printf("%s conformance: %d checks, %d failed\n", name, g_checks, g_failures);
  return g_failures;
}

}  // namespace
