// Each candidate of libpeat_candidates.so against a plain double-precision
// reference GEMM: it must show exactly its intended defect and nothing else.
#include "peat_candidates.h"
#include "peat_trainer/gemm.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace {

uint32_t bits_of(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}

// A GEMM problem with padded leading dimensions, stored as the trans flags ask.
struct Problem {
  int ta = 0, tb = 0;
  int64_t M = 0, N = 0, K = 0, lda = 0, ldb = 0, ldc = 0;
  float alpha = 1.0f, beta = 0.0f;
  std::vector<float> A, B, C0;  // C0: C's contents before the call
  float a(int64_t i, int64_t k) const { return ta ? A[k * lda + i] : A[i * lda + k]; }
  float b(int64_t k, int64_t j) const { return tb ? B[j * ldb + k] : B[k * ldb + j]; }
};

Problem make_problem(int64_t M, int64_t N, int64_t K, int ta, int tb, float alpha, float beta, uint32_t seed, float scale = 1.0f) {
  Problem p;
  p.ta = ta;
  p.tb = tb;
  p.M = M;
  p.N = N;
  p.K = K;
  p.alpha = alpha;
  p.beta = beta;
  p.lda = (ta ? M : K) + 3;
  p.ldb = (tb ? K : N) + 5;
  p.ldc = N + 2;
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  p.A.resize(static_cast<size_t>((ta ? K : M) * p.lda));
  p.B.resize(static_cast<size_t>((tb ? N : K) * p.ldb));
  p.C0.resize(static_cast<size_t>(M * p.ldc));
  for (auto& v : p.A) v = dist(gen);
  for (auto& v : p.B) v = dist(gen);
  for (auto& v : p.C0) v = dist(gen);
  return p;
}

std::vector<float> run(peat_cand_gemm_fn fn, const Problem& p) {
  std::vector<float> C = p.C0;
  fn(p.ta, p.tb, p.M, p.N, p.K, p.alpha, p.A.data(), p.lda, p.B.data(), p.ldb, p.beta, C.data(), p.ldc);
  return C;
}

// Exact (double) result and the scale sum |alpha||a||b| + |beta c0| per element.
struct Reference {
  std::vector<double> value, scale;
};

Reference reference(const Problem& p, double (*round_input)(double) = nullptr) {
  Reference r;
  r.value.resize(static_cast<size_t>(p.M * p.N));
  r.scale.resize(r.value.size());
  for (int64_t i = 0; i < p.M; ++i)
    for (int64_t j = 0; j < p.N; ++j) {
      double s = 0, abs = 0;
      for (int64_t k = 0; k < p.K; ++k) {
        double a = p.a(i, k), b = p.b(k, j);
        if (round_input) a = round_input(a), b = round_input(b);
        s += a * b;
        abs += std::fabs(a * b);
      }
      const double c0 = p.beta != 0.0f ? p.C0[i * p.ldc + j] : 0.0;
      r.value[i * p.N + j] = p.alpha * s + p.beta * c0;
      r.scale[i * p.N + j] = std::fabs(p.alpha) * abs + std::fabs(p.beta * c0);
    }
  return r;
}

// The fp32 sequential order, written plainly.
std::vector<float> sequential_fp32(const Problem& p) {
  std::vector<float> C = p.C0;
  for (int64_t i = 0; i < p.M; ++i)
    for (int64_t j = 0; j < p.N; ++j) {
      float acc = 0.0f;
      for (int64_t k = 0; k < p.K; ++k) acc += p.a(i, k) * p.b(k, j);
      float& c = C[i * p.ldc + j];
      c = p.beta == 0.0f ? p.alpha * acc : p.alpha * acc + p.beta * c;
    }
  return C;
}

double gamma(int64_t n, double u) { return static_cast<double>(n) * u / (1.0 - static_cast<double>(n) * u); }
constexpr double kU32 = 0x1p-24;

