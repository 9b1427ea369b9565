// The Detector's labeled corpus (see corpus.hpp).
//
// Labels are the injector's ground truth (peat_inject_truth_t.model), with
// the observable corrections below, each decided from the truth alone:
//  - an injection that changed no element is EXACT;
//  - a STUCK_AT that changed exactly one element is BITFLIP_SINGLE;
//  - a legitimate candidate kernel is ROUNDING (different summation order,
//    pairwise vs sequential, FMA) or REDUCED_PRECISION (inputs rounded to
//    bf16 / fp16 / tf32, fp16 accumulation), or EXACT when its output is
//    bitwise identical to the golden one.
//  - a BITFLIP (or a STUCK_AT that changed one element) that moved every
//    changed element by at most 3 ULP is ROUNDING (rounding moves values that
//    far as well; a stuck bit over several elements keeps its one-bit,
//    one-direction structure and stays STUCK_AT); the corpus draws
//    explicit flip positions from bit 2 upwards, random ones anywhere.
#include "corpus.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>

namespace peat_corpus {
namespace {

enum class DT { F32, F16, BF16, F64 };

DLDataType dl(DT t) {
  switch (t) {
    case DT::F32: return DLDataType{kDLFloat, 32, 1};
    case DT::F16: return DLDataType{kDLFloat, 16, 1};
    case DT::BF16: return DLDataType{kDLBfloat, 16, 1};
    case DT::F64: return DLDataType{kDLFloat, 64, 1};
  }
  return DLDataType{kDLFloat, 32, 1};
}
const char* dt_name(DT t) {
  switch (t) {
    case DT::F32: return "f32";
    case DT::F16: return "f16";
    case DT::BF16: return "bf16";
    case DT::F64: return "f64";
  }
  return "?";
}
int width(DT t) { return t == DT::F64 ? 64 : t == DT::F32 ? 32 : 16; }
int mant(DT t) { return t == DT::F64 ? 52 : t == DT::F32 ? 23 : t == DT::F16 ? 10 : 7; }

double round_to(double v, peat_float_format_t f) {
  double out = 0;
  if (peat_inject_round_value(v, f, PEAT_ROUND_NEAREST_EVEN, 0, &out) != PEAT_STATUS_OK)
    throw std::runtime_error(std::string("peat_inject_round_value: ") + peat_last_error_message());
  return out;
}
double f32(double v) { return static_cast<double>(static_cast<float>(v)); }

// Rounds to the storage dtype.
double store(double v, DT t) {
  switch (t) {
    case DT::F64: return v;
    case DT::F32: return static_cast<float>(v);
    case DT::F16: return static_cast<double>(static_cast<_Float16>(v));
    case DT::BF16: return round_to(v, PEAT_FORMAT_BF16);
  }
  return v;
}

// A tensor in storage form.
struct Tensor {
  DT dt = DT::F32;
  int64_t rows = 1, cols = 1;
  std::vector<unsigned char> bytes;
  int64_t shape[2] = {1, 1};
  DLTensor view() {
    DLTensor t;
    std::memset(&t, 0, sizeof t);
    t.data = bytes.data();
    t.device = DLDevice{kDLCPU, 0};
    t.ndim = 2;
    t.dtype = dl(dt);
    shape[0] = rows;
    shape[1] = cols;
    t.shape = shape;
    return t;
  }
};

Tensor make_tensor(const std::vector<double>& v, DT dt, int64_t rows, int64_t cols) {
  Tensor t;
  t.dt = dt;
  t.rows = rows;
  t.cols = cols;
  const size_t n = v.size();
  t.bytes.resize(n * static_cast<size_t>(width(dt) / 8));
  for (size_t i = 0; i < n; ++i) {
    switch (dt) {
      case DT::F64: std::memcpy(&t.bytes[i * 8], &v[i], 8); break;
      case DT::F32: { float x = static_cast<float>(v[i]); std::memcpy(&t.bytes[i * 4], &x, 4); break; }
      case DT::F16: { _Float16 x = static_cast<_Float16>(v[i]); std::memcpy(&t.bytes[i * 2], &x, 2); break; }
      case DT::BF16: {
        float x = static_cast<float>(v[i]);  // v is already a bf16 value: exact
        uint32_t b; std::memcpy(&b, &x, 4);
        uint16_t h = static_cast<uint16_t>(b >> 16);
        std::memcpy(&t.bytes[i * 2], &h, 2);
        break;
      }
    }
  }
  return t;
}

// ---- kernels -------------------------------------------------------------------------

enum class Sum { Sequential, Reverse, Blocked, Pairwise, Fma, Fp16Acc };

// Dot product of a[0..K) (stride sa) and b (stride sb) in the accumulation type
// of the golden dtype (f64 for f64, f32 otherwise).
double dot(const double* a, int64_t sa, const double* b, int64_t sb, int64_t K, bool wide, Sum how, int block) {
  auto acc_round = [&](double x) { return wide ? x : static_cast<double>(static_cast<float>(x)); };
  auto prod = [&](int64_t k) { return acc_round(a[k * sa] * b[k * sb]); };
  switch (how) {
    case Sum::Sequential: {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s = acc_round(s + prod(k));
      return s;
    }
    case Sum::Reverse: {
      double s = 0;
      for (int64_t k = K - 1; k >= 0; --k) s = acc_round(s + prod(k));
      return s;
    }
    case Sum::Blocked: {
      double total = 0;
      for (int64_t k0 = 0; k0 < K; k0 += block) {
        double s = 0;
        for (int64_t k = k0; k < std::min(K, k0 + block); ++k) s = acc_round(s + prod(k));
        total = acc_round(total + s);
      }
      return total;
    }
    case Sum::Pairwise: {
      std::vector<double> v(static_cast<size_t>(K));
      for (int64_t k = 0; k < K; ++k) v[static_cast<size_t>(k)] = prod(k);
      while (v.size() > 1) {
        std::vector<double> w((v.size() + 1) / 2);
        for (size_t i = 0; i < w.size(); ++i) w[i] = 2 * i + 1 < v.size() ? acc_round(v[2 * i] + v[2 * i + 1]) : v[2 * i];
        v.swap(w);
      }
      return v.empty() ? 0 : v[0];
    }
    case Sum::Fma: {
      if (wide) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k) s = std::fma(a[k * sa], b[k * sb], s);
        return s;
      }
      float s = 0;
      for (int64_t k = 0; k < K; ++k)
        s = std::fma(static_cast<float>(a[k * sa]), static_cast<float>(b[k * sb]), s);
      return s;
    }
    case Sum::Fp16Acc: {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s = static_cast<double>(static_cast<_Float16>(s + static_cast<double>(static_cast<_Float16>(a[k * sa] * b[k * sb]))));
      return s;
    }
  }
  return 0;
}

struct KernelCase {
  int64_t rows = 0, cols = 0, K = 0;
  std::vector<double> A, B;  // GEMM: A rows x K, B K x cols. Conv: im2col form: A = weights
                             // (Cout x K), B = patches (K x H*W).
};

KernelCase make_gemm(std::mt19937_64& rng, DT dt, int max_mn, int max_k) {
  KernelCase c;
  std::uniform_int_distribution<int> mn(1, max_mn), kk(1, max_k);
  c.rows = mn(rng);
  c.cols = mn(rng);
  c.K = kk(rng);
  std::normal_distribution<double> nd(0, 1);
  c.A.resize(static_cast<size_t>(c.rows * c.K));
  c.B.resize(static_cast<size_t>(c.K * c.cols));
  for (auto& x : c.A) x = store(nd(rng), dt);
  for (auto& x : c.B) x = store(nd(rng), dt);
  return c;
}

// A 3x3 convolution with padding 1 of a C x H x W input by Cout filters,
// written as patches so that the kernels above compute it: output rows =
// Cout, cols = H*W, K = C*9.
KernelCase make_conv(std::mt19937_64& rng, DT dt) {
  std::uniform_int_distribution<int> cd(1, 6), hd(3, 12), od(1, 8);
  const int C = cd(rng), H = hd(rng), W = hd(rng), Cout = od(rng);
  std::normal_distribution<double> nd(0, 1);
  std::vector<double> in(static_cast<size_t>(C * H * W));
  for (auto& x : in) x = store(nd(rng), dt);
  KernelCase c;
  c.rows = Cout;
  c.cols = H * W;
  c.K = C * 9;
  c.A.resize(static_cast<size_t>(Cout * c.K));
  for (auto& x : c.A) x = store(nd(rng) / 3, dt);
  c.B.assign(static_cast<size_t>(c.K * c.cols), 0.0);
  for (int ch = 0; ch < C; ++ch)
    for (int r = 0; r < 3; ++r)
      for (int s = 0; s < 3; ++s)
        for (int y = 0; y < H; ++y)
          for (int x = 0; x < W; ++x) {
            const int iy = y + r - 1, ix = x + s - 1;
            const int64_t k = ch * 9 + r * 3 + s;
            if (iy >= 0 && iy < H && ix >= 0 && ix < W)
              c.B[static_cast<size_t>(k * c.cols + y * W + x)] = in[static_cast<size_t>((ch * H + iy) * W + ix)];
          }
  return c;
}

