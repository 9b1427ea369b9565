// Plain double-precision references of the trainer's layers (loops, no Eigen,
// no GEMM seam), for the gradient checks.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace ref {

using Vec = std::vector<double>;

// y[b, o] = sum_i x[b, i] W[o, i] + bias[o]
inline Vec linear(const Vec& x, int64_t B, int64_t in, const Vec& W, const Vec& bias, int64_t out) {
  Vec y(static_cast<size_t>(B * out));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t o = 0; o < out; ++o) {
      double s = bias[o];
      for (int64_t i = 0; i < in; ++i) s += x[b * in + i] * W[o * in + i];
      y[b * out + o] = s;
    }
  return y;
}

// NHWC convolution, W[co, (kh*k + kw)*C + c], zero padding.
inline Vec conv(const Vec& x, int64_t B, int64_t H, int64_t W, int64_t C, const Vec& w, const Vec& bias, int64_t cout, int k,
                int stride, int pad, int64_t& Ho, int64_t& Wo) {
  Ho = (H + 2 * pad - k) / stride + 1;
  Wo = (W + 2 * pad - k) / stride + 1;
  Vec y(static_cast<size_t>(B * Ho * Wo * cout));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t oh = 0; oh < Ho; ++oh)
      for (int64_t ow = 0; ow < Wo; ++ow)
        for (int64_t co = 0; co < cout; ++co) {
          double s = bias[co];
          for (int kh = 0; kh < k; ++kh)
            for (int kw = 0; kw < k; ++kw) {
              const int64_t ih = oh * stride - pad + kh, iw = ow * stride - pad + kw;
              if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
              for (int64_t c = 0; c < C; ++c) s += x[((b * H + ih) * W + iw) * C + c] * w[co * (k * k * C) + (kh * k + kw) * C + c];
            }
          y[((b * Ho + oh) * Wo + ow) * cout + co] = s;
        }
  return y;
}

inline Vec relu(Vec x) {
  for (auto& v : x) v = std::max(v, 0.0);
  return x;
}

inline Vec maxpool2(const Vec& x, int64_t B, int64_t H, int64_t W, int64_t C) {
  Vec y(static_cast<size_t>(B * (H / 2) * (W / 2) * C));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t oh = 0; oh < H / 2; ++oh)
      for (int64_t ow = 0; ow < W / 2; ++ow)
        for (int64_t c = 0; c < C; ++c) {
          double m = -INFINITY;
          for (int dh = 0; dh < 2; ++dh)
            for (int dw = 0; dw < 2; ++dw) m = std::max(m, x[((b * H + 2 * oh + dh) * W + 2 * ow + dw) * C + c]);
          y[((b * (H / 2) + oh) * (W / 2) + ow) * C + c] = m;
        }
  return y;
}

// Mean softmax cross-entropy.
inline double cross_entropy(const Vec& z, int64_t B, int64_t C, const int32_t* labels) {
  double total = 0;
  for (int64_t b = 0; b < B; ++b) {
    double m = z[b * C];
    for (int64_t c = 1; c < C; ++c) m = std::max(m, z[b * C + c]);
    double s = 0;
    for (int64_t c = 0; c < C; ++c) s += std::exp(z[b * C + c] - m);
    total += m + std::log(s) - z[b * C + labels[b]];
  }
  return total / static_cast<double>(B);
}

}  // namespace ref
