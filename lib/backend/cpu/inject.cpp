// The CPU backend's inject entry: checks that the tensor is in host memory,
// then applies the spec (inject_apply.cpp) and writes the truth by the
// versioned rule.
#include "lib/backend/cpu/cpu.hpp"

#include "lib/core/error.hpp"
#include "lib/injector/inject.hpp"

namespace peat::impl::backend::cpu {

peat_status_t inject(DLTensor* tensor, const peat_inject_spec_t* spec, uint64_t seed, uint32_t op, uint32_t call,
                     peat_inject_truth_t* out_truth, void* /*stream*/) noexcept {
  return entry("inject", [&] {
    const peat_inject_spec_t s = injector::read_spec(spec, "spec");
    const TensorView view = make_view(tensor, "tensor");
    if (!is_host(view.device))
      fail(PEAT_STATUS_UNSUPPORTED, "the CPU backend injects into host memory only (device type {})",
           static_cast<int>(view.device.device_type));
    TensorView stale_view;
    if (s.stale != nullptr) stale_view = make_view(s.stale, "spec.stale");
    peat_inject_truth_t full{};
    apply_inject(s, view, s.stale ? &stale_view : nullptr, seed, op, call, full);
    if (out_truth != nullptr) injector::copy_truth_out(full, out_truth, "out_truth");
  });
}

}  // namespace peat::impl::backend::cpu
