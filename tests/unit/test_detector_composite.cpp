// Composite verdicts (an anomaly over a noise floor), the deterministic bound
// for few-output reductions, normwise rounding for ops without a K, and the
// format names. Each case is built here and its expected numbers computed
// from the construction.
#include "backends/common/float_bits.h"

#include <catch2/catch.hpp>

#include <peat/peat.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

struct View {
  int64_t shape[2];
  DLTensor t{};
  View(std::vector<float>& v, int64_t rows, int64_t cols) : shape{rows, cols} {
    t.data = v.data();
    t.device = DLDevice{kDLCPU, 0};
    t.ndim = 2;
    t.dtype = DLDataType{kDLFloat, 32, 1};
    t.shape = shape;
  }
};

struct Result {
  peat_signature_t sig;
  peat_detection_t det;
};

// Signature (with a spatial map of the given kind) and detection.
Result judge(std::vector<float>& g, std::vector<float>& c, int64_t rows, int64_t cols, peat_op_kind_t kind, int64_t K,
             peat_mismatch_kind_t map_kind = PEAT_MISMATCH_TOLERANCE) {
  View vg(g, rows, cols), vc(c, rows, cols);
  peat_signature_config_t cfg;
  peat_signature_config_init(&cfg);
  cfg.map_mismatch = map_kind;
  Result r;
  peat_signature_init(&r.sig);
  peat_spatial_map_t map;
  peat_spatial_map_init(&map);
  REQUIRE(peat_analyze(&vg.t, &vc.t, &cfg, &r.sig, &map) == PEAT_STATUS_OK);
  peat_detect_context_t ctx;
  peat_detect_context_init(&ctx);
  ctx.op_kind = kind;
  ctx.reduction_length = K;
  ctx.map = &map;
  peat_detection_init(&r.det);
  REQUIRE(peat_detect(&r.sig, &ctx, &r.det) == PEAT_STATUS_OK);
  peat_spatial_map_release(&map);
  return r;
}

// C = A B in f32, summing k forwards or backwards.
std::vector<float> gemm(const std::vector<float>& A, const std::vector<float>& B, int64_t M, int64_t N, int64_t K,
                        bool reverse) {
  std::vector<float> C(static_cast<size_t>(M * N));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float s = 0;
      for (int64_t t = 0; t < K; ++t) {
        const int64_t k = reverse ? K - 1 - t : t;
        s += A[static_cast<size_t>(i * K + k)] * B[static_cast<size_t>(k * N + j)];
      }
      C[static_cast<size_t>(i * N + j)] = s;
    }
  return C;
}

std::vector<float> normal(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0, 1);
  std::vector<float> v(n);
  for (auto& x : v) x = nd(rng);
  return v;
}

uint32_t bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
}
float from_bits(uint32_t b) {
  float v;
  std::memcpy(&v, &b, 4);
  return v;
}

bool has(const peat_detection_t& d, peat_error_model_t m) {
  for (int i = 0; i < d.verdict_count; ++i)
    if (d.verdicts[i].model == m) return true;
  return false;
}

std::string text(const peat_detection_t& d) {
  std::vector<char> buf(1 << 16);
  size_t len = 0;
  peat_detection_render(&d, PEAT_RENDER_TEXT, buf.data(), buf.size(), &len);
  return std::string(buf.data());
}

}  // namespace

TEST_CASE("composite: bit 27 stuck on every 32nd output of a reordered GEMM is STUCK_AT over ROUNDING",
          "[detector][composite]") {
  const int64_t M = 64, N = 64, K = 256;
  const auto A = normal(static_cast<size_t>(M * K), 1), B = normal(static_cast<size_t>(K * N), 2);
  auto g = gemm(A, B, M, N, K, false);
  auto c = gemm(A, B, M, N, K, true);  // another summation order: noise everywhere
  uint64_t changed = 0;
  for (size_t i = 0; i < c.size(); i += 32) {  // what peat_cand_stuck_bit27 does
    changed += ((bits(c[i]) >> 27) & 1u) == 0;
    c[i] = from_bits(bits(c[i]) | (1u << 27));
  }
  REQUIRE(changed >= 8);
  const Result r = judge(g, c, M, N, PEAT_OP_KIND_GEMM, K, PEAT_MISMATCH_BITWISE);
  INFO(text(r.det));
  REQUIRE(r.det.verdict_count >= 2);
  const peat_verdict_t& v = r.det.verdicts[0];
  CHECK(v.model == PEAT_ERROR_MODEL_STUCK_AT);
  CHECK(v.bit == 27);
  CHECK(v.polarity == 1);
  CHECK(v.elements == static_cast<int64_t>(changed));  // the changed pairs, whose highest differing bit is 27
  CHECK(r.sig.xor_top_bit_hist[27] == changed);
  CHECK(r.sig.xor_top_bit_set_hist[27] == changed);
  CHECK(std::string(v.evidence[0]).find(std::to_string(changed) + " pairs have bit 27") == 0);
  CHECK(r.det.verdicts[1].model == PEAT_ERROR_MODEL_ROUNDING);
  CHECK(!has(r.det, PEAT_ERROR_MODEL_GARBAGE));
}

