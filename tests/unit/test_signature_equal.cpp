// The bitwise-equal fast path of the CPU signature (lib/analyzer/simd_f32.cpp):
// on contiguous runs it accounts for a vector of equal pairs with a few
// operations. Its signature must be byte for byte the one of the full path.
// The reference here is the same logical elements read through an element
// stride of 2, which the analyzer runs through classify_pair pair by pair
// (the scalar path, no SIMD). Compared with memcmp, after a field-by-field
// check that names the first field that differs.
#include <catch2/catch.hpp>

#include <peat/analyzer.h>

#include "analyzer/exact_acc.hpp"
#include "analyzer/simd_f32.hpp"
#include "test_analyzer_support.hpp"

#include <hwy/targets.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace analyzer_test;

namespace {

// A view over owned words: `stride` elements between neighbours of the last
// dimension, `row_pad` extra elements after each row (2-D views only). The
// gaps hold NaN words, so reading one shows in the signature.
struct View {
  std::vector<unsigned char> bytes;
  std::vector<int64_t> shape, strides;
  DLTensor t{};

  View(Fmt f, const std::vector<uint64_t>& words, int64_t cols, int64_t stride, int64_t row_pad) {
    const int w = width_of(f) / 8;
    const int64_t n = static_cast<int64_t>(words.size());
    const int64_t rows = cols > 0 ? n / cols : 1;
    const int64_t row_len = (cols > 0 ? cols : n) * stride + row_pad;
    const uint64_t gap = f == Fmt::F32 ? 0x7FC00001u : f == Fmt::BF16 ? 0x7FC1u : 0x7E01u;
    bytes.resize(static_cast<std::size_t>((rows * row_len + 1) * w));
    for (int64_t k = 0; k < rows * row_len; ++k) std::memcpy(bytes.data() + k * w, &gap, w);
    const int64_t c = cols > 0 ? cols : n;
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(bytes.data() + ((i / c) * row_len + (i % c) * stride) * w, &words[static_cast<std::size_t>(i)], w);
    if (cols > 0) {
      shape = {rows, cols};
      strides = {row_len, stride};
    } else {
      shape = {n};
      strides = {stride};
    }
    t.data = bytes.data();
    t.device = DLDevice{kDLCPU, 0};
    t.ndim = static_cast<int32_t>(shape.size());
    t.dtype = dtype_of(f);
    t.shape = shape.data();
    t.strides = strides.data();
  }
};

peat_signature_t analyze(const View& g, const View& c, int threads, int64_t index_base = 0) {
  peat_signature_config_t cfg;
  peat_signature_config_init(&cfg);
  cfg.num_threads = threads;
  cfg.index_base = index_base;
  peat_signature_t s;
  peat_signature_init(&s);
  const peat_status_t st = peat_analyze(&g.t, &c.t, &cfg, &s, nullptr);
  INFO(peat_last_error_message());
  REQUIRE(st == PEAT_STATUS_OK);
  return s;
}

void require_identical(const peat_signature_t& a, const peat_signature_t& b) {
  // Field by field first, so that a failure names the field.
  CHECK(a.count == b.count);
  CHECK(a.bitwise_mismatch_count == b.bitwise_mismatch_count);
  CHECK(a.value_mismatch_count == b.value_mismatch_count);
  CHECK(a.golden_nan_count == b.golden_nan_count);
  CHECK(a.golden_inf_count == b.golden_inf_count);
  CHECK(a.candidate_nan_count == b.candidate_nan_count);
  CHECK(a.sign_flip_count == b.sign_flip_count);
  CHECK(a.dropped_count == b.dropped_count);
  CHECK(a.spurious_count == b.spurious_count);
  CHECK(a.tolerance_fail_count == b.tolerance_fail_count);
  CHECK(a.finite_count == b.finite_count);
  CHECK(a.max_abs_error_index == b.max_abs_error_index);
  CHECK(std::memcmp(&a.max_abs_error_golden, &b.max_abs_error_golden, 8) == 0);
  CHECK(a.max_rel_error_index == b.max_rel_error_index);
  CHECK(a.max_abs_golden == b.max_abs_golden);
  CHECK(std::memcmp(&a.sum_error, &b.sum_error, sizeof(a.sum_error)) == 0);
  CHECK(std::memcmp(&a.sum_sq_golden, &b.sum_sq_golden, sizeof(a.sum_sq_golden)) == 0);
  CHECK(std::memcmp(&a.sum_sq_candidate, &b.sum_sq_candidate, sizeof(a.sum_sq_candidate)) == 0);
  CHECK(std::memcmp(&a.sum_golden_candidate, &b.sum_golden_candidate, sizeof(a.sum_golden_candidate)) == 0);
  CHECK(a.ratio_count == b.ratio_count);
  CHECK(std::memcmp(&a.ratio_dev_sum, &b.ratio_dev_sum, sizeof(a.ratio_dev_sum)) == 0);
  CHECK(a.ratio_min == b.ratio_min);
  CHECK(a.ratio_max == b.ratio_max);
  CHECK(std::memcmp(a.ulp_hist, b.ulp_hist, sizeof(a.ulp_hist)) == 0);
  CHECK(std::memcmp(a.rel_hist, b.rel_hist, sizeof(a.rel_hist)) == 0);
  CHECK(std::memcmp(a.xor_bit_hist, b.xor_bit_hist, sizeof(a.xor_bit_hist)) == 0);
  CHECK(std::memcmp(a.xor_popcount_hist, b.xor_popcount_hist, sizeof(a.xor_popcount_hist)) == 0);
  REQUIRE(std::memcmp(&a, &b, sizeof(a)) == 0);
}

uint64_t sign_bit(Fmt f) { return f == Fmt::F32 ? 0x80000000u : 0x8000u; }

// Golden words: N(0, 1) scaled by 2^[-14, 6] (so that some terms leave the
// fixed-point windows); `specials` adds +-0, subnormals, NaN, +-Inf and the
// largest finite value, alone and in runs (runs of zeros at the start and
// across a chunk boundary make whole vectors of zeros).
std::vector<uint64_t> golden_words(Fmt f, std::size_t n, bool specials, std::mt19937_64& rng) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_int_distribution<int> scale(-14, 6), pick(0, 999);
  const bool wide = f == Fmt::F32;
  const uint64_t sub_max = wide ? 0x7FFFFFu : f == Fmt::BF16 ? 0x7Fu : 0x3FFu;
  const uint64_t nan = wide ? 0x7FC00000u : f == Fmt::BF16 ? 0x7FC0u : 0x7E00u;
  const uint64_t inf = wide ? 0x7F800000u : f == Fmt::BF16 ? 0x7F80u : 0x7C00u;
  std::vector<uint64_t> g(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double scaled = std::ldexp(normal(rng), f == Fmt::F16 ? scale(rng) / 2 : scale(rng));
    g[i] = encode(f, scaled);
    if (!specials) continue;
    const int r = pick(rng);
    if (r == 0) g[i] = 0;
    if (r == 1) g[i] = sign_bit(f);
    if (r == 2) g[i] = 1 + rng() % sub_max;
    if (r == 3) g[i] = nan;
    if (r == 4) g[i] = inf;
    if (r == 5) g[i] = inf | sign_bit(f);
    if (r == 6) g[i] = inf - 1;  // largest finite
  }
  if (specials) {
    for (std::size_t i = 0; i < 70 && i < n; ++i) g[i] = (i % 3 == 0) ? sign_bit(f) : 0;
    for (std::size_t i = 65530; i < 65700 && i < n; ++i) g[i] = 0;
    for (std::size_t i = 100000; i < 100064 && i < n; ++i) g[i] = 1 + (i % sub_max);
  }
  return g;
}