// Runs a kernel variant; `input_format` >= 0 rounds the inputs first.
std::vector<double> run_kernel(const KernelCase& c, DT dt, Sum how, int block, int input_format = -1) {
  const bool wide = dt == DT::F64;
  std::vector<double> A = c.A, B = c.B;
  if (input_format >= 0) {
    for (auto& x : A) x = round_to(x, input_format);
    for (auto& x : B) x = round_to(x, input_format);
  }
  std::vector<double> out(static_cast<size_t>(c.rows * c.cols));
  for (int64_t i = 0; i < c.rows; ++i)
    for (int64_t j = 0; j < c.cols; ++j)
      out[static_cast<size_t>(i * c.cols + j)] = store(dot(&A[static_cast<size_t>(i * c.K)], 1, &B[static_cast<size_t>(j)], c.cols, c.K, wide, how, block), dt);
  return out;
}

// ---- one case ------------------------------------------------------------------------

struct Case {
  std::string what;
  DT dt = DT::F32;
  Tensor golden, candidate;
  bool has_rerun = false;
  Tensor rerun;
  peat_op_kind_t op = PEAT_OP_KIND_UNKNOWN;
  int64_t K = 0;
  int64_t tile = 32;
  int label = PEAT_ERROR_MODEL_UNKNOWN;
  bool exp_sign_flip = false;
  bool noise_flip = false;
  std::string family = "injected";
  peat_mismatch_kind_t map_kind = PEAT_MISMATCH_BITWISE;
  double rtol = -1, atol = -1;      // tolerance of a TOLERANCE map (< 0: the dtype's default)
  bool rerun_elementwise = false;   // also give peat_detect the signature of (run 1, run 2)
  int expect_format = -1;           // REDUCED_PRECISION: the format it must name
  bool ten_either = false;          // ... where fp16 and tf32 read alike: 10-bit values stored within fp16's
                                    // range (the same grid), or 10-bit inputs with a full-precision output
};

struct Scorer {
  Result& result;
  bool verbose;

  void score(Case& c) {
    peat_signature_config_t cfg;
    peat_signature_config_init(&cfg);
    cfg.reduction_length = c.K;
    if (c.K > 0 && c.dt != DT::F64) cfg.unit_roundoff = std::ldexp(1.0, -24);
    cfg.spatial_rows = c.golden.rows;
    cfg.spatial_cols = c.golden.cols;
    cfg.tile_rows = c.tile;
    cfg.tile_cols = c.tile;
    cfg.map_mismatch = c.map_kind;
    cfg.rtol = c.rtol;
    cfg.atol = c.atol;
    cfg.num_threads = 1;
    peat_signature_t sig, rerun, diff;
    peat_signature_init(&sig);
    peat_signature_init(&rerun);
    peat_signature_init(&diff);
    peat_spatial_map_t map;
    peat_spatial_map_init(&map);
    DLTensor g = c.golden.view(), k = c.candidate.view();
    if (peat_analyze(&g, &k, &cfg, &sig, &map) != PEAT_STATUS_OK)
      throw std::runtime_error(std::string("peat_analyze: ") + peat_last_error_message());
    peat_detect_context_t ctx;
    peat_detect_context_init(&ctx);
    ctx.op_kind = c.op;
    ctx.reduction_length = c.K;
    ctx.map = &map;
    if (c.has_rerun) {
      DLTensor r = c.rerun.view();
      if (peat_analyze(&g, &r, &cfg, &rerun, nullptr) != PEAT_STATUS_OK)
        throw std::runtime_error(std::string("peat_analyze: ") + peat_last_error_message());
      ctx.rerun = &rerun;
      if (c.rerun_elementwise) {
        if (peat_analyze(&k, &r, &cfg, &diff, nullptr) != PEAT_STATUS_OK)
          throw std::runtime_error(std::string("peat_analyze: ") + peat_last_error_message());
        ctx.rerun_diff = &diff;
      }
    }
    peat_detection_t det;
    peat_detection_init(&det);
    const peat_status_t st = peat_detect(&sig, &ctx, &det);
    peat_spatial_map_release(&map);
    result.cases++;
    int top = PEAT_ERROR_MODEL_UNKNOWN;
    if (st != PEAT_STATUS_OK || det.verdict_count < 1) {
      result.detect_errors++;
    } else {
      top = det.verdicts[0].model;
    }
    result.confusion[static_cast<size_t>(c.label)][static_cast<size_t>(top)]++;
    bool right = top == c.label;
    if (right && c.expect_format >= 0) {  // the format must be named too
      const int got = det.verdicts[0].nearest_format;
      right = c.ten_either ? (got == PEAT_FORMAT_FP16 || got == PEAT_FORMAT_TF32) : got == c.expect_format;
    }
    if (right) result.correct++;
    auto& fam = result.families[c.family];
    fam[0]++;
    fam[1] += right ? 1 : 0;
    if (c.exp_sign_flip) {
      result.exp_sign_flip_cases++;
      bool only_benign = true;
      for (int i = 0; i < det.verdict_count; ++i)
        if (det.verdicts[i].model != PEAT_ERROR_MODEL_EXACT && det.verdicts[i].model != PEAT_ERROR_MODEL_ROUNDING)
          only_benign = false;
      if (only_benign) result.exp_sign_flip_missed++;
    }
    if (c.noise_flip && sig.value_mismatch_count > 1) {
      result.noise_flip_cases++;
      bool rounding_later = false;
      for (int i = 1; i < det.verdict_count; ++i) rounding_later |= det.verdicts[i].model == PEAT_ERROR_MODEL_ROUNDING;
      if ((top == PEAT_ERROR_MODEL_BITFLIP_SINGLE || top == PEAT_ERROR_MODEL_BITFLIP_MULTI) && rounding_later)
        result.noise_flip_both++;
    }
    if (!right && result.misses.size() < 200) {
      char buf[512];
      std::snprintf(buf, sizeof buf, "%s: %s [%s %lldx%lld K=%lld] truth %s got %s", c.family.c_str(), c.what.c_str(), dt_name(c.dt),
                    static_cast<long long>(c.golden.rows), static_cast<long long>(c.golden.cols),
                    static_cast<long long>(c.K), peat_error_model_name(c.label), peat_error_model_name(top));
      std::string line = buf;
      if (verbose && st == PEAT_STATUS_OK) {
        std::vector<char> text(1 << 16);
        size_t len = 0;
        if (peat_detection_render(&det, PEAT_RENDER_TEXT, text.data(), text.size(), &len) == PEAT_STATUS_OK)
          line += "\n" + std::string(text.data());
        line += "top/set/xor by bit:";
        for (int b = 0; b < width(c.dt); ++b)
          if (sig.xor_top_bit_hist[b] || sig.xor_bit_hist[b])
            line += " " + std::to_string(b) + ":" + std::to_string(sig.xor_top_bit_hist[b]) + "/" +
                    std::to_string(sig.xor_top_bit_set_hist[b]) + "/" + std::to_string(sig.xor_bit_hist[b]);
        line += "\nulp:";
        for (int b = 0; b < PEAT_SIGNATURE_ULP_BUCKETS; ++b)
          if (sig.ulp_hist[b]) line += " " + std::to_string(b) + ":" + std::to_string(sig.ulp_hist[b]);
      } else if (st != PEAT_STATUS_OK) {
        line += std::string(" (") + peat_last_error_message() + ")";
      }
      result.misses.push_back(line);
    }
  }
};

// Distance of two storage words on the ordered line of values (sign-magnitude),
// saturated at UINT64_MAX.
uint64_t ulp_distance(uint64_t a, uint64_t b, int w) {
  const uint64_t sign = uint64_t{1} << (w - 1);
  const uint64_t ma = a & (sign - 1), mb = b & (sign - 1);
  if ((a & sign) == (b & sign)) return ma > mb ? ma - mb : mb - ma;
  return ma > UINT64_MAX - mb ? UINT64_MAX : ma + mb;
}