// max over elements of |c - ref| / scale (the error in units of the scale sum).
double max_scaled_error(const std::vector<float>& C, const Problem& p, const Reference& r) {
  double worst = 0;
  for (int64_t i = 0; i < p.M; ++i)
    for (int64_t j = 0; j < p.N; ++j) {
      const double e = std::fabs(C[i * p.ldc + j] - r.value[i * p.N + j]) / r.scale[i * p.N + j];
      worst = std::max(worst, e);
    }
  return worst;
}

int64_t count_bit_mismatches(const std::vector<float>& x, const std::vector<float>& y, const Problem& p) {
  int64_t n = 0;
  for (int64_t i = 0; i < p.M; ++i)
    for (int64_t j = 0; j < p.N; ++j) n += bits_of(x[i * p.ldc + j]) != bits_of(y[i * p.ldc + j]);
  return n;
}

// Round to `mant` mantissa bits, nearest even, via double arithmetic (independent of float_bits.h).
double round_mantissa(double x, int mant) {
  if (x == 0 || !std::isfinite(x)) return x;
  const int e = std::ilogb(x);
  return std::ldexp(std::nearbyint(std::ldexp(x, mant - e)), e - mant);
}
double round_bf16(double x) { return round_mantissa(x, 7); }
double round_tf32(double x) { return round_mantissa(x, 10); }

struct Shape {
  int64_t M, N, K;
  int ta, tb;
  float alpha, beta;
};
// Not multiples of 32 (so (7) has trailing tiles), every transpose combination, alpha/beta variants.
const Shape kShapes[] = {{70, 45, 300, 0, 0, 1.5f, 0.0f}, {70, 45, 300, 1, 0, 1.0f, 0.5f}, {37, 66, 129, 0, 1, -2.0f, 1.0f},
                         {33, 70, 200, 1, 1, 0.75f, 0.0f}};

}  // namespace

TEST_CASE("peat_gemm_sequential is the plain fp32 sequential order, within the fp32 bound", "[candidates]") {
  for (const auto& s : kShapes) {
    const Problem p = make_problem(s.M, s.N, s.K, s.ta, s.tb, s.alpha, s.beta, 11);
    const auto C = run(peat_gemm_sequential, p);
    CHECK(count_bit_mismatches(C, sequential_fp32(p), p) == 0);
    CHECK(max_scaled_error(C, p, reference(p)) <= gamma(s.K + 2, kU32));
  }
}

TEST_CASE("(1) blocked and (2) pairwise: another summation order, inside the fp32 rounding bound", "[candidates]") {
  for (auto fn : {peat_cand_blocked, peat_cand_pairwise}) {
    for (const auto& s : kShapes) {
      const Problem p = make_problem(s.M, s.N, s.K, s.ta, s.tb, s.alpha, s.beta, 12);
      const auto C = run(fn, p);
      const Reference r = reference(p);
      const double err = max_scaled_error(C, p, r);
      CHECK(err <= gamma(s.K + 2, kU32));
      // A different order: not bit-identical to the sequential order, yet every element close.
      CHECK(count_bit_mismatches(C, sequential_fp32(p), p) > 0);
    }
  }
}

