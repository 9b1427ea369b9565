// gpu_inject_entry.hpp — the inject entry of a GPU plugin, written once for
// CUDA and HIP over the runtime traits R of gpu_runtime_table.hpp.
//
// Host side of the injection kernel (kernels/inject_kernels.cu): reads,
// checks and plans the spec with the CPU path's own code (inject_plan.hpp),
// uploads the plan, launches, and merges the blocks' partial truths in block
// order with the same merge the CPU uses for its chunks. The kernel applies the same peat::hd functions with the same Philox
// words, so the tensor's bits and the truth equal the CPU backend's. C++17.
#pragma once

#include "backends/common/gpu_signature_entry.hpp"
#include "backends/common/inject_plan.hpp"
#include "backends/common/kernels/kernel_launch.h"

#include <peat/injector.h>

#include <vector>

namespace peat::gpu {

template <typename R>
struct GpuInject {
  using Table = RuntimeTable<R>;
  using E = GpuEntries<R>;

  static peat_status_t status_of(const Problem& p) {
    return p.ok() ? PEAT_STATUS_OK : Table::fail(p.status, p.message);
  }

  static peat_status_t inject(DLTensor* tensor, const struct peat_inject_spec* spec, uint64_t seed, uint32_t op,
                              uint32_t call, struct peat_inject_truth* out_truth, void* stream) noexcept {
    try {
      return inject_impl(tensor, spec, seed, op, call, out_truth, stream);
    } catch (const std::bad_alloc&) {
      return Table::fail(PEAT_STATUS_OUT_OF_MEMORY, "inject: out of host memory");
    } catch (...) {
      return Table::fail(PEAT_STATUS_INTERNAL, "inject: internal error");
    }
  }