// The value of a storage word of dtype t.
double decode(DT t, uint64_t bits) {
  switch (t) {
    case DT::F64: { double v; std::memcpy(&v, &bits, 8); return v; }
    case DT::F32: { const uint32_t b = static_cast<uint32_t>(bits); float v; std::memcpy(&v, &b, 4); return v; }
    case DT::F16: { const uint16_t b = static_cast<uint16_t>(bits); _Float16 v; std::memcpy(&v, &b, 2); return static_cast<double>(v); }
    case DT::BF16: { const uint32_t b = static_cast<uint32_t>(bits & 0xFFFF) << 16; float v; std::memcpy(&v, &b, 4); return v; }
  }
  return 0;
}

// Applies `spec` to a copy of the golden tensor; fills label and flags from the truth.
bool inject(Case& c, peat_inject_spec_t& spec, uint64_t seed) {
  c.candidate = c.golden;
  DLTensor t = c.candidate.view();
  DLTensor src = c.golden.view();
  peat_inject_truth_t truth;
  peat_inject_truth_init(&truth);
  if (peat_inject_apply(&spec, &t, &src, seed, 7, 0, &truth) != PEAT_STATUS_OK)
    throw std::runtime_error(c.what + ": peat_inject_apply: " + peat_last_error_message());
  c.label = truth.model;
  if (truth.changed == 0) c.label = PEAT_ERROR_MODEL_EXACT;
  if (truth.model == PEAT_ERROR_MODEL_STUCK_AT && truth.changed == 1) c.label = PEAT_ERROR_MODEL_BITFLIP_SINGLE;
  const int p = mant(c.dt), w = width(c.dt);
  if ((spec.kind == PEAT_INJECT_BITFLIP || (spec.kind == PEAT_INJECT_STUCK_AT && truth.changed == 1)) &&
      truth.changed > 0 && truth.changed == truth.recorded) {
    // Flips that moved every changed element by at most 3 ULP are rounding-sized.
    bool small = true;
    for (int64_t i = 0; i < truth.recorded; ++i) small &= ulp_distance(truth.changes[i].old_bits, truth.changes[i].new_bits, w) <= 3;
    if (small) c.label = PEAT_ERROR_MODEL_ROUNDING;
    // On a reduction's output, changes within the deterministic bound 2 gamma_K + 2 u_s
    // (relative) are rounding-sized (Higham: either output may be that far from the exact sum).
    if (c.K > 0) {
      const double u = c.dt == DT::F64 ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
      const double Ku = static_cast<double>(c.K) * u;
      const double bound = 2 * Ku / (1 - Ku) + 2 * std::ldexp(1.0, -(p + 1));
      bool within = bound < 0.125;
      for (int64_t i = 0; i < truth.recorded && within; ++i) {
        const double o = decode(c.dt, truth.changes[i].old_bits), v = decode(c.dt, truth.changes[i].new_bits);
        within = o != 0 && std::isfinite(v) && v != 0 && std::fabs(v - o) / std::fabs(o) <= bound;
      }
      if (within) c.label = PEAT_ERROR_MODEL_ROUNDING;
    }
  }
  // A stuck mantissa bit 0 or 1 moves values by <= 3 ULP in one direction: rounding-sized unless
  // a fair coin would rarely give that many one-way changes (>= 11 of them, p <= 1e-3).
  if (spec.kind == PEAT_INJECT_STUCK_AT && truth.changed >= 2 && truth.changed < 11 && spec.bit < 2 &&
      truth.changed == truth.recorded) {
    bool small = true;
    for (int64_t i = 0; i < truth.recorded; ++i) small &= ulp_distance(truth.changes[i].old_bits, truth.changes[i].new_bits, w) <= 3;
    if (small) c.label = PEAT_ERROR_MODEL_ROUNDING;
  }
  if (spec.kind == PEAT_INJECT_REGION && truth.changed < 4) return false;  // too small to be a region
  if (spec.kind == PEAT_INJECT_BITFLIP || spec.kind == PEAT_INJECT_STUCK_AT)
    for (int b = p; b < w; ++b)
      if (truth.bit_flips[b] > 0) c.exp_sign_flip = true;
  return truth.changed > 0 || c.label == PEAT_ERROR_MODEL_EXACT;
}

std::vector<double> random_values(std::mt19937_64& rng, int64_t n, DT dt) {
  std::normal_distribution<double> nd(0, 1);
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) x = store(nd(rng), dt);
  return v;
}

void shape_of(int64_t n, int64_t& rows, int64_t& cols) {
  cols = 1;
  for (int64_t c = static_cast<int64_t>(std::sqrt(static_cast<double>(n))); c >= 1; --c)
    if (n % c == 0) { cols = n / c; break; }
  rows = n / cols;
}