TEST_CASE("(3) bf16 and (4) tf32 inputs: exactly fp32 GEMM of rounded inputs, error of the input precision", "[candidates]") {
  struct Case {
    peat_cand_gemm_fn fn;
    double (*round)(double);
    double u;  // unit roundoff of the input format
  };
  for (const Case& c : {Case{peat_cand_bf16, round_bf16, 0x1p-8}, Case{peat_cand_tf32, round_tf32, 0x1p-11}}) {
    for (const auto& s : kShapes) {
      const Problem p = make_problem(s.M, s.N, s.K, s.ta, s.tb, s.alpha, s.beta, 13);
      const auto C = run(c.fn, p);
      // Against the exact product of the rounded inputs: only fp32 accumulation error.
      CHECK(max_scaled_error(C, p, reference(p, c.round)) <= gamma(s.K + 2, kU32));
      // Against the exact product of the original inputs: the error of rounding both inputs,
      // |a'b' - ab| <= (2u + u^2)|ab|, and far above what the fp32 sequential order gives.
      const double err = max_scaled_error(C, p, reference(p));
      CHECK(err <= 2 * c.u + c.u * c.u + gamma(s.K + 2, kU32));
      CHECK(err > 0.05 * c.u);
      CHECK(err > 16 * max_scaled_error(sequential_fp32(p), p, reference(p)));
    }
  }
  // The inputs seen are exactly the round-to-nearest-even values: a single product.
  const float a = 1.0f + 0x1p-8f + 0x1p-10f;  // bf16 rounds up to 1 + 2^-7; tf32 keeps it
  float c = 0;
  peat_cand_bf16(0, 0, 1, 1, 1, 1.0f, &a, 1, &a, 1, 0.0f, &c, 1);
  CHECK(c == static_cast<float>((1.0 + 0x1p-7) * (1.0 + 0x1p-7)));
  peat_cand_tf32(0, 0, 1, 1, 1, 1.0f, &a, 1, &a, 1, 0.0f, &c, 1);
  CHECK(c == a * a);
}

TEST_CASE("(5) fp16 accumulation: every partial sum is an fp16 value, error of fp16 accumulation, overflow to Inf", "[candidates]") {
  Problem p = make_problem(40, 40, 256, 0, 0, 1.0f, 0.0f, 14, 0.5f);
  const auto C = run(peat_cand_fp16acc, p);
  const double u16 = 0x1p-11;
  int64_t representable = 0;
  for (int64_t i = 0; i < p.M; ++i)
    for (int64_t j = 0; j < p.N; ++j) {
      const float v = C[i * p.ldc + j];
      representable += round_mantissa(v, 10) == v && std::fabs(v) <= 65504;
    }
  CHECK(representable == p.M * p.N);  // alpha = 1, beta = 0: the output is the fp16 accumulator
  const double err = max_scaled_error(C, p, reference(p));
  CHECK(err <= gamma(p.K + 2, u16));
  CHECK(err > 16 * max_scaled_error(sequential_fp32(p), p, reference(p)));
  CHECK(err > 0.1 * u16);
  // Partial sums past 65504 overflow: 3 x (200 x 200) = 120000.
  const float a[3] = {200, 200, 200};
  float out = 0;
  peat_cand_fp16acc(0, 0, 1, 1, 3, 1.0f, a, 3, a, 1, 0.0f, &out, 1);
  CHECK(std::isinf(out));
  float golden = 0;
  peat_gemm_sequential(0, 0, 1, 1, 3, 1.0f, a, 3, a, 1, 0.0f, &golden, 1);
  CHECK(golden == 120000.0f);
}

TEST_CASE("(6) racy split-K: within the fp32 bound, bits differ between runs for a long K", "[candidates]") {
  const Problem p = make_problem(64, 64, 4096, 0, 1, 1.0f, 0.0f, 15);
  const auto first = run(peat_cand_splitk_racy, p);
  CHECK(max_scaled_error(first, p, reference(p)) <= gamma(p.K + 2, kU32));
  bool differed = false;
  for (int attempt = 0; attempt < 20 && !differed; ++attempt) differed = count_bit_mismatches(first, run(peat_cand_splitk_racy, p), p) > 0;
  CHECK(differed);
  // K < 256 runs on one thread: the sequential order, bit for bit, every time.
  const Problem small = make_problem(20, 30, 200, 1, 0, 2.0f, 0.5f, 16);
  CHECK(count_bit_mismatches(run(peat_cand_splitk_racy, small), sequential_fp32(small), small) == 0);
}

