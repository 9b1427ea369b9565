// The golden kernels behind the overrides, as peat_kernel_fn: DLTensor views
// wrapped as at::Tensor (no copy) and computed by the original CPU kernel
// into the output the caller (the injector, or Playback) provides.
#include "peat_aten.hpp"

#include <ATen/ATen.h>
#include <ATen/ops/addmm_cpu_dispatch.h>
#include <ATen/ops/convolution_compositeexplicitautograd_dispatch.h>
#include <ATen/ops/mm_cpu_dispatch.h>

#include <cstring>
#include <string_view>
#include <vector>

namespace {

at::ScalarType scalar_of(DLDataType t) {
  if (t.code == kDLFloat && t.bits == 32) return at::kFloat;
  if (t.code == kDLFloat && t.bits == 64) return at::kDouble;
  if (t.code == kDLFloat && t.bits == 16) return at::kHalf;
  if (t.code == kDLBfloat && t.bits == 16) return at::kBFloat16;
  return at::ScalarType::Undefined;
}

at::Tensor wrap(const DLTensor& t) {
  const at::IntArrayRef sizes(t.shape, static_cast<size_t>(t.ndim));
  std::vector<int64_t> strides(static_cast<size_t>(t.ndim));
  int64_t compact = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    strides[static_cast<size_t>(d)] = t.strides ? t.strides[d] : compact;
    compact *= t.shape[d];
  }
  char* base = static_cast<char*>(t.data) + t.byte_offset;
  return at::from_blob(base, sizes, strides, at::TensorOptions().dtype(scalar_of(t.dtype)));
}

const peat_attr_t* find(const peat_playback_attrs_t* a, std::string_view key) {
  for (uint64_t i = 0; a && i < a->n_attrs; ++i)
    if (key == a->attrs[i].key) return &a->attrs[i];
  return nullptr;
}
double attr_f(const peat_playback_attrs_t* a, std::string_view key, double fallback) {
  const peat_attr_t* x = find(a, key);
  return x && x->type == PEAT_ATTR_FLOAT ? x->f : fallback;
}
int64_t attr_i(const peat_playback_attrs_t* a, std::string_view key, int64_t fallback) {
  const peat_attr_t* x = find(a, key);
  return x && x->type == PEAT_ATTR_INT ? x->i : fallback;
}
std::vector<int64_t> attr_ints(const peat_playback_attrs_t* a, std::string_view key) {
  const peat_attr_t* x = find(a, key);
  if (!x || x->type != PEAT_ATTR_INT_ARRAY) return {};
  return std::vector<int64_t>(x->ints, x->ints + x->n_ints);
}

}  // namespace

extern "C" int32_t peat_aten_golden(void*, const DLTensor* in, int32_t n_in, DLTensor* out, int32_t n_out,
                                    const void* attrs) {
  const auto* a = static_cast<const peat_playback_attrs_t*>(attrs);
  if (a == nullptr || a->op == nullptr || n_out != 1) return 1;
  const std::string_view op = a->op;
  try {
    at::Tensor result = wrap(out[0]);
    if (op == "aten::mm" && n_in == 2) {
      at::cpu::mm_out(result, wrap(in[0]), wrap(in[1]));
    } else if (op == "aten::addmm" && n_in == 3) {
      at::cpu::addmm_out(result, wrap(in[0]), wrap(in[1]), wrap(in[2]), attr_f(a, "beta", 1.0), attr_f(a, "alpha", 1.0));
    } else if (op == "aten::convolution" && (n_in == 2 || n_in == 3)) {
      const c10::optional<at::Tensor> bias = n_in == 3 ? c10::optional<at::Tensor>(wrap(in[2])) : c10::nullopt;
      const at::Tensor y = at::compositeexplicitautograd::convolution(
          wrap(in[0]), wrap(in[1]), bias, attr_ints(a, "stride"), attr_ints(a, "padding"), attr_ints(a, "dilation"),
          attr_i(a, "transposed", 0) != 0, attr_ints(a, "output_padding"), attr_i(a, "groups", 1));
      if (!y.sizes().equals(result.sizes())) return 2;
      result.copy_(y);
    } else {
      return 3;
    }
    return 0;
  } catch (...) {
    return 4;
  }
}