// The injector-model cases on one golden tensor.
void model_cases(Scorer& S, const std::vector<double>& values, DT dt, int64_t rows, int64_t cols,
                 peat_op_kind_t op, int64_t K, const std::string& origin, std::mt19937_64& rng,
                 const std::string& family = "injected") {
  const int64_t n = rows * cols;
  const int p = mant(dt), w = width(dt);
  auto base = [&](const char* what) {
    Case c;
    c.what = origin + " " + what;
    c.dt = dt;
    c.golden = make_tensor(values, dt, rows, cols);
    c.op = op;
    c.K = K;
    c.family = family;
    return c;
  };
  auto U = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  auto seed = [&] { return static_cast<uint64_t>(rng()); };
  peat_inject_spec_t s;

  {  // EXACT: the golden kernel again
    Case c = base("exact copy");
    c.candidate = c.golden;
    c.label = PEAT_ERROR_MODEL_EXACT;
    S.score(c);
  }
  {  // BITFLIP_SINGLE
    Case c = base("bitflip single");
    peat_inject_spec_init(&s, PEAT_INJECT_BITFLIP);
    s.bit = static_cast<int32_t>(U(2, w - 1));
    c.what += " bit " + std::to_string(s.bit);
    if (inject(c, s, seed())) S.score(c);
  }
  {  // BITFLIP_MULTI
    Case c = base("bitflip multi");
    peat_inject_spec_init(&s, PEAT_INJECT_BITFLIP);
    const int variant = n >= 2 ? static_cast<int>(U(0, 2)) : 1;
    if (variant == 0) {
      s.count = U(2, std::min<int64_t>(16, n));
      s.field = U(0, 1) ? PEAT_BIT_FIELD_ANY : PEAT_BIT_FIELD_EXPONENT;
      c.what += " elements " + std::to_string(s.count);
    } else if (variant == 1) {
      s.bits = static_cast<int32_t>(U(2, 3));
      s.adjacent = static_cast<int32_t>(U(0, 1));
      c.what += " bits " + std::to_string(s.bits);
    } else {
      s.count = U(2, std::min<int64_t>(8, n));
      s.bits = 2;
      c.what += " elements x 2 bits";
    }
    if (inject(c, s, seed())) S.score(c);
  }
  {  // STUCK_AT
    Case c = base("stuck-at");
    peat_inject_spec_init(&s, PEAT_INJECT_STUCK_AT);
    s.bit = static_cast<int32_t>(U(0, w - 1));
    s.stuck_value = static_cast<int32_t>(U(0, 1));
    if (n >= 256 && U(0, 1)) {
      s.scope = PEAT_STUCK_LANE;
      s.lane_period = U(0, 1) ? 32 : 64;
      s.lane = static_cast<int32_t>(U(0, s.lane_period - 1));
    }
    c.what += " bit " + std::to_string(s.bit) + " value " + std::to_string(s.stuck_value) +
              (s.scope == PEAT_STUCK_LANE ? " lane" : " all");
    if (inject(c, s, seed())) S.score(c);
  }
  if (rows >= 4 && cols >= 4) {  // REGION
    Case c = base("region");
    peat_inject_spec_init(&s, PEAT_INJECT_REGION);
    int64_t tile = (std::min(rows, cols) >= 32 && U(0, 1)) ? 16 : 4;
    c.tile = tile;
    s.tile_rows = s.tile_cols = tile;
    const int shape = static_cast<int>(U(0, 4));
    s.region = shape;
    if (shape == PEAT_REGION_REMAINDER) tile = c.tile = s.tile_rows = s.tile_cols = 4;
    if (shape == PEAT_REGION_ROWS) { s.extent = U(1, std::max<int64_t>(1, rows / 4)); s.first = U(0, rows - s.extent); }
    if (shape == PEAT_REGION_COLUMNS) { s.extent = U(1, std::max<int64_t>(1, cols / 4)); s.first = U(0, cols - s.extent); }
    const int64_t grid = ((rows + tile - 1) / tile) * ((cols + tile - 1) / tile);
    if (shape == PEAT_REGION_TILES) {
      if (grid < 2) s.region = PEAT_REGION_ROWS, s.extent = 1, s.first = 0;
      else { s.extent = U(1, std::max<int64_t>(1, grid / 4)); s.first = U(0, grid - s.extent); }
    }
    if (shape == PEAT_REGION_LAST_TILE && grid < 2) s.region = PEAT_REGION_ROWS, s.extent = 1, s.first = 0;
    if (shape == PEAT_REGION_REMAINDER && (rows % tile == 0 && cols % tile == 0)) s.region = PEAT_REGION_COLUMNS, s.extent = 1, s.first = 0;
    if (shape == PEAT_REGION_REMAINDER && (rows < tile || cols < tile)) s.region = PEAT_REGION_ROWS, s.extent = 1, s.first = 0;
    const int fill = static_cast<int>(U(0, 2));
    s.fill = fill;
    Tensor stale;
    if (fill == PEAT_FILL_STALE) {
      std::vector<double> other = random_values(rng, n, dt);
      stale = make_tensor(other, dt, rows, cols);
    }
    DLTensor st = stale.view();
    if (fill == PEAT_FILL_STALE) s.stale = &st;
    c.what += " shape " + std::to_string(s.region) + " fill " + std::to_string(fill);
    if (inject(c, s, seed())) S.score(c);
  }
  {  // DROPPED_WRITES
    Case c = base("dropped");
    peat_inject_spec_init(&s, PEAT_INJECT_VALUE);
    s.value_kind = PEAT_VALUE_ZERO;
    if (n >= 1000 && U(0, 1)) s.probability = 0.001 * static_cast<double>(U(1, 100)), s.count = 1;
    else s.count = U(1, std::min<int64_t>(64, std::max<int64_t>(1, n / 2)));
    if (inject(c, s, seed())) S.score(c);
  }
  if (n >= 8) {  // SCALING
    static const double alphas[] = {2, 0.5, -1, 0.25, 3, 1.5, 0.75, 10, 0.1, -2, 1.25};
    Case c = base("scaling");
    peat_inject_spec_init(&s, PEAT_INJECT_SCALE);
    s.alpha = alphas[U(0, 10)];
    c.what += " alpha " + std::to_string(s.alpha);
    if (inject(c, s, seed())) S.score(c);
  }
  {  // NONFINITE
    Case c = base("nonfinite");
    peat_inject_spec_init(&s, PEAT_INJECT_VALUE);
    s.value_kind = static_cast<int32_t>(PEAT_VALUE_NAN + U(0, 2));
    s.count = U(1, std::min<int64_t>(8, n));
    if (inject(c, s, seed())) S.score(c);
  }
  if (n >= 4) {  // GARBAGE
    Case c = base("garbage");
    const int variant = static_cast<int>(U(0, 2));
    if (variant == 0 || rows < 2 || cols < 2 || rows != cols) {
      if (variant == 2 && n >= 2) {
        peat_inject_spec_init(&s, PEAT_INJECT_SHIFT);
        s.offset = U(1, std::max<int64_t>(1, n / 4));
        s.fill = PEAT_FILL_KEEP;
        c.what += " shift";
      } else {
        peat_inject_spec_init(&s, PEAT_INJECT_VALUE);
        s.value_kind = PEAT_VALUE_RANDOM;
        s.range = 4;
        s.count = U(4, std::min<int64_t>(256, n));
        c.what += " random values";
      }
    } else {
      peat_inject_spec_init(&s, PEAT_INJECT_TRANSPOSE);
      s.rows = rows;
      s.cols = cols;
      c.what += " transpose";
    }
    if (inject(c, s, seed())) S.score(c);
  }
  if (n >= 64) {  // ROUNDING (ULP noise)
    Case c = base("ulp noise");
    peat_inject_spec_init(&s, PEAT_INJECT_ULP_NOISE);
    s.probability = 0.1 * static_cast<double>(U(1, 5));
    s.distribution = static_cast<int32_t>(U(0, 2));
    s.ulp = s.distribution == PEAT_ULP_NORMAL ? 1 : static_cast<int32_t>(U(1, 2));
    if (inject(c, s, seed())) S.score(c);
  }
  if (n >= 64) {  // REDUCED_PRECISION
    std::vector<peat_float_format_t> formats;
    if (p > 10) formats = {PEAT_FORMAT_BF16, PEAT_FORMAT_FP16, PEAT_FORMAT_TF32, PEAT_FORMAT_FP8_E4M3, PEAT_FORMAT_FP8_E5M2};
    else if (p == 10) formats = {PEAT_FORMAT_BF16, PEAT_FORMAT_FP8_E4M3, PEAT_FORMAT_FP8_E5M2};
    else formats = {PEAT_FORMAT_FP8_E4M3, PEAT_FORMAT_FP8_E5M2};
    Case c = base("precision");
    peat_inject_spec_init(&s, PEAT_INJECT_PRECISION);
    s.format = formats[static_cast<size_t>(U(0, static_cast<int64_t>(formats.size()) - 1))];
    s.saturate = 1;
    s.rounding = U(0, 3) == 0 ? PEAT_ROUND_TRUNCATE : PEAT_ROUND_NEAREST_EVEN;
    c.what += std::string(" ") + peat_float_format_name(s.format);
    if (inject(c, s, seed())) S.score(c);
  }
}

// Legitimate candidates and non-determinism on a GEMM / convolution.
void kernel_cases(Scorer& S, const KernelCase& kc, DT dt, peat_op_kind_t op, const std::string& origin,
                  std::mt19937_64& rng) {
  const std::vector<double> golden = run_kernel(kc, dt, Sum::Sequential, 0);
  auto base = [&](const std::string& what) {
    Case c;
    c.what = origin + " " + what;
    c.dt = dt;
    c.golden = make_tensor(golden, dt, kc.rows, kc.cols);
    c.op = op;
    c.K = kc.K;
    c.tile = 8;
    c.family = "kernel";
    return c;
  };
  auto legit = [&](const std::string& what, const std::vector<double>& out, int label, int format = -1,
                   bool ten_either = false) {
    Case c = base(what);
    c.candidate = make_tensor(out, dt, kc.rows, kc.cols);
    c.label = c.candidate.bytes == c.golden.bytes ? PEAT_ERROR_MODEL_EXACT : label;
    if (c.label == PEAT_ERROR_MODEL_REDUCED_PRECISION) c.expect_format = format, c.ten_either = ten_either;
    S.score(c);
    return c;
  };
  auto U = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  const int blocks[] = {2, 4, 8, 16, 32};
  const int block = blocks[U(0, 4)];
  legit("reverse order", run_kernel(kc, dt, Sum::Reverse, 0), PEAT_ERROR_MODEL_ROUNDING);
  legit("blocked " + std::to_string(block), run_kernel(kc, dt, Sum::Blocked, block), PEAT_ERROR_MODEL_ROUNDING);
  legit("pairwise", run_kernel(kc, dt, Sum::Pairwise, 0), PEAT_ERROR_MODEL_ROUNDING);
  legit("fma", run_kernel(kc, dt, Sum::Fma, 0), PEAT_ERROR_MODEL_ROUNDING);
  if (dt == DT::F32 || dt == DT::F64) {
    const peat_float_format_t f[] = {PEAT_FORMAT_BF16, PEAT_FORMAT_FP16, PEAT_FORMAT_TF32};
    const peat_float_format_t pick = f[U(0, 2)];
    // Inputs rounded, the output at full precision: named by its effective bits
    // (10: tf32, which fp16 inputs read as too). An fp16 accumulation stores
    // fp16 values: named by that grid, whatever its effective bits.
    legit(std::string("inputs in ") + peat_float_format_name(pick), run_kernel(kc, dt, Sum::Sequential, 0, pick),
          PEAT_ERROR_MODEL_REDUCED_PRECISION, pick == PEAT_FORMAT_BF16 ? PEAT_FORMAT_BF16 : PEAT_FORMAT_TF32,
          pick == PEAT_FORMAT_FP16);
    legit("fp16 accumulation", run_kernel(kc, dt, Sum::Fp16Acc, 0), PEAT_ERROR_MODEL_REDUCED_PRECISION,
          PEAT_FORMAT_FP16);
  }
  // Non-determinism: two runs with different (random) split points, as atomics would.
  if (kc.K >= 8) {
    const std::vector<double> r1 = run_kernel(kc, dt, Sum::Blocked, blocks[U(0, 4)]);
    const std::vector<double> r2 = run_kernel(kc, dt, Sum::Pairwise, 0);
    Case c = base("two runs differ");
    c.candidate = make_tensor(r1, dt, kc.rows, kc.cols);
    c.rerun = make_tensor(r2, dt, kc.rows, kc.cols);
    c.has_rerun = true;
    if (c.candidate.bytes != c.rerun.bytes) {
      c.label = PEAT_ERROR_MODEL_NONDETERMINISM;
      S.score(c);
    }
  }
  // A bit flip on top of rounding noise: the flip first, then ROUNDING.
  {
    Case c = base("flip on reordered output");
    const std::vector<double> noisy = run_kernel(kc, dt, Sum::Blocked, block);
    Tensor noisy_t = make_tensor(noisy, dt, kc.rows, kc.cols);
    c.candidate = noisy_t;
    DLTensor t = c.candidate.view(), src = noisy_t.view();
    peat_inject_spec_t s;
    peat_inject_spec_init(&s, PEAT_INJECT_BITFLIP);
    const int p = mant(dt), w = width(dt);
    s.bit = static_cast<int32_t>(U(p - 1, w - 1));
    peat_inject_truth_t truth;
    peat_inject_truth_init(&truth);
    if (peat_inject_apply(&s, &t, &src, rng(), 3, 0, &truth) != PEAT_STATUS_OK)
      throw std::runtime_error(std::string("peat_inject_apply: ") + peat_last_error_message());
    c.label = PEAT_ERROR_MODEL_BITFLIP_SINGLE;
    c.exp_sign_flip = s.bit >= p;
    c.noise_flip = noisy_t.bytes != c.golden.bytes;
    c.what += " bit " + std::to_string(s.bit);
    S.score(c);
  }
  // The injector's models on the real kernel output.
  model_cases(S, golden, dt, kc.rows, kc.cols, op, kc.K, origin, rng, "kernel");
}