TEST_CASE("composite: an exponent bit stuck at 0 in every 64th element over ULP noise is STUCK_AT",
          "[detector][composite]") {
  auto g = normal(128 * 128, 3);
  std::vector<float> c(g);
  std::mt19937_64 rng(4);
  for (auto& x : c) x = from_bits(bits(x) + static_cast<uint32_t>(rng() % 3) - 1u);  // -1, 0, +1 ULP
  uint64_t changed = 0;
  for (size_t i = 7; i < c.size(); i += 64) {
    changed += (bits(c[i]) >> 26) & 1u;
    c[i] = from_bits(bits(c[i]) & ~(1u << 26));
  }
  const Result r = judge(g, c, 128, 128, PEAT_OP_KIND_UNKNOWN, 0, PEAT_MISMATCH_BITWISE);
  INFO(text(r.det));
  const peat_verdict_t& v = r.det.verdicts[0];
  CHECK(v.model == PEAT_ERROR_MODEL_STUCK_AT);
  CHECK(v.bit == 26);
  CHECK(v.polarity == 0);
  CHECK(v.elements == static_cast<int64_t>(changed));
  REQUIRE(r.det.verdict_count >= 2);
  CHECK(r.det.verdicts[1].model == PEAT_ERROR_MODEL_ROUNDING);
}

TEST_CASE("composite: one corrupted tile of a large reordered GEMM is REGION, the noise ROUNDING beneath",
          "[detector][composite]") {
  const int64_t M = 128, N = 128, K = 128;
  const auto A = normal(static_cast<size_t>(M * K), 5), B = normal(static_cast<size_t>(K * N), 6);
  auto g = gemm(A, B, M, N, K, false);
  auto c = gemm(A, B, M, N, K, true);
  const auto junk = normal(32 * 32, 7);
  for (int64_t i = 0; i < 32; ++i)
    for (int64_t j = 0; j < 32; ++j) c[static_cast<size_t>((64 + i) * N + 32 + j)] = 10 * junk[static_cast<size_t>(i * 32 + j)];
  const Result r = judge(g, c, M, N, PEAT_OP_KIND_GEMM, K);
  INFO(text(r.det));
  const peat_verdict_t& v = r.det.verdicts[0];
  CHECK(v.model == PEAT_ERROR_MODEL_REGION);
  CHECK(v.tiles_affected == 1);
  CHECK(v.rows_affected == 32);
  CHECK(v.cols_affected == 32);
  CHECK(has(r.det, PEAT_ERROR_MODEL_ROUNDING));
  CHECK(!has(r.det, PEAT_ERROR_MODEL_REDUCED_PRECISION));
}

TEST_CASE("dropped tiles: trailing rows and columns never written (an L off the map's tiles) are REGION",
          "[detector][composite]") {
  // A tiled GEMM whose 40 x 40 tiles leave the trailing 20 rows and 20
  // columns of a 100 x 100 output unwritten: every row and every column is
  // touched, and the L covers the map's 32 x 32 tiles only in part.
  const int64_t M = 100, N = 100, K = 64, band = 20;
  const auto A = normal(static_cast<size_t>(M * K), 11), B = normal(static_cast<size_t>(K * N), 12);
  auto g = gemm(A, B, M, N, K, false);
  auto c = gemm(A, B, M, N, K, true);  // the candidate's own summation order
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j)
      if (i >= M - band || j >= N - band) c[static_cast<size_t>(i * N + j)] = 0;
  // The map counts the pairs beyond tolerance (what playback maps when any
  // fails it): the zeros, not the rounding noise everywhere.
  const Result r = judge(g, c, M, N, PEAT_OP_KIND_GEMM, K);
  INFO(text(r.det));
  const peat_verdict_t& v = r.det.verdicts[0];
  CHECK(v.model == PEAT_ERROR_MODEL_REGION);
  CHECK(has(r.det, PEAT_ERROR_MODEL_ROUNDING));  // the noise floor beneath
  CHECK(v.rows_affected == band);
  CHECK(v.cols_affected == band);
  CHECK(v.elements >= band * N + band * M - band * band);
  CHECK(text(r.det).find("20 whole rows and 20 whole columns") != std::string::npos);
}

TEST_CASE("a convolution's padding bug in the last row and column of every H x W plane is REGION",
          "[detector][composite]") {
  // N*C = 8 planes of 12 x 12, mapped as the default (N*C*H) x W view: the last
  // row of every plane is a whole view row, the last column one whole view
  // column, so every row and every column is touched -- only their union is
  // confined.
  const int64_t planes = 8, H = 12, W = 12, rows = planes * H;
  auto g = normal(static_cast<size_t>(rows * W), 15);
  auto c = g;
  const auto junk = normal(c.size(), 16);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < W; ++j)
      if (r % H == H - 1 || j == W - 1) c[static_cast<size_t>(r * W + j)] = 8 * junk[static_cast<size_t>(r * W + j)];
  const Result r = judge(g, c, rows, W, PEAT_OP_KIND_CONV, 27);
  INFO(text(r.det));
  const peat_verdict_t& v = r.det.verdicts[0];
  CHECK(v.model == PEAT_ERROR_MODEL_REGION);
  CHECK(v.rows_affected == planes);
  CHECK(v.cols_affected == 1);
}