// The candidate: the golden with a share `differ` of its pairs changed (a few
// ulps mostly; sometimes a large change, NaN, a dropped value or a sign flip).
// `drift` > 0: only magnitudes a few ulps up (every ratio of a differing pair
// above 1), < 0: only down (below 1), so that the ratio extremum 1 comes from
// the equal pairs alone. `differ` < 0: the pairs of alternate blocks of 64
// differ (whole vectors equal or differing), and the last 64 (the scalar tail).
std::vector<uint64_t> candidate_words(Fmt f, const std::vector<uint64_t>& g, double differ, std::mt19937_64& rng,
                                      int drift = 0) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::uniform_int_distribution<int> ulps(1, 5), kind(0, 99);
  const uint64_t mask = f == Fmt::F32 ? 0xFFFFFFFFu : 0xFFFFu;
  std::vector<uint64_t> c = g;
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (differ < 0 ? (i / 64) % 2 == 1 && i + 64 < g.size() : !(u(rng) < differ)) continue;
    const int k = kind(rng);
    uint64_t w = g[i];
    if (drift != 0)
      w = (w + static_cast<uint64_t>(drift > 0 ? ulps(rng) : -ulps(rng))) & mask;
    else if (k < 90)
      w = (w + static_cast<uint64_t>(k % 2 ? ulps(rng) : -ulps(rng))) & mask;
    else if (k < 94)
      w ^= uint64_t{1} << (f == Fmt::F32 ? 22 : f == Fmt::BF16 ? 6 : 9);
    else if (k < 96)
      w = f == Fmt::F32 ? 0x7FC00000u : f == Fmt::BF16 ? 0x7FC0u : 0x7E00u;
    else if (k < 98)
      w = 0;
    else
      w ^= sign_bit(f);
    if (w == g[i]) w ^= 1;
    c[i] = w;
  }
  return c;
}