// ---- families beyond the injector's models (docs/error-models.md, "The labeled corpus") ----

uint64_t word(const Tensor& t, int64_t i) {
  const size_t w = static_cast<size_t>(width(t.dt) / 8);
  uint64_t v = 0;
  std::memcpy(&v, &t.bytes[static_cast<size_t>(i) * w], w);
  return v;
}
void set_word(Tensor& t, int64_t i, uint64_t v) {
  const size_t w = static_cast<size_t>(width(t.dt) / 8);
  std::memcpy(&t.bytes[static_cast<size_t>(i) * w], &v, w);
}

KernelCase make_gemm_sized(std::mt19937_64& rng, DT dt, int64_t rows, int64_t cols, int64_t K) {
  KernelCase c;
  c.rows = rows;
  c.cols = cols;
  c.K = K;
  std::normal_distribution<double> nd(0, 1);
  c.A.resize(static_cast<size_t>(rows * K));
  c.B.resize(static_cast<size_t>(K * cols));
  for (auto& x : c.A) x = store(nd(rng), dt);
  for (auto& x : c.B) x = store(nd(rng), dt);
  return c;
}

Case kernel_case(const std::string& family, const std::string& what, DT dt, const KernelCase& kc,
                 const std::vector<double>& golden, const Tensor& candidate, int label) {
  Case c;
  c.family = family;
  c.what = what;
  c.dt = dt;
  c.golden = make_tensor(golden, dt, kc.rows, kc.cols);
  c.candidate = candidate;
  c.op = PEAT_OP_KIND_GEMM;
  c.K = kc.K;
  c.tile = 8;
  c.label = label;
  return c;
}

// An anomaly over each floor: STUCK_AT, REGION, BITFLIP, DROPPED_WRITES, NONFINITE on a
// GEMM whose candidate also sums in another order (ROUNDING) or rounds its inputs
// (REDUCED_PRECISION).
void composite_cases(Scorer& S, DT dt, std::mt19937_64& rng, const std::string& origin) {
  auto U = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  const int p = mant(dt), w = width(dt);
  const KernelCase kc = make_gemm_sized(rng, dt, U(32, 64), U(32, 64), U(16, 256));
  const std::vector<double> golden = run_kernel(kc, dt, Sum::Sequential, 0);
  const Tensor gold = make_tensor(golden, dt, kc.rows, kc.cols);
  const int64_t n = kc.rows * kc.cols;
  struct FloorKind { const char* name; std::vector<double> out; bool reduced; };
  std::vector<FloorKind> floors = {{"reordered", run_kernel(kc, dt, Sum::Reverse, 0), false}};
  if (dt == DT::F32)
    floors.push_back({"bf16 inputs", run_kernel(kc, dt, Sum::Sequential, 0, PEAT_FORMAT_BF16), true});
  for (const FloorKind& fk : floors) {
    const Tensor floor_t = make_tensor(fk.out, dt, kc.rows, kc.cols);
    if (floor_t.bytes == gold.bytes) continue;
    const std::string where = origin + " over " + fk.name;
    {  // STUCK_AT in one lane of a period, well above the floor's noise
      Tensor t = floor_t;
      const int b = static_cast<int>(fk.reduced ? U(p + 2, w - 3) : U(p - 1, w - 3));
      const int v = static_cast<int>(U(0, 1));
      const int64_t period = fk.reduced ? 8 * (int64_t{1} << U(0, 2)) : 8 * (int64_t{1} << U(0, 3));
      const int64_t lane = U(0, period - 1);
      int64_t changed = 0;
      for (int64_t i = lane; i < n; i += period) {
        const uint64_t x = word(t, i), y = v ? (x | (uint64_t{1} << b)) : (x & ~(uint64_t{1} << b));
        changed += x != y;
        set_word(t, i, y);
      }
      if (changed >= 12) {  // a direction needs >= 11 one-way pairs to beat a fair coin at 1e-3
        Case c = kernel_case("composite", where + " stuck bit " + std::to_string(b) + " value " + std::to_string(v) +
                                              " period " + std::to_string(period), dt, kc, golden, t, PEAT_ERROR_MODEL_STUCK_AT);
        S.score(c);
      } else if (changed >= 2 && b >= p + 2) {
        // Few changed (most lane values had the bit already, as a stuck exponent bit on
        // values of one binade leaves): each moved by >= 2^(p+2) ULP, far above the floor
        Case c = kernel_case("composite", where + " stuck bit " + std::to_string(b) + " value " + std::to_string(v) +
                                              " on " + std::to_string(changed) + " values", dt, kc, golden, t,
                             PEAT_ERROR_MODEL_STUCK_AT);
        S.score(c);
      }
    }
    if (!fk.reduced) {  // BITFLIP_MULTI: 3 to 6 outputs, each with a different exponent bit flipped (none
                        // overflowing), over a rounding floor: 2^p ULP or more above its noise. (Over a
                        // reduced-precision floor a low exponent flip lies within 2^6 of the noise's
                        // tail, where a gap in the distances no longer separates them.)
      Tensor t = floor_t;
      std::vector<int> bits;
      for (int b = p; b < w - 1; ++b) bits.push_back(b);
      std::shuffle(bits.begin(), bits.end(), rng);
      const int64_t k = std::min<int64_t>(U(3, 6), static_cast<int64_t>(bits.size()));
      const uint64_t exp_mask = ((uint64_t{1} << (w - 1 - p)) - 1) << p;
      for (int64_t j = 0; j < k; ++j) {
        for (int tries = 0; tries < 64; ++tries) {
          const int64_t e = U(0, n - 1);
          const uint64_t y = word(t, e) ^ (uint64_t{1} << bits[static_cast<size_t>(j)]);
          if ((y & exp_mask) == exp_mask || word(t, e) != word(floor_t, e)) continue;  // Inf/NaN, or flipped already
          set_word(t, e, y);
          break;
        }
      }
      Case c = kernel_case("composite", where + " " + std::to_string(k) + " flips in different exponent bits", dt, kc,
                           golden, t, PEAT_ERROR_MODEL_BITFLIP_MULTI);
      S.score(c);
    }
    if (!fk.reduced) {  // REGION: junk, zeros or stale values in a few tiles; the map counts pairs beyond A
      Tensor t = floor_t;
      const int64_t tile = U(0, 1) ? 8 : 16;
      const int64_t gr = (kc.rows + tile - 1) / tile, gc = (kc.cols + tile - 1) / tile;
      const int fill = static_cast<int>(U(0, 2));
      std::normal_distribution<double> nd(0, 4 * std::sqrt(static_cast<double>(kc.K)));
      const int64_t tiles = U(1, 3);
      for (int64_t k = 0; k < tiles; ++k) {
        const int64_t ti = U(0, gr - 1), tj = U(0, gc - 1);
        for (int64_t i = ti * tile; i < std::min(kc.rows, (ti + 1) * tile); ++i)
          for (int64_t j = tj * tile; j < std::min(kc.cols, (tj + 1) * tile); ++j) {
            const int64_t e = i * kc.cols + j;
            const double val = fill == 0 ? 0.0 : fill == 1 ? store(nd(rng), dt) : golden[static_cast<size_t>((e * 7 + 3) % n)];
            Tensor one = make_tensor({val}, dt, 1, 1);
            set_word(t, e, word(one, 0));
          }
      }
      Case c = kernel_case("composite", where + " region fill " + std::to_string(fill), dt, kc, golden, t,
                           PEAT_ERROR_MODEL_REGION);
      c.tile = tile;
      // The map counts the pairs beyond the rounding allowance A of the op (docs/error-models.md).
      double g2 = 0, gmax = 0;
      for (double x : golden) { g2 += x * x; gmax = std::max(gmax, std::fabs(x)); }
      const double u = dt == DT::F64 ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
      c.map_kind = PEAT_MISMATCH_TOLERANCE;
      c.rtol = 0;
      c.atol = 4 * std::sqrt(2.0 * static_cast<double>(kc.K)) * u * std::sqrt(g2 / static_cast<double>(n)) +
               2 * std::ldexp(1.0, -(p + 1)) * gmax;
      S.score(c);
    }
    if (!fk.reduced) {  // REGION: a tiled kernel whose trailing partial tiles (rows and columns) are never
                        // written, its tile not a multiple of the map's (32): an L of whole rows and columns
      const int64_t tile = 8 * U(2, 5) + 4;  // 20, 28, 36, 44
      const int64_t br = kc.rows % tile, bc = kc.cols % tile;
      const int64_t area = br * kc.cols + bc * kc.rows - br * bc;
      if (br > 0 && bc > 0 && 2 * area <= n) {
        Tensor t = floor_t;
        const Tensor zero = make_tensor({0.0}, dt, 1, 1);
        for (int64_t i = 0; i < kc.rows; ++i)
          for (int64_t j = 0; j < kc.cols; ++j)
            if (i >= kc.rows - br || j >= kc.cols - bc) set_word(t, i * kc.cols + j, word(zero, 0));
        Case c = kernel_case("composite", where + " trailing tiles of " + std::to_string(tile) + " dropped", dt, kc,
                             golden, t, PEAT_ERROR_MODEL_REGION);
        double g2 = 0, gmax = 0;
        for (double x : golden) { g2 += x * x; gmax = std::max(gmax, std::fabs(x)); }
        const double u = dt == DT::F64 ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
        c.map_kind = PEAT_MISMATCH_TOLERANCE;  // as playback maps: the pairs beyond the rounding allowance
        c.rtol = 0;
        c.atol = 4 * std::sqrt(2.0 * static_cast<double>(kc.K)) * u * std::sqrt(g2 / static_cast<double>(n)) +
                 2 * std::ldexp(1.0, -(p + 1)) * gmax;
        S.score(c);
      }
    }
    {  // BITFLIP_SINGLE: one sign or exponent flip
      Tensor t = floor_t;
      const int64_t e = U(0, n - 1);
      const int b = static_cast<int>(U(p, w - 1));
      set_word(t, e, word(t, e) ^ (uint64_t{1} << b));
      Case c = kernel_case("composite", where + " flip bit " + std::to_string(b), dt, kc, golden, t,
                           PEAT_ERROR_MODEL_BITFLIP_SINGLE);
      S.score(c);
    }
    if (!fk.reduced) {  // DROPPED_WRITES: a few outputs left at 0
      Tensor t = floor_t;
      const int64_t k = U(1, 8);
      for (int64_t j = 0; j < k; ++j) set_word(t, U(0, n - 1), 0);
      Case c = kernel_case("composite", where + " " + std::to_string(k) + " zeros", dt, kc, golden, t,
                           PEAT_ERROR_MODEL_DROPPED_WRITES);
      S.score(c);
    }
    {  // NONFINITE: NaN or Inf written
      Tensor t = floor_t;
      const int64_t k = U(1, 4);
      const double bad = U(0, 1) ? NAN : INFINITY;
      Tensor one = make_tensor({bad}, dt, 1, 1);
      for (int64_t j = 0; j < k; ++j) set_word(t, U(0, n - 1), word(one, 0));
      Case c = kernel_case("composite", where + " nonfinite", dt, kc, golden, t, PEAT_ERROR_MODEL_NONFINITE);
      S.score(c);
    }
  }
}