TEST_CASE("dropped tiles: an output never written is DROPPED_WRITES, whatever zeros the golden has",
          "[detector][composite]") {
  // A 10 x 64 weight gradient whose columns 32..63 are zero (dead units), and
  // a candidate that wrote nothing: the mismatches fill columns 0..31, but the
  // candidate is zero everywhere, so no region is named.
  const int64_t M = 10, N = 64;
  auto g = normal(static_cast<size_t>(M * N), 13);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 32; j < N; ++j) g[static_cast<size_t>(i * N + j)] = 0;
  std::vector<float> c(g.size(), 0.0f);
  Result r = judge(g, c, M, N, PEAT_OP_KIND_GEMM, 16, PEAT_MISMATCH_BITWISE);
  INFO(text(r.det));
  CHECK(r.det.verdicts[0].model == PEAT_ERROR_MODEL_DROPPED_WRITES);
  CHECK(r.det.verdicts[0].elements == M * 32);
  CHECK(!has(r.det, PEAT_ERROR_MODEL_REGION));
  // Dense golden, nothing written: c/g = 0 everywhere is no scale factor.
  g = normal(static_cast<size_t>(M * N), 14);
  r = judge(g, c, M, N, PEAT_OP_KIND_GEMM, 16, PEAT_MISMATCH_BITWISE);
  INFO(text(r.det));
  CHECK(r.det.verdicts[0].model == PEAT_ERROR_MODEL_DROPPED_WRITES);
  CHECK(r.det.verdicts[0].elements == M * N);
  CHECK(!has(r.det, PEAT_ERROR_MODEL_SCALING));
}

TEST_CASE("few outputs: a long dot product tens of ULP off but inside gamma_K is ROUNDING", "[detector][composite]") {
  const int64_t K = 1 << 16;
  auto a = normal(static_cast<size_t>(K), 8);
  for (auto& x : a) x = std::fabs(x);  // no cancellation: |g| stands for sum |a_i b_i|
  double exact = 0;
  float seq = 0;
  for (float x : a) {
    exact += x;
    seq += x;
  }
  std::vector<float> g{static_cast<float>(exact)}, c{seq};
  const double ulps = std::fabs(static_cast<double>(seq) - static_cast<float>(exact)) /
                      (std::nextafter(static_cast<float>(exact), INFINITY) - static_cast<float>(exact));
  INFO("ULP apart: " << ulps);
  REQUIRE(ulps >= 8);
  const Result r = judge(g, c, 1, 1, PEAT_OP_KIND_REDUCTION, K);
  INFO(text(r.det));
  CHECK(r.det.verdicts[0].model == PEAT_ERROR_MODEL_ROUNDING);
  const double Ku = static_cast<double>(K) * std::ldexp(1.0, -24);
  const double bound = 2 * Ku / (1 - Ku) + 2 * std::ldexp(1.0, -24);
  CHECK(r.sig.max_rel_error <= bound);
  CHECK(std::string(r.det.verdicts[0].evidence[0]).find("2 gamma_K + 2 u_s") != std::string::npos);
}

TEST_CASE("non-GEMM: a float64 layer norm against f32 is ROUNDING by its norm, bf16 REDUCED_PRECISION bf16",
          "[detector][composite]") {
  const int64_t rows = 32, D = 256;
  auto x = normal(static_cast<size_t>(rows * D), 9);
  std::vector<float> g(x.size()), c64(x.size()), cbf(x.size());
  auto bf16 = [](float v) { return from_bits((bits(v) + 0x7FFFu + ((bits(v) >> 16) & 1u)) & 0xFFFF0000u); };
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = &x[static_cast<size_t>(r * D)];
    float m = 0, v = 0;
    double md = 0, vd = 0, mb = 0, vb = 0;
    for (int64_t i = 0; i < D; ++i) { m += in[i]; md += in[i]; mb += bf16(in[i]); }
    m /= D; md /= D; mb /= D;
    for (int64_t i = 0; i < D; ++i) {
      v += (in[i] - m) * (in[i] - m);
      vd += (in[i] - md) * (in[i] - md);
      vb += (bf16(in[i]) - mb) * (bf16(in[i]) - mb);
    }
    v /= D; vd /= D; vb /= D;
    for (int64_t i = 0; i < D; ++i) {
      const size_t k = static_cast<size_t>(r * D + i);
      g[k] = (in[i] - m) / std::sqrt(v + 1e-5f);
      c64[k] = static_cast<float>((in[i] - md) / std::sqrt(vd + 1e-5));
      cbf[k] = bf16(static_cast<float>((bf16(in[i]) - mb) / std::sqrt(vb + 1e-5)));
    }
  }
  {  // K = the normalised extent, as peat_detect_context_infer gives it
    const Result r = judge(g, c64, rows, D, PEAT_OP_KIND_REDUCTION, D);
    INFO(text(r.det));
    CHECK(r.det.verdicts[0].model == PEAT_ERROR_MODEL_ROUNDING);
  }
  const Result r = judge(g, cbf, rows, D, PEAT_OP_KIND_REDUCTION, D);
  INFO(text(r.det));
  CHECK(r.det.verdicts[0].model == PEAT_ERROR_MODEL_REDUCED_PRECISION);
  CHECK(r.det.verdicts[0].nearest_format == PEAT_FORMAT_BF16);
}