// Returns the reference signature.
peat_signature_t equal_path_case(Fmt f, double differ, bool specials, std::size_t n, uint64_t seed, int drift = 0) {
  INFO("dtype bits " << width_of(f) << (f == Fmt::BF16 ? " (bf16)" : "") << ", differing " << differ
                     << ", specials " << specials << ", n " << n << ", drift " << drift);
  std::mt19937_64 rng(seed);
  const auto gw = golden_words(f, n, specials, rng);
  const auto cw = candidate_words(f, gw, differ, rng, drift);
  // The reference: element stride 2, the scalar path.
  const View gs(f, gw, 0, 2, 0), cs(f, cw, 0, 2, 0);
  const peat_signature_t ref = analyze(gs, cs, 1);
  // Contiguous, on 1 and 2 threads.
  const View g1(f, gw, 0, 1, 0), c1(f, cw, 0, 1, 0);
  {
    INFO("contiguous, 1 and 2 threads");
    require_identical(analyze(g1, c1, 1), ref);
    require_identical(analyze(g1, c1, 2), ref);
  }
  if (n >= 997) {
    INFO("rows of 997 with a row stride of 1000 (contiguous runs)");
    const std::size_t m = (n / 997) * 997;
    const std::vector<uint64_t> gm(gw.begin(), gw.begin() + static_cast<std::ptrdiff_t>(m)),
        cm(cw.begin(), cw.begin() + static_cast<std::ptrdiff_t>(m));
    const View gr(f, gm, 997, 1, 3), cr(f, cm, 997, 1, 3);
    const View grs(f, gm, 997, 2, 0), crs(f, cm, 997, 2, 0);
    require_identical(analyze(gr, cr, 2), analyze(grs, crs, 1));
  }
  {
    INFO("three pieces at odd offsets, merged in another order");
    const std::size_t cut[4] = {0, std::min(n, n / 3 + 1), std::min(n, 2 * n / 3 + 5), n};
    std::vector<peat_signature_t> parts(3);
    for (auto& p : parts) peat_signature_init(&p);
    for (int k = 0; k < 3; ++k) {
      if (cut[k] == cut[k + 1]) continue;
      const std::vector<uint64_t> gp(gw.begin() + static_cast<std::ptrdiff_t>(cut[k]),
                                     gw.begin() + static_cast<std::ptrdiff_t>(cut[k + 1]));
      const std::vector<uint64_t> cp(cw.begin() + static_cast<std::ptrdiff_t>(cut[k]),
                                     cw.begin() + static_cast<std::ptrdiff_t>(cut[k + 1]));
      parts[static_cast<std::size_t>(k)] =
          analyze(View(f, gp, 0, 1, 0), View(f, cp, 0, 1, 0), 2, static_cast<int64_t>(cut[k]));
    }
    peat_signature_t merged;
    peat_signature_init(&merged);
    for (int k : {2, 0, 1}) REQUIRE(peat_signature_merge(&merged, &parts[static_cast<std::size_t>(k)]) == PEAT_STATUS_OK);
    require_identical(merged, ref);
  }
  return ref;
}

}  // namespace