TEST_CASE("(7) tile drop: correct full tiles, trailing partial tiles never written", "[candidates]") {
  for (const auto& s : kShapes) {
    Problem p = make_problem(s.M, s.N, s.K, s.ta, s.tb, s.alpha, s.beta, 17);
    for (auto& v : p.C0) v = 12345.0f;  // sentinel: what "never written" leaves
    const auto C = run(peat_cand_tile_drop, p);
    const auto golden = sequential_fp32(p);
    const int64_t mfull = s.M / 32 * 32, nfull = s.N / 32 * 32;
    int64_t wrong_inside = 0, written_outside = 0, outside = 0;
    for (int64_t i = 0; i < s.M; ++i)
      for (int64_t j = 0; j < s.N; ++j) {
        const int64_t at = i * p.ldc + j;
        if (i < mfull && j < nfull) {
          wrong_inside += bits_of(C[at]) != bits_of(golden[at]);
        } else {
          ++outside;
          written_outside += C[at] != 12345.0f;
        }
      }
    CHECK(wrong_inside == 0);
    CHECK(outside > 0);
    CHECK(written_outside == 0);
  }
  // Multiples of the tile: nothing is dropped.
  const Problem p = make_problem(64, 96, 50, 0, 0, 1.0f, 0.0f, 18);
  CHECK(count_bit_mismatches(run(peat_cand_tile_drop, p), sequential_fp32(p), p) == 0);
}

TEST_CASE("(8) no alpha: the reference divided by alpha", "[candidates]") {
  for (const auto& s : kShapes) {
    if (s.beta != 0.0f) continue;
    const Problem p = make_problem(s.M, s.N, s.K, s.ta, s.tb, s.alpha, 0.0f, 19);
    const auto C = run(peat_cand_no_alpha, p);
    const Reference r = reference(p);
    double worst = 0;
    for (int64_t i = 0; i < p.M; ++i)
      for (int64_t j = 0; j < p.N; ++j)
        worst = std::max(worst, std::fabs(C[i * p.ldc + j] - r.value[i * p.N + j] / p.alpha) / (r.scale[i * p.N + j] / std::fabs(p.alpha)));
    CHECK(worst <= gamma(s.K + 2, kU32));
    CHECK(max_scaled_error(C, p, r) > 0.1);  // and far from the right answer since alpha != 1
  }
  Problem one = make_problem(30, 40, 64, 0, 1, 1.0f, 0.25f, 20);  // alpha = 1: indistinguishable
  CHECK(count_bit_mismatches(run(peat_cand_no_alpha, one), sequential_fp32(one), one) == 0);
}

TEST_CASE("(9) faulty ALU: only bit 27, only at lanes i*N+j = 0 mod 32", "[candidates]") {
  for (const auto& s : kShapes) {
    // Scale so most outputs have |c| >= 2, where bit 27 (an exponent bit) is 0 and the fault shows;
    // for 2^-15 <= |c| < 2 the bit is already 1 and the fault is masked.
    const Problem p = make_problem(s.M, s.N, s.K, s.ta, s.tb, s.alpha, s.beta, 21, 2.0f);
    const auto C = run(peat_cand_stuck_bit27, p);
    const auto golden = sequential_fp32(p);
    int64_t bad_lane = 0, other_bits = 0, lanes = 0, shown = 0, unset = 0;
    for (int64_t i = 0; i < p.M; ++i)
      for (int64_t j = 0; j < p.N; ++j) {
        const int64_t at = i * p.ldc + j;
        const uint32_t x = bits_of(C[at]) ^ bits_of(golden[at]);
        const bool lane = (i * p.N + j) % 32 == 0;
        lanes += lane;
        if (x != 0 && !lane) ++bad_lane;
        if ((x & ~(1u << 27)) != 0) ++other_bits;
        if (x != 0) ++shown;
        if (lane && (bits_of(C[at]) & (1u << 27)) == 0) ++unset;
      }
    CHECK(bad_lane == 0);
    CHECK(other_bits == 0);
    CHECK(unset == 0);
    CHECK(shown > lanes / 2);
  }
}