TEST_CASE("formats: tf32 and fp16 have their own names, and 10 bits within fp16's range read fp16", "[detector][format]") {
  CHECK(std::string(peat_float_format_name(PEAT_FORMAT_TF32)) == "tf32");
  CHECK(std::string(peat_float_format_name(PEAT_FORMAT_FP16)) == "fp16");
  auto g = normal(64 * 64, 10);
  std::vector<float> c(g.size());
  for (size_t i = 0; i < g.size(); ++i) c[i] = static_cast<float>(static_cast<_Float16>(g[i]));
  const Result r = judge(g, c, 64, 64, PEAT_OP_KIND_ELEMENTWISE, 0);
  INFO(text(r.det));
  CHECK(r.det.verdicts[0].model == PEAT_ERROR_MODEL_REDUCED_PRECISION);
  CHECK(r.det.verdicts[0].nearest_format == PEAT_FORMAT_FP16);
}

TEST_CASE("formats: named by the grid the candidate lies on -- tf32 inputs with an f32 output are tf32, an fp16 "
          "accumulation fp16", "[detector][format]") {
  const int64_t M = 48, N = 48, K = 256;
  const auto A = normal(static_cast<size_t>(M * K), 21), B = normal(static_cast<size_t>(K * N), 22);
  auto g = gemm(A, B, M, N, K, false);
  auto tf32 = [](float x) {  // round to nearest even on 10 mantissa bits
    uint32_t b = bits(x);
    b = (b + 0xFFFu + ((b >> 13) & 1u)) & ~0x1FFFu;
    return from_bits(b);
  };
  std::vector<float> At(A), Bt(B);
  for (auto& x : At) x = tf32(x);
  for (auto& x : Bt) x = tf32(x);
  auto c_tf32 = gemm(At, Bt, M, N, K, false);  // f32 products and sums: values off every narrow grid
  std::vector<float> c_acc(g.size());           // every partial sum rounded to fp16
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      _Float16 s = 0;
      for (int64_t k = 0; k < K; ++k)
        s = static_cast<_Float16>(static_cast<float>(s) + static_cast<float>(static_cast<_Float16>(A[i * K + k])) *
                                                          static_cast<float>(static_cast<_Float16>(B[k * N + j])));
      c_acc[static_cast<size_t>(i * N + j)] = static_cast<float>(s);
    }
  // The lowest set bit of the mismatching candidate words, as the test sees it.
  auto lowest_bit = [&](const std::vector<float>& c) {
    int low = 31;
    for (size_t i = 0; i < c.size(); ++i)
      if (bits(c[i]) != bits(g[i]) && (bits(c[i]) & 0x7FFFFFFFu) != 0) low = std::min(low, __builtin_ctz(bits(c[i]) & 0x7FFFFFFFu));
    return low;
  };
  {
    const Result r = judge(g, c_tf32, M, N, PEAT_OP_KIND_GEMM, K);
    INFO(text(r.det));
    REQUIRE(r.det.verdicts[0].model == PEAT_ERROR_MODEL_REDUCED_PRECISION);
    CHECK(r.det.verdicts[0].nearest_format == PEAT_FORMAT_TF32);
    const int low = lowest_bit(c_tf32);
    CHECK(low < 13);
    for (int b = 0; b < low; ++b) CHECK(r.sig.candidate_low_bit_hist[b] == 0);
    CHECK(r.sig.candidate_low_bit_hist[low] > 0);
    CHECK(std::string(r.det.verdicts[0].evidence[1]).find("carry up to " + std::to_string(23 - low) + " mantissa bits") !=
          std::string::npos);
  }
  {
    const Result r = judge(g, c_acc, M, N, PEAT_OP_KIND_GEMM, K);
    INFO(text(r.det));
    REQUIRE(r.det.verdicts[0].model == PEAT_ERROR_MODEL_REDUCED_PRECISION);
    CHECK(r.det.verdicts[0].effective_mantissa_bits < 9);  // fewer bits than fp16 keeps: accumulated in it
    CHECK(r.det.verdicts[0].nearest_format == PEAT_FORMAT_FP16);
    const int low = lowest_bit(c_acc);
    CHECK(low >= 13);
    CHECK(std::string(r.det.verdicts[0].evidence[1]).find(std::to_string(23 - low) + "-bit mantissa grid") !=
          std::string::npos);
    // Without the grid (a signature from before it) the effective bits name it: no longer fp16.
    peat_signature_t old = r.sig;
    std::memset(old.candidate_low_bit_hist, 0, sizeof old.candidate_low_bit_hist);
    peat_detect_context_t ctx;
    peat_detect_context_init(&ctx);
    ctx.op_kind = PEAT_OP_KIND_GEMM;
    ctx.reduction_length = K;
    peat_detection_t d;
    peat_detection_init(&d);
    REQUIRE(peat_detect(&old, &ctx, &d) == PEAT_STATUS_OK);
    CHECK(d.verdicts[0].nearest_format != PEAT_FORMAT_FP16);
  }
}