// One flip per call, each call in another element: every call is BITFLIP_SINGLE alone.
void merged_call_cases(Scorer& S, DT dt, std::mt19937_64& rng, const std::string& origin) {
  auto U = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  const int p = mant(dt), w = width(dt);
  const int64_t rows = U(4, 32), cols = U(4, 32), K = U(8, 128);
  for (int call = 0; call < 6; ++call) {
    const KernelCase kc = make_gemm_sized(rng, dt, rows, cols, K);
    const std::vector<double> golden = run_kernel(kc, dt, Sum::Sequential, 0);
    Tensor t = make_tensor(call % 2 ? run_kernel(kc, dt, Sum::Reverse, 0) : golden, dt, rows, cols);
    const int64_t e = U(0, rows * cols - 1);
    const int b = static_cast<int>(U(p, w - 1));
    set_word(t, e, word(t, e) ^ (uint64_t{1} << b));
    Case c = kernel_case("merged_calls", origin + " call " + std::to_string(call) + " flip bit " + std::to_string(b),
                         dt, kc, golden, t, PEAT_ERROR_MODEL_BITFLIP_SINGLE);
    S.score(c);
  }
}

// Real non-GEMM ops: layer norm and softmax over rows of D (REDUCTION, K = D), gelu
// (ELEMENTWISE); the golden in f32 arithmetic, candidates in float64 (ROUNDING) or on
// bf16 inputs with a bf16 output (REDUCED_PRECISION, format bf16). In f32: a layer
// norm with another epsilon (1e-3 .. 1e-1 for 1e-5: every row scaled down by its
// own factor, SCALING) and outputs truncated to bf16 (one-sided as well, but on
// bf16's grid: REDUCED_PRECISION bf16).
void non_gemm_cases(Scorer& S, DT dt, std::mt19937_64& rng, const std::string& origin) {
  auto U = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  const int64_t rows = U(2, 32), D = U(16, 512);
  std::normal_distribution<double> nd(std::uniform_real_distribution<double>(-1, 1)(rng),
                                      std::uniform_real_distribution<double>(0.3, 3)(rng));
  std::vector<double> x(static_cast<size_t>(rows * D));
  for (auto& v : x) v = store(nd(rng), dt);
  auto bf = [](double v) { return round_to(v, PEAT_FORMAT_BF16); };
  auto f = [](double v) { return static_cast<double>(static_cast<float>(v)); };
  auto truncate_bf16 = [](double v) {  // round toward zero to bf16
    float w = static_cast<float>(v);
    uint32_t u;
    std::memcpy(&u, &w, 4);
    u &= 0xFFFF0000u;
    std::memcpy(&w, &u, 4);
    return static_cast<double>(w);
  };
  const double other_eps = std::pow(10.0, static_cast<double>(U(-3, -1)));
  enum Op { LayerNorm, Softmax, Gelu };
  for (Op op : {LayerNorm, Softmax, Gelu}) {
    std::vector<double> g(x.size()), c64(x.size()), cbf(x.size()), ceps(x.size());
    for (int64_t r = 0; r < rows; ++r) {
      const double* in = &x[static_cast<size_t>(r * D)];
      // f32 arithmetic (every step rounded), float64, and bf16 inputs in f32 arithmetic.
      auto row = [&](bool wide, bool bf16_in, double* out, double eps = 1e-5) {
        auto R = [&](double v) { return wide ? v : f(v); };
        auto X = [&](int64_t i) { return bf16_in ? bf(in[i]) : in[i]; };
        if (op == Gelu) {
          for (int64_t i = 0; i < D; ++i) out[i] = R(0.5 * X(i) * R(1.0 + R(std::erf(R(X(i) * 0.7071067811865476)))));
        } else if (op == LayerNorm) {
          double m = 0, v = 0;
          for (int64_t i = 0; i < D; ++i) m = R(m + X(i));
          m = R(m / static_cast<double>(D));
          for (int64_t i = 0; i < D; ++i) v = R(v + R(R(X(i) - m) * R(X(i) - m)));
          const double rs = R(1.0 / R(std::sqrt(R(R(v / static_cast<double>(D)) + eps))));
          for (int64_t i = 0; i < D; ++i) out[i] = R(R(X(i) - m) * rs);
        } else {
          double mx = -INFINITY, sum = 0;
          for (int64_t i = 0; i < D; ++i) mx = std::max(mx, X(i));
          for (int64_t i = 0; i < D; ++i) sum = R(sum + R(std::exp(R(X(i) - mx))));
          for (int64_t i = 0; i < D; ++i) out[i] = R(R(std::exp(R(X(i) - mx))) / sum);
        }
        if (bf16_in)
          for (int64_t i = 0; i < D; ++i) out[i] = bf(out[i]);
      };
      row(false, false, &g[static_cast<size_t>(r * D)]);
      row(true, false, &c64[static_cast<size_t>(r * D)]);
      row(false, true, &cbf[static_cast<size_t>(r * D)]);
      row(false, false, &ceps[static_cast<size_t>(r * D)], other_eps);
    }
    std::vector<double> ctrunc(g);
    for (auto& v : ctrunc) v = truncate_bf16(v);
    for (auto& v : g) v = store(v, dt);
    for (auto& v : c64) v = store(v, dt);
    for (auto& v : cbf) v = store(v, dt);
    const char* name = op == Gelu ? "gelu" : op == LayerNorm ? "layer norm" : "softmax";
    const peat_op_kind_t kind = op == Gelu ? PEAT_OP_KIND_ELEMENTWISE : PEAT_OP_KIND_REDUCTION;
    auto add = [&](const std::vector<double>& cand, const char* what, int label, int format) {
      Case c;
      c.family = "non_gemm";
      c.what = origin + " " + name + " " + what;
      c.dt = dt;
      c.golden = make_tensor(g, dt, rows, D);
      c.candidate = make_tensor(cand, dt, rows, D);
      c.op = kind;
      c.K = op == Gelu ? 0 : D;
      c.label = c.candidate.bytes == c.golden.bytes ? PEAT_ERROR_MODEL_EXACT : label;
      c.expect_format = c.label == PEAT_ERROR_MODEL_REDUCED_PRECISION ? format : -1;
      S.score(c);
    };
    add(c64, "float64 recompute", PEAT_ERROR_MODEL_ROUNDING, -1);
    if (dt == DT::F32) add(cbf, "bf16", PEAT_ERROR_MODEL_REDUCED_PRECISION, PEAT_FORMAT_BF16);
    if (dt == DT::F32) add(ctrunc, "truncated to bf16", PEAT_ERROR_MODEL_REDUCED_PRECISION, PEAT_FORMAT_BF16);
    if (dt == DT::F32 && op == LayerNorm)
      add(ceps, ("epsilon 1e" + std::to_string(static_cast<int>(std::lround(std::log10(other_eps))))).c_str(), PEAT_ERROR_MODEL_SCALING, -1);
  }
}

