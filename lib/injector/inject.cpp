// Injection routed by the tensor's device: the CPU backend applies the plan
// in host memory (lib/backend/cpu/inject_apply.cpp), any other backend through
// its table's `inject` entry.
#include "lib/injector/inject.hpp"

#include "lib/backend/backend.hpp"
#include "lib/backend/cpu/cpu.hpp"
#include "lib/core/dtype.hpp"
#include "lib/core/error.hpp"
#include "lib/injector/chunks.hpp"

#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace peat::impl::injector {

namespace {

// Element-wise copy between two host views of the same shape and dtype.
void copy_host(const TensorView& dst, const TensorView& src) {
  const std::size_t size = dtype_size(dst.dtype);
  for_chunks(dst.numel, kGrainElements, [&](int64_t a, int64_t b) {
    if (dst.contiguous && src.contiguous) {
      std::memmove(dst.base + a * static_cast<int64_t>(size), src.base + a * static_cast<int64_t>(size),
                   static_cast<std::size_t>(b - a) * size);
      return;
    }
    for (int64_t k = a; k < b; ++k)
      std::memmove(dst.base + dst.offset_of(k) * static_cast<int64_t>(size),
                   src.base + src.offset_of(k) * static_cast<int64_t>(size), size);
  });
}

}  // namespace

void apply(const peat_inject_spec_t& spec, DLTensor* tensor, const DLTensor* source, uint64_t seed, uint32_t op,
           uint32_t call, peat_inject_truth_t& truth) {
  validate_spec(spec, "spec");
  const TensorView view = make_view(tensor, "tensor");
  require_float(view.dtype, "tensor");
  TensorView stale_view;
  const bool has_stale = spec.stale != nullptr;
  if (has_stale) stale_view = make_view(spec.stale, "spec.stale");
  std::optional<TensorView> source_view;
  if (source != nullptr) {
    source_view = make_view(source, "source");
    if (!(source_view->dtype == view.dtype))
      fail(PEAT_STATUS_SHAPE_MISMATCH, "source has dtype {} but tensor has {}", dtype_name(source_view->dtype),
           dtype_name(view.dtype));
    require_same_shape(*source_view, "source", view, "tensor");
  }

  backend::Backend& backend = backend::Registry::instance().for_device(view.device.device_type);
  if (&backend.api() == backend::cpu_backend_table()) {
    if (source_view) {
      if (!is_host(source_view->device))
        fail(PEAT_STATUS_UNSUPPORTED, "source is on device type {} but tensor is in host memory",
             static_cast<int>(source_view->device.device_type));
    }
    if (has_stale && !is_host(stale_view.device))
      fail(PEAT_STATUS_UNSUPPORTED, "spec.stale is not in host memory");
    if (source_view) {
      // Copy the source in, apply; on error restore what the tensor held, so
      // that a refused spec leaves it unchanged.
      std::vector<std::byte> keep(static_cast<std::size_t>(view.numel) * dtype_size(view.dtype));
      DLTensor saved{};
      saved.data = keep.data();
      saved.device = DLDevice{kDLCPU, 0};
      saved.ndim = view.ndim;
      saved.dtype = view.dtype;
      saved.shape = tensor->shape;
      const TensorView saved_view = make_view(&saved, "saved");
      copy_host(saved_view, view);
      copy_host(view, *source_view);
      try {
        backend::cpu::apply_inject(spec, view, has_stale ? &stale_view : nullptr, seed, op, call, truth);
      } catch (...) {
        copy_host(view, saved_view);
        throw;
      }
      return;
    }
    backend::cpu::apply_inject(spec, view, has_stale ? &stale_view : nullptr, seed, op, call, truth);
    return;
  }

  if (!PEAT_BACKEND_HAS(backend, inject))
    fail(PEAT_STATUS_UNSUPPORTED, "backend '{}' does not implement error-model injection", backend.name());
  if (source_view) {
    if (!view.contiguous || !source_view->contiguous)
      fail(PEAT_STATUS_UNSUPPORTED, "backend '{}': copying a strided source is only supported in host memory",
           backend.name());
    backend.check(backend.api().copy(view.base, view.device, source_view->base, source_view->device,
                                     static_cast<std::size_t>(view.numel) * dtype_size(view.dtype), nullptr),
                  "copy");
  }
  peat_inject_truth_t full{};
  full.struct_size = sizeof(full);
  backend.check(backend.api().inject(tensor, &spec, seed, op, call, &full, nullptr), "inject");
  truth = full;
}

}  // namespace peat::impl::injector