  static peat_status_t inject_impl(DLTensor* tensor, const peat_inject_spec_t* spec_in, uint64_t seed, uint32_t op,
                                   uint32_t call, peat_inject_truth_t* out_truth, void* stream) {
    namespace k = peat::kernels;
    namespace hd = peat::hd;
    if (out_truth != nullptr && (out_truth->struct_size < sizeof(uint32_t) || out_truth->struct_size > sizeof(peat_inject_truth_t)))
      return Table::fail(PEAT_STATUS_VERSION_MISMATCH, fmt::format("out_truth.struct_size {} is not accepted", out_truth->struct_size));
    peat_inject_spec_t s;
    if (const peat_status_t st = status_of(inject_plan::read_spec(spec_in, "spec", s)); st != PEAT_STATUS_OK) return st;
    if (const peat_status_t st = status_of(inject_plan::validate(s, "spec")); st != PEAT_STATUS_OK) return st;
    DeviceTensor t;
    if (const peat_status_t st = E::check_tensor(tensor, "tensor", t); st != PEAT_STATUS_OK) return st;

    k::InjectLaunch p;
    p.spec = s;
    p.layout = hd::layout_of(t.store);
    p.elem_size = t.elem_size;
    p.numel = t.numel;
    p.seed = seed;
    p.op = op;
    p.call = call;
    const int32_t width = p.layout.width;
    const int64_t last_dim = tensor->ndim == 0 ? 1 : tensor->shape[tensor->ndim - 1];
    if (const peat_status_t st = status_of(inject_plan::view_2d(s, last_dim, t.numel, p.rows, p.cols)); st != PEAT_STATUS_OK)
      return st;
    if (const peat_status_t st = status_of(inject_plan::tensor_checks(s, p.layout, peat_dtype_name(tensor->dtype), t.numel,
                                                                      p.fixed_mask, p.format));
        st != PEAT_STATUS_OK)
      return st;
    DeviceTensor stale;
    if (inject_plan::needs_stale(s)) {
      if (s.stale == nullptr) return Table::fail(PEAT_STATUS_INVALID_ARGUMENT, "spec.stale is NULL but spec.fill is STALE");
      if (const peat_status_t st = E::check_tensor(s.stale, "spec.stale", stale); st != PEAT_STATUS_OK) return st;
      bool same = s.stale->ndim == tensor->ndim && stale.store == t.store;
      for (int d = 0; same && d < tensor->ndim; ++d) same = s.stale->shape[d] == tensor->shape[d];
      if (!same) return Table::fail(PEAT_STATUS_SHAPE_MISMATCH, "spec.stale differs from the tensor in shape or dtype");
      p.stale = stale.data;
    }

    // Element selection.
    inject_plan::Selection sel;
    if (const peat_status_t st = status_of(inject_plan::select(s, t.numel, p.rows, p.cols, seed, op, call, sel));
        st != PEAT_STATUS_OK)
      return st;
    p.selection = sel.kind;
    const std::vector<int64_t>& list = sel.list;
    const std::vector<k::Band>& bands = sel.bands;
    std::vector<int64_t> band_start;
    switch (p.selection) {
      case k::kSelectList: p.units = static_cast<int64_t>(list.size()); break;
      case k::kSelectLanes: p.units = s.lane < t.numel ? (t.numel - s.lane + s.lane_period - 1) / s.lane_period : 0; break;
      case k::kSelectBands: {
        int64_t total = 0;
        for (const k::Band& b : bands) {
          band_start.push_back(total);
          total += (b.r1 - b.r0) * (b.c1 - b.c0);
        }
        band_start.push_back(total);
        p.units = total;
        p.n_bands = static_cast<int32_t>(bands.size());
        break;
      }
      default: p.units = t.numel; break;
    }
    p.random = inject_plan::draws_random(s, p.selection);

    if (const peat_status_t st = Table::check(R::set_device(t.device), "set device"); st != PEAT_STATUS_OK) return st;
    const auto strm = static_cast<typename R::stream_t>(stream);
    DeviceBuffer<R> snapshot, dev_list, dev_bands, dev_start, partials;
    const std::size_t bytes = static_cast<std::size_t>(t.numel) * static_cast<std::size_t>(t.elem_size);
    // Layout faults read the old contents first.
    if (s.kind == PEAT_INJECT_TRANSPOSE || s.kind == PEAT_INJECT_SHIFT) {
      if (const peat_status_t st = E::device_alloc(snapshot, bytes, "malloc (snapshot)"); st != PEAT_STATUS_OK) return st;
      if (const peat_status_t st = Table::check(R::memcpy_async(snapshot.ptr, t.data, bytes, strm), "memcpy (snapshot)"); st != PEAT_STATUS_OK) return st;
      p.snapshot = snapshot.ptr;
    }
    const auto upload = [&](DeviceBuffer<R>& buf, const void* src, std::size_t n, const char* what) {
      if (const peat_status_t st = E::device_alloc(buf, n, what); st != PEAT_STATUS_OK) return st;
      return n == 0 ? PEAT_STATUS_OK : Table::check(R::memcpy_async(buf.ptr, src, n, strm), what);
    };
    if (p.selection == k::kSelectList) {
      if (const peat_status_t st = upload(dev_list, list.data(), list.size() * 8, "upload (element list)"); st != PEAT_STATUS_OK) return st;
      p.list = dev_list.template as<int64_t>();
    }
    if (p.selection == k::kSelectBands) {
      if (const peat_status_t st = upload(dev_bands, bands.data(), bands.size() * sizeof(k::Band), "upload (bands)"); st != PEAT_STATUS_OK) return st;
      if (const peat_status_t st = upload(dev_start, band_start.data(), band_start.size() * 8, "upload (bands)"); st != PEAT_STATUS_OK) return st;
      p.bands = dev_bands.template as<k::Band>();
      p.band_start = dev_start.template as<int64_t>();
    }
    k::inject_grid(p.units, p.units_per_block, p.blocks);
    if (const peat_status_t st = E::device_alloc(partials, sizeof(k::BlockTruth) * p.blocks, "malloc (block truths)"); st != PEAT_STATUS_OK) return st;
    p.data = t.data;
    p.block_out = partials.template as<k::BlockTruth>();
    if (p.units > 0)
      if (const int e = k::launch_inject(p, stream); e != 0)
        return Table::fail(PEAT_STATUS_INTERNAL, fmt::format("inject kernel launch: {}", k::launch_error_string(e)));
    std::vector<k::BlockTruth> parts(p.units > 0 ? static_cast<std::size_t>(p.blocks) : 0);
    if (!parts.empty())
      if (const peat_status_t st = Table::check(R::memcpy_async(parts.data(), partials.ptr, sizeof(k::BlockTruth) * parts.size(), strm), "memcpy (block truths)");
          st != PEAT_STATUS_OK)
        return st;
    if (const peat_status_t st = Table::check(R::stream_sync(strm), "inject kernel"); st != PEAT_STATUS_OK) return st;

    // Merge in block (= index) order.
    inject_plan::Truth merged;
    for (const k::BlockTruth& b : parts) merged.add(inject_plan::from_block(b));
    peat_inject_truth_t truth = merged.finish(s, width, t.numel, p.rows, p.cols, seed, op, call);
    if (out_truth != nullptr) {
      const uint32_t size = out_truth->struct_size;
      truth.struct_size = size;
      std::memcpy(out_truth, &truth, size);
    }
    return PEAT_STATUS_OK;
  }
};

}  // namespace peat::gpu