// Few-output reductions: 1-4 long sums of positive terms (no cancellation, so |g|
// stands for the sum of |terms|), the golden summed in order, candidates pairwise or
// in float64 (ROUNDING); an exponent flip of one output (BITFLIP_SINGLE).
void few_output_cases(Scorer& S, std::mt19937_64& rng, const std::string& origin) {
  auto U = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  const int64_t outs = U(1, 4), K = int64_t{1} << U(8, 16);
  std::vector<double> g(static_cast<size_t>(outs)), pw(g.size()), ex(g.size());
  std::uniform_real_distribution<double> ud(0.05, 2);
  for (int64_t o = 0; o < outs; ++o) {
    std::vector<double> t(static_cast<size_t>(K));
    for (auto& v : t) v = f32(ud(rng) * ud(rng));
    float s = 0;
    double e = 0;
    for (double v : t) { s += static_cast<float>(v); e += v; }
    while (t.size() > 1) {
      std::vector<double> h((t.size() + 1) / 2);
      for (size_t i = 0; i < h.size(); ++i) h[i] = 2 * i + 1 < t.size() ? f32(t[2 * i] + t[2 * i + 1]) : t[2 * i];
      t.swap(h);
    }
    g[static_cast<size_t>(o)] = s;
    pw[static_cast<size_t>(o)] = t[0];
    ex[static_cast<size_t>(o)] = f32(e);
  }
  for (const auto& [cand, what] : {std::pair{pw, "pairwise"}, std::pair{ex, "float64"}}) {
    Case c;
    c.family = "few_outputs";
    c.what = origin + " " + what + " K " + std::to_string(K);
    c.dt = DT::F32;
    c.golden = make_tensor(g, DT::F32, 1, outs);
    c.candidate = make_tensor(cand, DT::F32, 1, outs);
    c.op = PEAT_OP_KIND_REDUCTION;
    c.K = K;
    c.label = c.candidate.bytes == c.golden.bytes ? PEAT_ERROR_MODEL_EXACT : PEAT_ERROR_MODEL_ROUNDING;
    S.score(c);
    if (std::string(what) == "pairwise") {
      Case f = c;
      const int64_t e = U(0, outs - 1);
      const int b = static_cast<int>(U(23, 31));
      set_word(f.candidate, e, word(f.candidate, e) ^ (uint64_t{1} << b));
      f.what += " flip bit " + std::to_string(b);
      f.label = PEAT_ERROR_MODEL_BITFLIP_SINGLE;
      S.score(f);
    }
  }
}

// Sparse outputs: a ReLU output with 50-98 % zeros scaled by a constant (SCALING),
// with one flip (BITFLIP_SINGLE), rounded to bf16 (REDUCED_PRECISION).
void sparse_cases(Scorer& S, DT dt, std::mt19937_64& rng, const std::string& origin) {
  auto U = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  const int64_t rows = U(8, 64), cols = U(16, 128), n = rows * cols;
  std::normal_distribution<double> nd(std::uniform_real_distribution<double>(-2, 0)(rng), 1);
  std::vector<double> g(static_cast<size_t>(n));
  int64_t nonzero = 0;
  for (auto& v : g) { v = store(std::max(0.0, nd(rng)), dt); nonzero += v != 0; }
  if (nonzero < 8) return;
  // (Not -1: on a ReLU's non-negative output it sets the sign bit of every
  // non-zero value, which is STUCK_AT sign = 1.)
  static const double alphas[] = {2, 0.5, 0.25, 3, 1.5, 0.75, 10, 0.1, 1.25, -3};
  const double alpha = alphas[U(0, 9)];
  std::vector<double> sc(g.size());
  for (size_t i = 0; i < g.size(); ++i) sc[i] = store(alpha * g[i], dt);
  auto add = [&](const Tensor& cand, const std::string& what, int label) {
    Case c;
    c.family = "sparse";
    c.what = origin + " relu " + std::to_string(100 - 100 * nonzero / n) + "% zeros " + what;
    c.dt = dt;
    c.golden = make_tensor(g, dt, rows, cols);
    c.candidate = cand;
    c.op = PEAT_OP_KIND_ELEMENTWISE;
    c.label = label;
    S.score(c);
  };
  add(make_tensor(sc, dt, rows, cols), "scaled by " + std::to_string(alpha), PEAT_ERROR_MODEL_SCALING);
  Tensor f = make_tensor(g, dt, rows, cols);
  int64_t e = U(0, n - 1);
  while (g[static_cast<size_t>(e)] == 0) e = (e + 1) % n;
  const int b = static_cast<int>(U(mant(dt), width(dt) - 1));
  set_word(f, e, word(f, e) ^ (uint64_t{1} << b));
  add(f, "flip bit " + std::to_string(b), PEAT_ERROR_MODEL_BITFLIP_SINGLE);
  if (dt == DT::F32) {
    std::vector<double> r(g.size());
    for (size_t i = 0; i < g.size(); ++i) r[i] = round_to(g[i], PEAT_FORMAT_BF16);
    add(make_tensor(r, dt, rows, cols), "bf16", PEAT_ERROR_MODEL_REDUCED_PRECISION);
  }
}

// Formats: f32 values rounded to each narrow format must name it; fp16 also on values
// mostly in its subnormal range (must not read as fp8_e5m2); tf32 beyond fp16's range.
void format_cases(Scorer& S, std::mt19937_64& rng, const std::string& origin) {
  auto U = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  const int64_t rows = U(8, 64), cols = U(8, 64), n = rows * cols;
  struct F { peat_float_format_t f; double scale; };
  const F fs[] = {{PEAT_FORMAT_BF16, 1}, {PEAT_FORMAT_BF16, 1e-3}, {PEAT_FORMAT_FP16, 1}, {PEAT_FORMAT_FP16, 3e-5},
                  {PEAT_FORMAT_TF32, 1}, {PEAT_FORMAT_TF32, 1e5}, {PEAT_FORMAT_FP8_E4M3, 1}, {PEAT_FORMAT_FP8_E5M2, 1}};
  std::normal_distribution<double> nd(0, 1);
  for (const F& f : fs) {
    std::vector<double> g(static_cast<size_t>(n)), c(g.size());
    for (size_t i = 0; i < g.size(); ++i) {
      g[i] = f32(nd(rng) * f.scale);
      c[i] = round_to(g[i], f.f);
    }
    Case k;
    k.family = "formats";
    k.what = origin + " " + peat_float_format_name(f.f) + " scale " + std::to_string(f.scale);
    k.dt = DT::F32;
    k.golden = make_tensor(g, DT::F32, rows, cols);
    k.candidate = make_tensor(c, DT::F32, rows, cols);
    k.op = PEAT_OP_KIND_ELEMENTWISE;
    k.label = PEAT_ERROR_MODEL_REDUCED_PRECISION;
    k.expect_format = f.f;
    k.ten_either = f.f == PEAT_FORMAT_TF32 && f.scale == 1;  // tf32 values within fp16's range: fp16's grid
    S.score(k);
  }
}