TEST_CASE("non-GEMM: gelu in f32 against float64 is ROUNDING by its norm, though outputs near 0 are many ULP off",
          "[detector][composite]") {
  auto x = normal(64 * 64, 11);
  std::vector<float> g(x.size()), c(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    g[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * 0.70710678f));
    c[i] = static_cast<float>(0.5 * x[i] * (1.0 + std::erf(static_cast<double>(x[i]) / std::sqrt(2.0))));
  }
  const Result r = judge(g, c, 64, 64, PEAT_OP_KIND_ELEMENTWISE, 0);
  INFO(text(r.det));
  CHECK((r.det.verdicts[0].model == PEAT_ERROR_MODEL_ROUNDING || r.det.verdicts[0].model == PEAT_ERROR_MODEL_EXACT));
}

namespace {

// op kind and K of output 0 of one call with one input of `shape`.
std::pair<peat_op_kind_t, int64_t> infer(const char* op, std::vector<int64_t> shape, const peat_attr_t* attr = nullptr) {
  peat_detect_context_t ctx;
  peat_detect_context_init(&ctx);
  const int32_t nd = static_cast<int32_t>(shape.size());
  const int64_t* shapes[1] = {shape.data()};
  REQUIRE(peat_detect_context_infer(&ctx, op, 1, &nd, shapes, attr, attr ? 1 : 0, 0, 0) == PEAT_STATUS_OK);
  return {ctx.op_kind, ctx.reduction_length};
}

}  // namespace

TEST_CASE("op contexts: norms, softmax, sums and losses are reductions with K, transcendental ops elementwise",
          "[detector][op_context]") {
  const int64_t normalized[] = {256};
  peat_attr_t ln{};
  ln.key = "arg1";
  ln.type = PEAT_ATTR_INT_ARRAY;
  ln.ints = normalized;
  ln.n_ints = 1;
  CHECK(infer("encoder.norm1/aten::native_layer_norm", {4, 32, 256}, &ln) == std::pair<peat_op_kind_t, int64_t>{PEAT_OP_KIND_REDUCTION, 256});
  peat_attr_t dim{};
  dim.key = "arg1";
  dim.type = PEAT_ATTR_INT;
  dim.i = 1;
  CHECK(infer("aten::_softmax", {8, 100, 3}, &dim) == std::pair<peat_op_kind_t, int64_t>{PEAT_OP_KIND_REDUCTION, 100});
  CHECK(infer("bn1/aten::native_batch_norm", {2, 64, 8, 8}) == std::pair<peat_op_kind_t, int64_t>{PEAT_OP_KIND_REDUCTION, 2 * 8 * 8});
  CHECK(infer("aten::mean", {3, 7}) == std::pair<peat_op_kind_t, int64_t>{PEAT_OP_KIND_REDUCTION, 21});
  CHECK(infer("aten::mse_loss", {16, 4}) == std::pair<peat_op_kind_t, int64_t>{PEAT_OP_KIND_REDUCTION, 64});
  CHECK(infer("aten::gelu", {16, 4}).first == PEAT_OP_KIND_ELEMENTWISE);
  CHECK(infer("aten::exp", {16, 4}).first == PEAT_OP_KIND_ELEMENTWISE);
  char family[32];
  peat_op_family("aten::native_group_norm", family, sizeof family);
  CHECK(std::string(family) == "group_norm");
}