TEST_CASE("bitwise-equal fast path: byte-identical signature, f32", "[analyzer][simd][equal]") {
  // 0.01 and 0.05: mostly vectors with a few differing pairs (split, the
  // differing ones staged); 0.15: split and whole vectors interleaved.
  for (double differ : {0.0, 0.01, 0.05, 0.15, 0.5, 1.0})
    for (bool specials : {false, true}) equal_path_case(Fmt::F32, differ, specials, 200003, 41);
}

TEST_CASE("bitwise-equal fast path: byte-identical signature, bf16 and f16", "[analyzer][simd][equal]") {
  for (Fmt f : {Fmt::BF16, Fmt::F16})
    for (double differ : {0.0, 0.01, 0.05, 0.15, 0.5, 1.0})
      for (bool specials : {false, true}) equal_path_case(f, differ, specials, 140001, 43);
}

TEST_CASE("differing pairs: errors across many binades, binade crossings and long carries",
          "[analyzer][simd][equal]") {
  // Pairs that leave the fast path's quick tests, each of which must still
  // give the scalar path's signature byte for byte: relative errors from 2^-1
  // to 2^-22 (terms far outside the windows placed by the first vector, so
  // the window guards fail and the exact checks take them), candidates one
  // ulp across a power of two (the quick ordinary test of a group fails: the
  // full test takes the group; the XOR flips a run of bits, popcounts up to
  // 24), goldens near 2^-103 (the quick test's lower bound; below it the
  // error can be subnormal and the pair is not ordinary), and pairs that are
  // not ordinary at all among ordinary ones (a group holding one goes vector
  // by vector, and the scalar path takes its vector).
  for (Fmt f : {Fmt::F32, Fmt::BF16})
    for (double differ : {0.003, 0.05, 1.0}) {
      // 0.003: most groups of 64 pairs hold none or one or two differing
      // pairs (staged without a branch); 0.05: more (compressed); 1.0: every
      // vector differs (taken one by one).
      INFO((f == Fmt::F32 ? "f32" : "bf16") << ", differing share " << differ);
      std::mt19937_64 rng(differ < 0.01 ? 79 : differ < 1 ? 71 : 73);
      const std::size_t n = 50003;
      // N(0, 1) goldens, unscaled: their squares fit one window, so groups
      // of vectors pass its test and reach the quick ordinary test.
      std::normal_distribution<double> normal(0.0, 1.0);
      std::vector<uint64_t> g(n);
      for (auto& w : g) w = encode(f, normal(rng));
      std::vector<uint64_t> c = g;
      std::uniform_real_distribution<double> u(0.0, 1.0);
      std::uniform_int_distribution<int> kind(0, 4), bits(1, f == Fmt::F32 ? 22 : 6), tiny(-112, -96);
      const uint64_t mantissa = f == Fmt::F32 ? 0x7FFFFFu : 0x7Fu;
      for (std::size_t i = 0; i < n; ++i) {
        if (!(u(rng) < differ)) continue;
        const double gv = decode(f, g[i]);
        switch (kind(rng)) {
          case 0:  // relative error 2^-k, up or down
            c[i] = encode(f, gv * (1 + (rng() & 1 ? 1 : -1) * std::ldexp(1.0, -bits(rng))));
            break;
          case 1:  // all mantissa bits set, then one ulp up: across the power of two
            g[i] |= mantissa;
            c[i] = g[i] + 1;
            break;
          case 2:  // a tiny golden, a few ulps off
            g[i] = encode(f, std::ldexp(1.0 + u(rng), tiny(rng)));
            c[i] = g[i] + 1 + rng() % 3;
            break;
          case 3:  // not ordinary: the sign flipped, or three times the golden
            c[i] = rng() & 1 ? g[i] ^ sign_bit(f) : encode(f, 3 * gv);
            break;
          default:  // a few ulps
            c[i] = g[i] + 1 + rng() % 4;
            break;
        }
        if (c[i] == g[i]) c[i] ^= 1;
      }
      const View g1(f, g, 0, 1, 0), c1(f, c, 0, 1, 0), g2(f, g, 0, 2, 0), c2(f, c, 0, 2, 0);
      const peat_signature_t ref = analyze(g2, c2, 1);
      CHECK(ref.bitwise_mismatch_count > (differ < 0.01 ? 100u : differ < 1 ? 1000u : 40000u));
      require_identical(analyze(g1, c1, 2), ref);
      require_identical(analyze(g1, c1, 1), ref);
    }
}