// Non-determinism compared elementwise: two runs whose results swap between two rows
// with the same golden values (equal signatures against the golden), and two runs one
// ULP apart in one element.
void nondeterminism_cases(Scorer& S, DT dt, std::mt19937_64& rng, const std::string& origin) {
  auto U = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  KernelCase kc = make_gemm_sized(rng, dt, U(4, 32), U(4, 32), U(16, 256));
  const int64_t i = U(0, kc.rows - 1), j = (i + 1 + U(0, kc.rows - 2)) % kc.rows;
  if (i == j) return;
  for (int64_t k = 0; k < kc.K; ++k) kc.A[static_cast<size_t>(j * kc.K + k)] = kc.A[static_cast<size_t>(i * kc.K + k)];
  const std::vector<double> golden = run_kernel(kc, dt, Sum::Sequential, 0);
  std::vector<double> r1 = run_kernel(kc, dt, Sum::Blocked, 4);
  const std::vector<double> other = run_kernel(kc, dt, Sum::Pairwise, 0);
  for (int64_t c = 0; c < kc.cols; ++c) r1[static_cast<size_t>(j * kc.cols + c)] = other[static_cast<size_t>(j * kc.cols + c)];
  std::vector<double> r2 = r1;
  for (int64_t c = 0; c < kc.cols; ++c)
    std::swap(r2[static_cast<size_t>(i * kc.cols + c)], r2[static_cast<size_t>(j * kc.cols + c)]);
  Case c = kernel_case("nondeterminism", origin + " rows swapped", dt, kc, golden, make_tensor(r1, dt, kc.rows, kc.cols),
                       PEAT_ERROR_MODEL_NONDETERMINISM);
  c.rerun = make_tensor(r2, dt, kc.rows, kc.cols);
  c.has_rerun = c.rerun_elementwise = true;
  if (c.rerun.bytes != c.candidate.bytes) S.score(c);
  Case d = c;
  d.what = origin + " one element 1 ULP apart";
  d.rerun = d.candidate;
  const int64_t e = U(0, kc.rows * kc.cols - 1);
  set_word(d.rerun, e, word(d.rerun, e) ^ 1u);
  S.score(d);
}

}  // namespace

double Result::recall(int model) const {
  uint64_t total = 0;
  for (int j = 0; j < kModels; ++j) total += confusion[static_cast<size_t>(model)][static_cast<size_t>(j)];
  if (total == 0) return -1;
  return static_cast<double>(confusion[static_cast<size_t>(model)][static_cast<size_t>(model)]) / static_cast<double>(total);
}

double Result::family_accuracy(const std::string& family) const {
  const auto it = families.find(family);
  if (it == families.end() || it->second[0] == 0) return -1;
  return static_cast<double>(it->second[1]) / static_cast<double>(it->second[0]);
}

double Result::min_family_accuracy() const {
  double m = 1;
  for (const auto& [name, n] : families) m = std::min(m, family_accuracy(name));
  return m;
}

double Result::min_recall() const {
  double m = 1;
  for (int i = 0; i < kModels; ++i) {
    const double r = recall(i);
    if (r >= 0) m = std::min(m, r);
  }
  return m;
}

Result run(const Config& cfg) {
  Result result;
  Scorer S{result, cfg.verbose};
  const DT dts[] = {DT::F32, DT::F16, DT::BF16, DT::F64};
  for (DT dt : dts) {
    for (int64_t n : cfg.sizes) {
      const int seeds = n > 65536 ? cfg.big_seeds : cfg.seeds;
      for (int sd = 0; sd < seeds; ++sd) {
        std::mt19937_64 rng(cfg.base_seed ^ (static_cast<uint64_t>(n) * 0x9E3779B97F4A7C15ull) ^
                            (static_cast<uint64_t>(sd) << 20) ^ (static_cast<uint64_t>(dt) << 40));
        int64_t rows = 1, cols = 1;
        shape_of(n, rows, cols);
        const std::vector<double> values = random_values(rng, n, dt);
        model_cases(S, values, dt, rows, cols, PEAT_OP_KIND_UNKNOWN, 0,
                    "random " + std::to_string(n) + " seed " + std::to_string(sd), rng);
      }
    }
    for (int sd = 0; sd < cfg.kernel_seeds; ++sd) {
      std::mt19937_64 rng(cfg.base_seed * 31 + static_cast<uint64_t>(sd) * 977 + static_cast<uint64_t>(dt));
      const KernelCase g = make_gemm(rng, dt, cfg.max_gemm, cfg.max_k);
      kernel_cases(S, g, dt, PEAT_OP_KIND_GEMM, "gemm seed " + std::to_string(sd), rng);
      const KernelCase c = make_conv(rng, dt);
      kernel_cases(S, c, dt, PEAT_OP_KIND_CONV, "conv seed " + std::to_string(sd), rng);
    }
    for (int sd = 0; sd < cfg.family_seeds; ++sd) {
      std::mt19937_64 rng(cfg.base_seed * 131 + static_cast<uint64_t>(sd) * 7919 + static_cast<uint64_t>(dt));
      const std::string origin = std::string(dt_name(dt)) + " seed " + std::to_string(sd);
      composite_cases(S, dt, rng, origin);
      merged_call_cases(S, dt, rng, origin);
      nondeterminism_cases(S, dt, rng, origin);
      if (dt != DT::F64) non_gemm_cases(S, dt, rng, origin);
      sparse_cases(S, dt, rng, origin);
      if (dt == DT::F32) {
        few_output_cases(S, rng, origin);
        format_cases(S, rng, origin);
      }
    }
  }
  return result;
}

std::string format_matrix(const Result& r) {
  std::string out;
  char buf[256];
  static const char* abbrev[kModels] = {"EXA", "RND", "RED", "BF1", "BFM", "STK", "REG", "DRP", "SCL", "NFN", "NDT", "GRB", "UNK"};
  std::snprintf(buf, sizeof buf, "%-18s", "truth \\ top verdict");
  out += buf;
  for (int j = 0; j < kModels; ++j) {
    std::snprintf(buf, sizeof buf, " %6s", abbrev[j]);
    out += buf;
  }
  out += "   recall\n";
  for (int i = 0; i < kModels; ++i) {
    const double rec = r.recall(i);
    if (rec < 0) continue;
    std::snprintf(buf, sizeof buf, "%-18s", peat_error_model_name(i));
    out += buf;
    for (int j = 0; j < kModels; ++j) {
      std::snprintf(buf, sizeof buf, " %6llu", static_cast<unsigned long long>(r.confusion[static_cast<size_t>(i)][static_cast<size_t>(j)]));
      out += buf;
    }
    std::snprintf(buf, sizeof buf, "   %.4f\n", rec);
    out += buf;
  }
  std::snprintf(buf, sizeof buf,
                "cases %llu, accuracy %.4f, min recall %.4f, exponent/sign flips %llu (reported only as EXACT/ROUNDING: %llu), "
                "flips on rounding noise %llu (flip first and ROUNDING after: %llu), detect errors %llu\n",
                static_cast<unsigned long long>(r.cases), r.accuracy(), r.min_recall(),
                static_cast<unsigned long long>(r.exp_sign_flip_cases), static_cast<unsigned long long>(r.exp_sign_flip_missed),
                static_cast<unsigned long long>(r.noise_flip_cases), static_cast<unsigned long long>(r.noise_flip_both),
                static_cast<unsigned long long>(r.detect_errors));
  out += buf;
  return out;
}

Config slice_config() {
  Config c;
  c.sizes = {1, 2, 7, 64, 100, 1000, 4096, 65536};
  c.seeds = 8;
  c.big_seeds = 0;
  c.kernel_seeds = 12;
  c.family_seeds = 10;
  c.max_gemm = 32;
  c.max_k = 256;
  return c;
}

Config full_config() {
  Config c;
  c.sizes = {1, 2, 7, 64, 100, 1000, 4096, 10000, 65536, 1 << 20, 4 << 20};
  c.seeds = 30;
  c.big_seeds = 2;
  c.kernel_seeds = 40;
  c.family_seeds = 60;
  c.max_gemm = 64;
  c.max_k = 512;
  return c;
}

}  // namespace peat_corpus