TEST_CASE("the catalogue lists the nine candidates and they load as libx.so:symbol", "[candidates]") {
  size_t n = 0;
  const peat_candidate_info_t* table = peat_candidates(&n);
  REQUIRE(n == 9);
  CHECK(peat_candidates(nullptr) == table);
  const peat_cand_gemm_fn expected[9] = {peat_cand_blocked, peat_cand_pairwise, peat_cand_bf16, peat_cand_tf32, peat_cand_fp16acc,
                                         peat_cand_splitk_racy, peat_cand_tile_drop, peat_cand_no_alpha, peat_cand_stuck_bit27};
  for (size_t i = 0; i < n; ++i) {
    CHECK(table[i].number == static_cast<int32_t>(i + 1));
    CHECK(table[i].fn == expected[i]);
    CHECK(std::strlen(table[i].expected) > 0);
    const auto loaded = peat_trainer::load_c_gemm(std::string(PEAT_CANDIDATES_LIBRARY) + ":" + table[i].symbol);
    CHECK(reinterpret_cast<void*>(loaded) == reinterpret_cast<void*>(table[i].fn));
  }
  CHECK_THROWS_WITH(peat_trainer::load_c_gemm("no-colon"), Catch::Contains("expected 'path/libx.so:symbol'"));
  CHECK_THROWS_WITH(peat_trainer::load_c_gemm("/nonexistent/libx.so:f"), Catch::Contains("cannot open /nonexistent/libx.so"));
  CHECK_THROWS_WITH(peat_trainer::load_c_gemm(std::string(PEAT_CANDIDATES_LIBRARY) + ":no_such_symbol"),
                    Catch::Contains("no symbol 'no_such_symbol'"));
}

// ---- the peat_kernel_fn forms (peat_gemm_kernel.h convention) ----------------------

#include "peat_trainer/gemm_kernel.hpp"

#include <type_traits>
#if __has_include(<peat/injector.h>)
#include <peat/injector.h>
static_assert(std::is_same_v<peat_kernel_fn, peat_gemm_kernel_fn>, "the GEMM kernel convention must use PEAT's kernel signature");
static_assert(std::is_same_v<peat_kernel_fn, decltype(&peat_cand_bf16_kernel)>, "candidate adapters must be peat_kernel_fn");
#endif

namespace {

peat_trainer::GemmCall call_of(Problem& p, std::vector<float>& C) {
  peat_trainer::GemmCall c;
  c.op = "test/fwd_gemm";
  c.M = p.M, c.N = p.N, c.K = p.K, c.trans_a = p.ta, c.trans_b = p.tb, c.alpha = p.alpha, c.beta = p.beta;
  c.A = p.A.data(), c.lda = p.lda, c.B = p.B.data(), c.ldb = p.ldb, c.C = C.data(), c.ldc = p.ldc;
  return c;
}

}  // namespace

TEST_CASE("each candidate's peat_kernel_fn form computes what its plain form does", "[candidates][kernel]") {
  size_t n = 0;
  const peat_candidate_info_t* table = peat_candidates(&n);
  for (const auto& s : kShapes) {
    // K < 256 keeps the split-K candidate on one thread (deterministic) for this comparison.
    Problem p = make_problem(s.M, s.N, 200, s.ta, s.tb, s.alpha, s.beta, 30, 2.0f);
    for (size_t i = 0; i < n; ++i) {
      INFO(table[i].symbol << " ta " << s.ta << " tb " << s.tb);
      const auto plain = run(table[i].fn, p);
      std::vector<float> C = p.C0;
      CHECK(peat_trainer::run_gemm_kernel(table[i].kernel, nullptr, call_of(p, C)) == 0);
      CHECK(count_bit_mismatches(C, plain, p) == 0);
    }
    std::vector<float> C = p.C0;
    CHECK(peat_trainer::run_gemm_kernel(peat_gemm_sequential_kernel, nullptr, call_of(p, C)) == 0);
    CHECK(count_bit_mismatches(C, sequential_fp32(p), p) == 0);
    // The golden GEMM under the same signature equals GoldenGemm called directly.
    peat_trainer::GoldenGemm golden(1);
    std::vector<float> direct = p.C0, via = p.C0;
    const auto call = call_of(p, direct);
    golden.gemm(call);
    peat_trainer::GoldenKernelContext ctx{&call, &golden};
    auto call2 = call_of(p, via);
    CHECK(peat_trainer::run_gemm_kernel(peat_trainer::golden_gemm_kernel, &ctx, call2) == 0);
    CHECK(count_bit_mismatches(direct, via, p) == 0);
  }
}

