// A candidate kernel for the overridden aten::mm, loaded as
// "libpeat_aten_candidates.so:mm_bf16": f32 C = A B with A and B rounded to
// bf16 first (round to nearest even), the error of a bf16-input GEMM. Plain
// C++ on DLTensor views (any strides), no libtorch.
#include <dlpack/dlpack.h>

#include <cstdint>
#include <cstring>

namespace {

float to_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) != 0x7f800000u) u += 0x7fffu + ((u >> 16) & 1u);  // finite: nearest even
  u &= 0xffff0000u;
  std::memcpy(&x, &u, 4);
  return x;
}

int64_t stride(const DLTensor& t, int d) {
  if (t.strides) return t.strides[d];
  return d == 0 ? t.shape[1] : 1;
}

bool is_f32_matrix(const DLTensor& t) { return t.ndim == 2 && t.dtype.code == kDLFloat && t.dtype.bits == 32; }

}  // namespace

extern "C" __attribute__((visibility("default"))) int32_t mm_bf16(void*, const DLTensor* in, int32_t n_in,
                                                                  DLTensor* out, int32_t n_out, const void*) {
  if (n_in != 2 || n_out != 1 || !is_f32_matrix(in[0]) || !is_f32_matrix(in[1]) || !is_f32_matrix(out[0])) return 1;
  const DLTensor &a = in[0], &b = in[1], &c = out[0];
  const int64_t M = a.shape[0], K = a.shape[1], N = b.shape[1];
  if (b.shape[0] != K || c.shape[0] != M || c.shape[1] != N) return 2;
  const auto* pa = reinterpret_cast<const float*>(static_cast<const char*>(a.data) + a.byte_offset);
  const auto* pb = reinterpret_cast<const float*>(static_cast<const char*>(b.data) + b.byte_offset);
  auto* pc = reinterpret_cast<float*>(static_cast<char*>(c.data) + c.byte_offset);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k)
        acc += to_bf16(pa[i * stride(a, 0) + k * stride(a, 1)]) * to_bf16(pb[k * stride(b, 0) + j * stride(b, 1)]);
      pc[i * stride(c, 0) + j * stride(c, 1)] = acc;
    }
  return 0;
}