TEST_CASE("bitwise-equal fast path: ratio extrema set by the equal pairs alone", "[analyzer][simd][equal]") {
  for (Fmt f : {Fmt::F32, Fmt::BF16})
    for (int drift : {1, -1}) {
      const peat_signature_t ref = equal_path_case(f, -1, false, 70001, 67, drift);
      CHECK((drift > 0 ? ref.ratio_min : ref.ratio_max) == 1.0);
      CHECK((drift > 0 ? ref.ratio_max : ref.ratio_min) != 1.0);
    }
}

TEST_CASE("bitwise-equal fast path: short and odd lengths", "[analyzer][simd][equal]") {
  for (std::size_t n : {std::size_t{1}, std::size_t{15}, std::size_t{17}, std::size_t{33}, std::size_t{1001}})
    for (double differ : {0.0, 0.01, 1.0}) {
      equal_path_case(Fmt::F32, differ, true, n, 47 + n);
      equal_path_case(Fmt::F32, differ, false, n, 53 + n);
    }
}

TEST_CASE("bitwise-equal fast path: every Highway target this CPU runs", "[analyzer][simd][equal]") {
  const int64_t supported = hwy::SupportedTargets();
  int tried = 0;
  for (int64_t target = 1; target != 0 && target <= HWY_SCALAR; target <<= 1) {
    if ((supported & target) == 0 || (HWY_TARGETS & target) == 0) continue;
    INFO("Highway target " << hwy::TargetName(target));
    hwy::SetSupportedTargetsForTest(target);
    for (double differ : {0.0, 0.01}) {
      equal_path_case(Fmt::F32, differ, true, 70001, 59);
      equal_path_case(Fmt::BF16, differ, true, 70001, 61);
    }
    ++tried;
  }
  hwy::SetSupportedTargetsForTest(0);  // back to the real CPU
  CHECK(tried >= 2);
}

namespace {

// A direct call of the f32 fast path: its accumulators and histograms, and
// the state pointing at them.
struct FastCall {
  peat::impl::analyzer::ExactAcc acc[peat::impl::analyzer::kSumCount];
  uint64_t ulp[PEAT_SIGNATURE_ULP_BUCKETS] = {}, rel[PEAT_SIGNATURE_REL_BUCKETS] = {},
           bits[PEAT_SIGNATURE_XOR_BITS] = {}, pop[PEAT_SIGNATURE_POPCOUNT_BUCKETS] = {},
           top[PEAT_SIGNATURE_XOR_BITS] = {}, top_set[PEAT_SIGNATURE_XOR_BITS] = {}, low[PEAT_SIGNATURE_XOR_BITS] = {};
  peat::impl::analyzer::F32FastState st;
  FastCall() {
    st.acc = acc;
    st.ulp_hist = ulp;
    st.rel_hist = rel;
    st.xor_bit_hist = bits;
    st.popcount_hist = pop;
    st.top_bit_hist = top;
    st.top_bit_set_hist = top_set;
    st.low_bit_hist = low;
  }
  FastCall(const FastCall&) = delete;
};

}  // namespace