TEST_CASE("GEMM kernels refuse calls outside the convention and write nothing", "[candidates][kernel]") {
  Problem p = make_problem(8, 6, 5, 0, 0, 1.0f, 0.0f, 31);
  std::vector<float> C = p.C0;
  const auto call = call_of(p, C);
  peat_trainer::GemmTensors t(call);
  SECTION("counts") {
    CHECK(peat_cand_bf16_kernel(nullptr, t.inputs, 1, t.outputs, 1, &t.attrs) == 1);
    CHECK(peat_cand_bf16_kernel(nullptr, t.inputs, 2, t.outputs, 0, &t.attrs) == 1);
    CHECK(peat_cand_bf16_kernel(nullptr, nullptr, 2, t.outputs, 1, &t.attrs) == 1);
  }
  SECTION("dtype, device, rank") {
    t.inputs[0].dtype.bits = 64;
    CHECK(peat_cand_blocked_kernel(nullptr, t.inputs, 2, t.outputs, 1, nullptr) == 1);
    t.inputs[0].dtype.bits = 32;
    t.inputs[1].device.device_type = kDLCUDA;
    CHECK(peat_cand_blocked_kernel(nullptr, t.inputs, 2, t.outputs, 1, nullptr) == 1);
    t.inputs[1].device.device_type = kDLCPU;
    t.outputs[0].ndim = 3;
    CHECK(peat_cand_blocked_kernel(nullptr, t.inputs, 2, t.outputs, 1, nullptr) == 1);
  }
  SECTION("shapes that do not chain, strides, attrs") {
    t.shapes[1][0] = 4;  // op(B) rows != K
    CHECK(peat_cand_tf32_kernel(nullptr, t.inputs, 2, t.outputs, 1, nullptr) == 1);
    t.shapes[1][0] = 5;
    t.strides[0][0] = 2;  // neither {ld, 1} with ld >= cols nor {1, ld}
    CHECK(peat_cand_tf32_kernel(nullptr, t.inputs, 2, t.outputs, 1, nullptr) == 1);
    t.strides[0][0] = p.lda;
    t.strides[2][0] = 1;  // C column-major
    t.strides[2][1] = p.M;
    CHECK(peat_cand_tf32_kernel(nullptr, t.inputs, 2, t.outputs, 1, nullptr) == 1);
    t.strides[2][0] = p.ldc;
    t.strides[2][1] = 1;
    peat_gemm_attrs_t small{0, 1.0f, 0.0f};
    CHECK(peat_cand_tf32_kernel(nullptr, t.inputs, 2, t.outputs, 1, &small) == 1);
    CHECK(peat_trainer::golden_gemm_kernel(nullptr, t.inputs, 2, t.outputs, 1, nullptr) == 1);
  }
  CHECK(count_bit_mismatches(C, p.C0, p) == 0);
  // NULL attrs means alpha = 1, beta = 0; NULL strides mean compact row-major.
  Problem q = make_problem(4, 3, 7, 0, 0, 1.0f, 0.0f, 32);
  q.lda = 7, q.ldb = 3, q.ldc = 3;
  q.A.resize(28), q.B.resize(21), q.C0.assign(12, 0.0f);
  peat_trainer::GemmTensors u(call_of(q, C));
  std::vector<float> out(12, -1.0f);
  u.inputs[0].strides = u.inputs[1].strides = u.outputs[0].strides = nullptr;
  u.inputs[0].data = q.A.data(), u.inputs[1].data = q.B.data(), u.outputs[0].data = out.data();
  CHECK(peat_gemm_sequential_kernel(nullptr, u.inputs, 2, u.outputs, 1, nullptr) == 0);
  CHECK(count_bit_mismatches(out, sequential_fp32(q), q) == 0);
}