TEST_CASE("non-determinism from the two runs compared elementwise, though their signatures against the golden agree",
          "[detector][composite]") {
  // Rows 0 and 1 of the golden are equal; run 2 swaps the two rows of run 1.
  std::vector<float> g = normal(2 * 16, 12);
  for (int j = 0; j < 16; ++j) g[static_cast<size_t>(16 + j)] = g[static_cast<size_t>(j)];
  std::vector<float> r1(g), r2;
  for (int j = 0; j < 16; ++j) r1[static_cast<size_t>(j)] = std::nextafter(g[static_cast<size_t>(j)], INFINITY);
  r2 = r1;
  for (int j = 0; j < 16; ++j) std::swap(r2[static_cast<size_t>(j)], r2[static_cast<size_t>(16 + j)]);
  View vg(g, 2, 16), v1(r1, 2, 16), v2(r2, 2, 16);
  peat_signature_t s1, s2, d;
  peat_signature_init(&s1);
  peat_signature_init(&s2);
  peat_signature_init(&d);
  REQUIRE(peat_analyze(&vg.t, &v1.t, nullptr, &s1, nullptr) == PEAT_STATUS_OK);
  REQUIRE(peat_analyze(&vg.t, &v2.t, nullptr, &s2, nullptr) == PEAT_STATUS_OK);
  REQUIRE(peat_analyze(&v1.t, &v2.t, nullptr, &d, nullptr) == PEAT_STATUS_OK);
  peat_detect_context_t ctx;
  peat_detect_context_init(&ctx);
  ctx.rerun = &s2;
  ctx.rerun_diff = &d;
  peat_detection_t det;
  peat_detection_init(&det);
  REQUIRE(peat_detect(&s1, &ctx, &det) == PEAT_STATUS_OK);
  CHECK(det.verdicts[0].model == PEAT_ERROR_MODEL_NONDETERMINISM);
  CHECK(det.verdicts[0].elements == 32);
  CHECK(std::string(det.verdicts[0].evidence[0]).find("differ in 32 of 32 elements") != std::string::npos);
}

TEST_CASE("a signature of the 0.1 size is accepted with its top-bit histograms absent", "[detector][abi]") {
  auto g = normal(256, 13);
  std::vector<float> c(g);
  for (size_t i = 0; i < c.size(); i += 32) c[i] = from_bits(bits(c[i]) ^ (1u << 30));
  View vg(g, 16, 16), vc(c, 16, 16);
  peat_signature_t sig;
  peat_signature_init(&sig);
  REQUIRE(peat_analyze(&vg.t, &vc.t, nullptr, &sig, nullptr) == PEAT_STATUS_OK);
  peat_signature_t old = sig;
  old.struct_size = static_cast<uint32_t>(PEAT_SIGNATURE_SIZE_0_1);
  std::memset(old.xor_top_bit_hist, 0xAB, sizeof old.xor_top_bit_hist);  // beyond an old caller's struct
  peat_detection_t a, b;
  peat_detection_init(&a);
  peat_detection_init(&b);
  REQUIRE(peat_detect(&sig, nullptr, &a) == PEAT_STATUS_OK);
  REQUIRE(peat_detect(&old, nullptr, &b) == PEAT_STATUS_OK);
  CHECK(a.verdicts[0].model == b.verdicts[0].model);
  old.struct_size = static_cast<uint32_t>(PEAT_SIGNATURE_SIZE_0_1) + 8;
  CHECK(peat_detect(&old, nullptr, &b) == PEAT_STATUS_VERSION_MISMATCH);
}

TEST_CASE("composite: bit 27 set on only 3 outputs of a reordered GEMM is STUCK_AT over ROUNDING (a gap in the ULP "
          "distances), not GARBAGE",
          "[detector][composite]") {
  // As on an LM's gradient GEMMs: most lane values lie in [2^-16, 2), where bit
  // 27 is set already, so the stuck bit changes only a few of them.
  const int64_t M = 64, N = 64, K = 256;
  const auto A = normal(static_cast<size_t>(M * K), 5), B = normal(static_cast<size_t>(K * N), 6);
  auto g = gemm(A, B, M, N, K, false);
  auto c = gemm(A, B, M, N, K, true);
  uint64_t changed = 0;
  for (size_t i = 0; i < c.size() && changed < 3; i += 32)
    if (((bits(c[i]) >> 27) & 1u) == 0) {
      c[i] = from_bits(bits(c[i]) | (1u << 27));
      ++changed;
    }
  REQUIRE(changed == 3);
  const Result r = judge(g, c, M, N, PEAT_OP_KIND_GEMM, K, PEAT_MISMATCH_BITWISE);
  INFO(text(r.det));
  REQUIRE(r.sig.xor_top_bit_hist[27] == 3);  // too few for the coin test of rule 9'
  REQUIRE(r.det.verdict_count >= 2);
  const peat_verdict_t& v = r.det.verdicts[0];
  CHECK(v.model == PEAT_ERROR_MODEL_STUCK_AT);
  CHECK(v.bit == 27);
  CHECK(v.polarity == 1);
  CHECK(v.elements == 3);
  const uint64_t mismatches = r.sig.value_mismatch_count;
  CHECK(std::string(v.evidence[0]).find("3 of " + std::to_string(mismatches) + " mismatches lie >= 2^") == 0);
  CHECK(std::string(v.evidence[1]) == "all 3 have bit 27 (exponent field) as their highest differing bit, all changed towards 1");
  CHECK(r.det.verdicts[1].model == PEAT_ERROR_MODEL_ROUNDING);
  CHECK(!has(r.det, PEAT_ERROR_MODEL_GARBAGE));

  SECTION("flips of different exponent bits are BITFLIP_MULTI over ROUNDING") {
    auto c2 = gemm(A, B, M, N, K, true);
    const int flips[3][2] = {{100, 24}, {900, 26}, {2000, 28}};
    for (const auto& f : flips) c2[static_cast<size_t>(f[0])] = from_bits(bits(c2[static_cast<size_t>(f[0])]) ^ (1u << f[1]));
    const Result r2 = judge(g, c2, M, N, PEAT_OP_KIND_GEMM, K, PEAT_MISMATCH_BITWISE);
    INFO(text(r2.det));
    CHECK(r2.det.verdicts[0].model == PEAT_ERROR_MODEL_BITFLIP_MULTI);
    CHECK(r2.det.verdicts[0].elements == 3);
    CHECK(r2.det.verdicts[1].model == PEAT_ERROR_MODEL_ROUNDING);
  }
}