TEST_CASE("bitwise-equal fast path: the SIMD kernel takes vectors of equal zeros and subnormals",
          "[analyzer][simd][equal]") {
  // The full SIMD path leaves any vector holding a zero or a subnormal golden
  // to the scalar path; equal pairs of those go through the equal path, so a
  // block of them is consumed whole (what makes a ReLU-like tensor fast).
  const int64_t lanes = peat::impl::analyzer::f32_fast_lanes();
  if (lanes < 2) {
    WARN("scalar Highway target: no SIMD path to check");
    return;
  }
  const int64_t n = lanes * 8;
  std::vector<uint32_t> g(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    g[static_cast<std::size_t>(i)] = (i % 3 == 0) ? 0u : (i % 3 == 1) ? 0x80000000u : static_cast<uint32_t>(i);
  FastCall call;
  const uint64_t* ulp = call.ulp;
  const uint64_t* pop = call.pop;
  peat::impl::analyzer::F32FastState& st = call.st;
  peat::impl::analyzer::F32FastParams p;
  p.rtol = 1e-5;
  p.ratio_min_abs = 1e-38f;
  CHECK(peat::impl::analyzer::f32_fast(g.data(), g.data(), n, 0, p, st) == n);
  CHECK(st.count == static_cast<uint64_t>(n));
  CHECK(ulp[0] == static_cast<uint64_t>(n));
  CHECK(pop[0] == static_cast<uint64_t>(n));
  CHECK(st.bitwise == 0);
  CHECK(st.ratio_n == 0);  // zeros and subnormals are below ratio_min_abs
  CHECK(st.max_abs_index == 0);
  CHECK(st.max_rel_index == 2);  // the first g != 0
}

namespace {

// A run of f32 words where every golden is 1.5 and chosen pairs are one ulp
// up: every differing pair has the same |e| and the same |e|/|g|, so the
// maxima's indices show the order in which pairs reached them.
struct TieRun {
  std::vector<uint32_t> g, c;
  explicit TieRun(int64_t n) : g(static_cast<std::size_t>(n), 0x3FC00000u), c(g) {}
  void differ(int64_t i) { c[static_cast<std::size_t>(i)] = 0x3FC00001u; }
  // The signature of the contiguous run equals the scalar path's (element
  // stride 2), byte for byte; returns the scalar path's.
  peat_signature_t require_scalar_identical() const {
    const std::vector<uint64_t> gw(g.begin(), g.end()), cw(c.begin(), c.end());
    const View gs(Fmt::F32, gw, 0, 2, 0), cs(Fmt::F32, cw, 0, 2, 0), g1(Fmt::F32, gw, 0, 1, 0),
        c1(Fmt::F32, cw, 0, 1, 0);
    const peat_signature_t ref = analyze(gs, cs, 1);
    require_identical(analyze(g1, c1, 1), ref);
    return ref;
  }
};

}  // namespace

TEST_CASE("split vectors: a few differing pairs go to the full path a vector at a time", "[analyzer][simd][equal]") {
  namespace an = peat::impl::analyzer;
  const int64_t N = an::f32_fast_lanes();
  if (N < 4) {
    WARN("fewer than 4 SIMD lanes: no vector is split");
    return;
  }
  // One differing pair per vector, at lane (v mod N): every vector is split,
  // and the stage fills and is taken N pairs at a time, the last pairs padded.
  const int64_t vectors = 3 * N + 5, n = vectors * N;
  TieRun run(n);
  for (int64_t v = 0; v < vectors; ++v) run.differ(v * N + v % N);
  FastCall call;
  const uint64_t *ulp = call.ulp, *pop = call.pop, *bits = call.bits;
  an::F32FastState& st = call.st;
  an::F32FastParams p;
  p.rtol = 1e-9;  // every differing pair fails it
  p.ratio_min_abs = 1e-30f;
  REQUIRE(an::f32_fast(run.g.data(), run.c.data(), n, 100, p, st) == n);
  CHECK(st.staged == static_cast<uint64_t>(vectors));
  CHECK(st.bitwise == static_cast<uint64_t>(vectors));
  CHECK(st.tolerance_fail == static_cast<uint64_t>(vectors));
  CHECK(st.count == static_cast<uint64_t>(n));
  CHECK(st.ratio_n == static_cast<uint64_t>(n));
  // The padding took back what it counted: bucket 0 holds the equal pairs only.
  CHECK(ulp[0] == static_cast<uint64_t>(n - vectors));
  CHECK(ulp[1] == static_cast<uint64_t>(vectors));
  CHECK(pop[0] == static_cast<uint64_t>(n - vectors));
  CHECK(pop[1] == static_cast<uint64_t>(vectors));
  CHECK(bits[0] == static_cast<uint64_t>(vectors));
  CHECK(st.max_abs_index == 100 + 0);  // vector 0, lane 0: the first of equal errors
  CHECK(st.max_rel_index == 100 + 0);
  CHECK(st.ratio_min == 1.0);
  CHECK(st.ratio_max == static_cast<double>(1.5f + 0x1p-23f) / 1.5);

  run.require_scalar_identical();  // the full reference: the scalar path
}

TEST_CASE("split vectors: staged pairs reach the maxima before a later whole vector", "[analyzer][simd][equal]") {
  // Vector 0 has one differing pair (staged), vector 1 differs in every
  // lane (the full path at once), all with the same |e|: the maximum is the
  // staged pair's, the lowest index, as the scalar path finds it.
  const int64_t N = peat::impl::analyzer::f32_fast_lanes();
  if (N < 4) {
    WARN("fewer than 4 SIMD lanes: no vector is split");
    return;
  }
  for (int64_t lane : {int64_t{0}, N / 2, N - 1}) {
    INFO("staged lane " << lane);
    const int64_t n = 4 * N;
    TieRun run(n);
    run.differ(lane);
    for (int64_t j = N; j < 2 * N; ++j) run.differ(j);
    run.differ(3 * N + 1);  // and one more staged after the whole vector
    const peat_signature_t ref = run.require_scalar_identical();
    CHECK(ref.max_abs_error_index == lane);
    CHECK(ref.max_rel_error_index == lane);
  }
}

TEST_CASE("split vectors: dense and sparse differences in one call", "[analyzer][simd][equal]") {
  // Dense, sparse, dense, sparse regions of 3 blocks' worth of vectors (a
  // block is 64 vectors): every differing pair goes through the stage, dense
  // or not, and the result is the scalar path's, byte for byte.
  namespace an = peat::impl::analyzer;
  const int64_t N = an::f32_fast_lanes();
  if (N < 4) {
    WARN("fewer than 4 SIMD lanes: no vector is split");
    return;
  }
  const int64_t region = 3 * 64 + 5, vectors = 4 * region, n = vectors * N;
  TieRun run(n);
  for (int64_t v = 0; v < vectors; ++v) {
    const bool dense = (v / region) % 2 == 0;
    for (int64_t j = 0; j < N; ++j)
      if (dense || j == v % N) run.differ(v * N + j);
  }
  FastCall call;
  an::F32FastState& st = call.st;
  an::F32FastParams p;
  p.rtol = 1e-3;
  p.ratio_min_abs = 1e-30f;
  REQUIRE(an::f32_fast(run.g.data(), run.c.data(), n, 0, p, st) == n);
  const uint64_t differing = static_cast<uint64_t>(2 * region * N + 2 * region);
  CHECK(st.staged == differing);
  CHECK(st.bitwise == differing);
  CHECK(call.ulp[0] == static_cast<uint64_t>(n) - differing);

  run.require_scalar_identical();
}

TEST_CASE("fast blocks: windows filled to the limit, refused blocks and goldens outside the window",
          "[analyzer][simd][equal]") {
  // Each chunk's first vector (|g| = 1) places the g*g window; the other
  // goldens sit just below its top (|g| in [12, 16): terms near 2^74 of its
  // units), so the window lanes run close to their 2^53 bound. Candidates
  // are bitwise equal but for a few pairs that are not ordinary (NaN): their
  // blocks are refused and go vector by vector, between blocks that filled
  // the windows at once. Some goldens are tiny (outside the window: the
  // block's g*g goes in again lane by lane) or zero.
  std::mt19937_64 rng(83);
  const std::size_t n = std::size_t{1} << 20, chunk = std::size_t{1} << 16;
  std::uniform_real_distribution<double> top(12.0, 15.99), u(0.0, 1.0);
  std::vector<uint64_t> g(n), c;
  for (std::size_t i = 0; i < n; ++i) {
    const double sign = rng() & 1 ? 1.0 : -1.0;
    double v = sign * top(rng);
    if (i % chunk < 16) v = sign;
    else if (u(rng) < 2e-5) v = sign * std::ldexp(1.0, -30);
    else if (u(rng) < 1e-4) v = 0;
    g[i] = encode(Fmt::F32, v);
  }
  c = g;
  for (std::size_t i = 0; i < n; ++i)
    if (i % chunk >= 16 && u(rng) < 1.0 / 3000) c[i] = encode(Fmt::F32, std::nan(""));
  const View g1(Fmt::F32, g, 0, 1, 0), c1(Fmt::F32, c, 0, 1, 0), g2(Fmt::F32, g, 0, 2, 0), c2(Fmt::F32, c, 0, 2, 0);
  const peat_signature_t ref = analyze(g2, c2, 1);
  CHECK(ref.candidate_nan_count > 200u);
  require_identical(analyze(g1, c1, 2), ref);
  require_identical(analyze(g1, c1, 1), ref);
}

TEST_CASE("pass 3 counts: carry-save batches of 16 vectors, bucket windows moving between them",
          "[analyzer][simd][equal]") {
  // Every pair differs and is ordinary, so pass 3 takes the stage 16 vectors
  // at a time through its carry-save trees (and the rest vector by vector).
  // The ULP distance jumps between phases (1-3 ulps, 2^12-2^13, 2^18-2^20,
  // log-uniform up to 2^21), so the ULP, relative-error and popcount
  // windows must move several times inside batches, and 3 x 64 Ki pairs
  // fill the tree's sixteens counters past their flush. The result must be
  // the scalar path's byte for byte.
  std::mt19937_64 rng(97);
  const std::size_t n = 3 * 65536 + 77;
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_int_distribution<int> octave(0, 20);
  std::vector<uint64_t> g(n), c(n);
  for (std::size_t i = 0; i < n; ++i) {
    double v = normal(rng);
    if (std::fabs(v) < 0x1p-20) v = 0.5;
    // Mantissa bit 22 cleared: adding fewer than 2^22 ulps stays in the binade.
    g[i] = encode(Fmt::F32, v) & ~uint64_t{0x400000};
    uint64_t k;
    switch (i * 6 / n) {
      case 1: k = (uint64_t{1} << 12) + rng() % (uint64_t{1} << 12); break;
      case 3: k = (uint64_t{1} << 18) + rng() % (uint64_t{3} << 18); break;
      case 4: k = (uint64_t{1} << octave(rng)) + rng() % 3; break;
      default: k = 1 + rng() % 3; break;
    }
    c[i] = g[i] + k;
  }
  const View g1(Fmt::F32, g, 0, 1, 0), c1(Fmt::F32, c, 0, 1, 0), g2(Fmt::F32, g, 0, 2, 0), c2(Fmt::F32, c, 0, 2, 0);
  const peat_signature_t ref = analyze(g2, c2, 1);
  REQUIRE(ref.bitwise_mismatch_count == n);
  // The phases reach the buckets they should (ULP bucket = floor(log2 k) + 1).
  CHECK(ref.ulp_hist[1] > n / 20);
  CHECK(ref.ulp_hist[13] > n / 20);
  CHECK(ref.ulp_hist[20] > n / 50);
  require_identical(analyze(g1, c1, 1), ref);
  require_identical(analyze(g1, c1, 2), ref);
}