TEST_CASE("GARBAGE states the condition that held", "[detector][composite]") {
  // The largest 30 % of the values negated, the others 10 % off: fewer than
  // half of the mismatches are >= 1/4 off, but the negated ones carry most of
  // the norm (cosine < 0) -- the cosine condition is what holds, and is stated.
  auto g = normal(4096, 7);
  std::vector<float> mags(g);
  for (auto& x : mags) x = std::fabs(x);
  std::nth_element(mags.begin(), mags.begin() + 2867, mags.end());
  const float cut = mags[2867];  // 70 % of |g| below it
  std::vector<float> c(g);
  size_t negated = 0;
  for (auto& x : c) {
    if (std::fabs(x) > cut) x = -x, ++negated;
    else x *= 1.1f;
  }
  const Result r = judge(g, c, 64, 64, PEAT_OP_KIND_ELEMENTWISE, 0);
  INFO(text(r.det));
  REQUIRE(r.det.verdicts[0].model == PEAT_ERROR_MODEL_GARBAGE);
  REQUIRE(2 * negated < 4096);
  const std::string first = r.det.verdicts[0].evidence[0];
  CHECK(first.find("cosine(g, c) -") == 0);
  CHECK(first.find("< 0.9 (" + std::to_string(negated) + " of 4096 mismatches have relative error >= 1/4") !=
        std::string::npos);
  CHECK(first.find(">= 50 %") == std::string::npos);
}

TEST_CASE("a factor varying per row is SCALING (a layer norm with another epsilon), truncation to bf16, one-sided "
          "too, stays REDUCED_PRECISION on its grid", "[detector][scaling]") {
  const int64_t rows = 24, D = 96;
  auto x = normal(static_cast<size_t>(rows * D), 31);
  for (auto& v : x) v = 0.3f * v + 0.1f;  // variance ~0.09 per row
  auto layer_norm = [&](float eps) {
    std::vector<float> out(x.size());
    for (int64_t r = 0; r < rows; ++r) {
      const float* in = &x[static_cast<size_t>(r * D)];
      float m = 0, v = 0;
      for (int64_t i = 0; i < D; ++i) m += in[i];
      m /= static_cast<float>(D);
      for (int64_t i = 0; i < D; ++i) v += (in[i] - m) * (in[i] - m);
      const float rs = 1.0f / std::sqrt(v / static_cast<float>(D) + eps);
      for (int64_t i = 0; i < D; ++i) out[static_cast<size_t>(r * D + i)] = (in[i] - m) * rs;
    }
    return out;
  };
  {
    // rows of variance ~9: eps 1e-3 moves each row by ~5.6e-5 (~12 effective
    // bits, more than fp16 or tf32 keep), still one-sided: not the op's own
    // rounding amplified (rule 11's last allowance), SCALING
    const auto x0 = x;
    for (auto& v : x) v = 10.0f * (v - 0.1f);
    auto gw = layer_norm(1e-5f), cw = layer_norm(1e-3f);
    x = x0;
    const Result r = judge(gw, cw, rows, D, PEAT_OP_KIND_REDUCTION, D);
    INFO(text(r.det));
    REQUIRE(r.det.verdicts[0].model == PEAT_ERROR_MODEL_SCALING);
    CHECK(r.det.verdicts[0].effective_mantissa_bits > 12);
  }
  auto g = layer_norm(1e-5f);
  {
    auto c = layer_norm(1e-3f);  // each row scaled down by its own factor sqrt((v + 1e-5) / (v + 1e-3))
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < g.size(); ++i)
      if (g[i] != 0) {
        lo = std::min(lo, static_cast<double>(c[i]) / g[i]);
        hi = std::max(hi, static_cast<double>(c[i]) / g[i]);
      }
    REQUIRE(hi <= 1.0);
    REQUIRE(hi - lo > 1e-4);  // no constant factor: rule 5 does not apply
    const Result r = judge(g, c, rows, D, PEAT_OP_KIND_REDUCTION, D);
    INFO(text(r.det));
    REQUIRE(r.det.verdicts[0].model == PEAT_ERROR_MODEL_SCALING);
    CHECK(r.det.verdicts[0].alpha < 1.0);
    CHECK(r.det.verdicts[0].alpha >= lo);
    CHECK(r.det.verdicts[0].alpha <= hi);
    CHECK(std::string(r.det.verdicts[0].evidence[0]).find("c/g <= 1 in all " + std::to_string(r.sig.ratio_count)) !=
          std::string::npos);
    CHECK(r.sig.ratio_max == hi);
  }
  {
    auto c = g;  // round toward zero to bf16: |c| <= |g| everywhere, every value on bf16's grid
    for (auto& v : c) v = from_bits(bits(v) & 0xFFFF0000u);
    const Result r = judge(g, c, rows, D, PEAT_OP_KIND_REDUCTION, D);
    INFO(text(r.det));
    REQUIRE(r.det.verdicts[0].model == PEAT_ERROR_MODEL_REDUCED_PRECISION);
    CHECK(r.det.verdicts[0].nearest_format == PEAT_FORMAT_BF16);
  }
}

TEST_CASE("a reduction whose outputs cancel: bf16 inputs are REDUCED_PRECISION judged normwise, though most "
          "outputs are 1/4 or more off", "[detector][cancellation]") {
  // g = a + b over K = 2 terms of size ~1, a = 1 + d: in 7 of 8 rows b = -1
  // and the sum is the small difference d (4.2e-3 <= |d| <= 6e-3), in the 8th
  // b = +1 and it is ~2 (a batch norm's input gradient over 2 values per
  // channel is such a difference). Inputs rounded to bf16 (nearest even,
  // spacing 2^-7 at 1) turn each d into +-2^-7, 30-90 % off, and keep the ~2.
  const int64_t rows = 32, cols = 64;
  std::mt19937_64 rng(41);
  std::uniform_real_distribution<float> ud(4.2e-3f, 6e-3f);
  auto bf16 = [](float x) { return peat::hd::bf16_to_float(peat::hd::float_to_bf16(x)); };
  std::vector<float> g(static_cast<size_t>(rows * cols)), c(g.size());
  size_t mismatches = 0, far = 0;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      const float a = 1.0f + (rng() % 2 ? ud(rng) : -ud(rng)), b = i % 8 == 7 ? 1.0f : -1.0f;
      const size_t e = static_cast<size_t>(i * cols + j);
      g[e] = a + b;
      c[e] = bf16(a) + bf16(b);
      REQUIRE(c[e] != 0);
      if (c[e] == g[e]) continue;
      ++mismatches;
      if (std::fabs(c[e] - g[e]) >= 0.25 * std::fabs(g[e])) ++far;
    }
  REQUIRE(far >= mismatches / 2);  // per element, most have lost everything
  const Result r = judge(g, c, rows, cols, PEAT_OP_KIND_REDUCTION, 2);
  INFO(text(r.det));
  REQUIRE(r.det.verdicts[0].model == PEAT_ERROR_MODEL_REDUCED_PRECISION);
  CHECK(r.det.verdicts[0].effective_mantissa_bits > 4);
}

TEST_CASE("composite: more flips than floor pairs over a rounding floor are BITFLIP_MULTI, not GARBAGE",
          "[detector][composite]") {
  // Two outputs 1 ULP off (another order, where it mattered), each through a
  // carry that changes 6 low bits (so no "every pair in <= 4 bits", rule 10),
  // and five with a different exponent bit flipped each: the flips outnumber
  // the floor, but lie 2^20 ULP and more above it, each differing in one bit
  const int64_t M = 32, N = 32, K = 64;
  auto g = gemm(normal(static_cast<size_t>(M * K), 51), normal(static_cast<size_t>(K * N), 52), M, N, K, false);
  auto c = g;
  int carried = 0;
  for (size_t i = 0; i < 1000 && carried < 2; ++i)
    if ((bits(c[i]) & 0x1Fu) == 0x1Fu) c[i] = from_bits(bits(c[i]) + 1), ++carried;
  REQUIRE(carried == 2);
  const int flips[5] = {23, 24, 25, 26, 27};
  const size_t at[5] = {1001, 1005, 1010, 1015, 1020};  // not among the carried ones (< 1000)
  for (int i = 0; i < 5; ++i) c[at[i]] = from_bits(bits(c[at[i]]) ^ (1u << flips[i]));
  const Result r = judge(g, c, M, N, PEAT_OP_KIND_GEMM, K);
  INFO(text(r.det));
  REQUIRE(r.det.mismatches == 7);
  REQUIRE(r.det.verdicts[0].model == PEAT_ERROR_MODEL_BITFLIP_MULTI);
  CHECK(r.det.verdicts[0].elements == 5);
  REQUIRE(r.det.verdict_count >= 2);
  CHECK(r.det.verdicts[1].model == PEAT_ERROR_MODEL_ROUNDING);
}
