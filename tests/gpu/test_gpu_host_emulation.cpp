// The GPU plugins' host code, run end to end without a device: the plugin
// table is built from gpu_runtime_table.hpp, gpu_signature_entry.hpp and
// gpu_inject_entry.hpp over a "runtime" whose memory is host memory, and the
// kernel launches (kernel_launch.h) are replaced by replays of the kernels'
// algorithms on the host: the same grid, grid-stride assignment, per-thread
// partials, block reduction order (signature) and per-block contiguous unit
// ranges with in-order recording (injection), calling the same peat::hd
// functions (inject_apply.h is the injection kernel's own per-unit code).
// The conformance suite (conformance.hpp) then checks this table against the
// CPU backend. What it cannot check is the device itself: compilation for
// sm_80/sm_90/gfx9*, atomics, barriers and the prefix sum; the suite runs
// against the real plugins where a GPU is present.
#include "conformance.hpp"

#include "gpu_inject_entry.hpp"
#include "gpu_runtime_table.hpp"
#include "gpu_signature_entry.hpp"
#include "kernels/inject_apply.h"
#include "kernels/kernel_launch.h"
#include "signature_element.h"

#include <cstdlib>

namespace {

struct HostRuntime {
  using error_t = int;
  using stream_t = void*;
  using event_t = void*;
  static constexpr error_t success = 0;
  static constexpr const char* name = "host-emulation";
  static constexpr int32_t device_type = kDLCPU;
  static constexpr const char* vendor = "none";
  static error_t device_count(int* count) { *count = 1; return 0; }
  static error_t device_props(int, peat::gpu::DeviceProps& out) {
    peat::gpu::copy_name(out.name, sizeof(out.name), "host emulation");
    return 0;
  }
  static error_t set_device(int) { return 0; }
  static error_t malloc(void** ptr, size_t bytes) { *ptr = std::malloc(bytes); return *ptr ? 0 : 2; }
  static error_t free(void* ptr) { std::free(ptr); return 0; }
  static error_t memcpy_async(void* dst, const void* src, size_t bytes, stream_t) { std::memmove(dst, src, bytes); return 0; }
  static error_t memset_async(void* dst, int value, size_t bytes, stream_t) { std::memset(dst, value, bytes); return 0; }
  static error_t stream_sync(stream_t) { return 0; }
  static error_t device_sync() { return 0; }
  static error_t event_create(event_t* e) { *e = nullptr; return 0; }
  static error_t event_record(event_t, stream_t) { return 0; }
  static error_t event_sync(event_t) { return 0; }
  static error_t event_destroy(event_t) { return 0; }
  static void clear_error() {}
  static const char* error_string(error_t) { return "host emulation error"; }
  static const char* error_name(error_t) { return "HOST_ERROR"; }
  static bool no_device(error_t) { return false; }
  static bool serves(DLDevice) { return true; }
  static peat_status_t classify(error_t e) { return e == 2 ? PEAT_STATUS_OUT_OF_MEMORY : PEAT_STATUS_INTERNAL; }
};

namespace hd = peat::hd;
namespace k = peat::kernels;

template <typename F>
typename F::Bits load_bits(const void* base, int64_t i) {
  typename F::Bits b;
  std::memcpy(&b, static_cast<const char*>(base) + i * static_cast<int64_t>(sizeof(b)), sizeof(b));
  return b;
}

// signature_kernels.cu: candidate_as (the CPU's mixed-dtype conversion).
template <typename G>
typename G::Bits candidate_as(const void* base, int64_t i, int32_t store) {
  switch (store) {
    case hd::kStoreF16: return hd::from_double<G>(hd::FormatF16::to_double(load_bits<hd::FormatF16>(base, i)));
    case hd::kStoreBF16: return hd::from_double<G>(hd::FormatBF16::to_double(load_bits<hd::FormatBF16>(base, i)));
    case hd::kStoreF32: return hd::from_double<G>(hd::FormatF32::to_double(load_bits<hd::FormatF32>(base, i)));
    default: return hd::from_double<G>(hd::FormatF64::to_double(load_bits<hd::FormatF64>(base, i)));
  }
}

template <typename G>
void replay_signature(const k::SignatureLaunch& p) {
  const int64_t stride = static_cast<int64_t>(p.blocks) * k::kBlockThreads;
  std::vector<peat_signature_t> mine(k::kBlockThreads), slot(k::kSignatureSlots);
  const k::MapLaunch& m = p.map;
  for (int32_t b = 0; b < p.blocks; ++b) {
    for (int t = 0; t < k::kBlockThreads; ++t) {
      peat_signature_t& s = mine[static_cast<std::size_t>(t)];
      peat_signature_init(&s);
      for (int64_t i = static_cast<int64_t>(b) * k::kBlockThreads + t; i < p.n; i += stride) {
        const auto gb = load_bits<G>(p.golden, i);
        const auto cb = p.candidate_store == p.golden_store ? load_bits<G>(p.candidate, i)
                                                             : candidate_as<G>(p.candidate, i, p.candidate_store);
        const hd::PairInfo info = hd::classify_pair<G>(gb, cb, p.rtol, p.atol, p.ratio_min_abs);
        const int64_t index = p.index_base + i;
        hd::accumulate_pair(s, info, index);
        if (m.mask != nullptr && (info.flags & m.want_flags) != 0) {  // record_mismatch
          m.mask[i >> 5] |= 1u << (i & 31);
          const int64_t row = index / m.n_cols, col = index - row * m.n_cols;
          m.rows[row] += 1;
          m.cols[col] += 1;
          m.tiles[(row / m.tile_rows) * m.tile_grid_cols + col / m.tile_cols] += 1;
          m.lanes[index & 31] += 1;
          m.lanes[32 + (index & 63)] += 1;
        }
      }
    }
    for (int round = 0; round < k::kBlockThreads / k::kSignatureSlots; ++round)
      for (int t = round * k::kSignatureSlots; t < (round + 1) * k::kSignatureSlots; ++t) {
        if (round == 0) slot[static_cast<std::size_t>(t)] = mine[static_cast<std::size_t>(t)];
        else hd::merge_signature_data(slot[static_cast<std::size_t>(t % k::kSignatureSlots)], mine[static_cast<std::size_t>(t)]);
      }
    for (int width = k::kSignatureSlots / 2; width >= 1; width /= 2)
      for (int t = 0; t < width; ++t)
        hd::merge_signature_data(slot[static_cast<std::size_t>(t)], slot[static_cast<std::size_t>(t + width)]);
    p.block_out[b] = slot[0];
  }
}

}  // namespace

// The launch functions of kernel_launch.h, replayed on the host.
namespace peat::kernels {

int launch_signature(const SignatureLaunch& p, void*) {
  switch (p.golden_store) {
    case hd::kStoreF16: replay_signature<hd::FormatF16>(p); break;
    case hd::kStoreBF16: replay_signature<hd::FormatBF16>(p); break;
    case hd::kStoreF32: replay_signature<hd::FormatF32>(p); break;
    default: replay_signature<hd::FormatF64>(p); break;
  }
  return 0;
}

int launch_inject(const InjectLaunch& p, void*) {
  for (int32_t b = 0; b < p.blocks; ++b) {
    BlockTruth& t = p.block_out[b];
    std::memset(&t, 0, sizeof(t));
    t.first = t.row_min = t.col_min = ~uint64_t{0};
    const int64_t begin = static_cast<int64_t>(b) * p.units_per_block;
    const int64_t end = std::min(p.units, begin + p.units_per_block);
    for (int64_t u = begin; u < end; ++u) {
      const int64_t e = element_of(p, u);
      uint64_t old_bits = 0, new_bits = 0;
      if (!apply_element(p, e, old_bits, new_bits)) continue;
      ++t.selected;
      if (new_bits == old_bits) continue;
      store_word(p.data, e, p.elem_size, new_bits);
      ++t.changed;
      if (hd::is_finite_bits(old_bits, p.layout) && !hd::is_finite_bits(new_bits, p.layout)) ++t.new_nonfinite;
      const auto ue = static_cast<uint64_t>(e);
      t.first = std::min(t.first, ue);
      t.last_plus1 = std::max(t.last_plus1, ue + 1);
      const auto r = static_cast<uint64_t>(p.cols > 0 ? e / p.cols : 0), c = static_cast<uint64_t>(p.cols > 0 ? e % p.cols : 0);
      t.row_min = std::min(t.row_min, r);
      t.row_max_plus1 = std::max(t.row_max_plus1, r + 1);
      t.col_min = std::min(t.col_min, c);
      t.col_max_plus1 = std::max(t.col_max_plus1, c + 1);
      for (uint64_t x = old_bits ^ new_bits; x != 0; x &= x - 1) t.bit_flips[hd::ctz64(x)] += 1;
      if (t.recorded < PEAT_INJECT_TRUTH_CAPACITY) {
        peat_inject_change_t& ch = t.changes[t.recorded++];
        ch.index = e;
        ch.old_bits = old_bits;
        ch.new_bits = new_bits;
        ch.old_value = hd::load_as_double(old_bits, p.layout.store);
        ch.new_value = hd::load_as_double(new_bits, p.layout.store);
      }
    }
  }
  return 0;
}

const char* launch_error_string(int) { return "host emulation error"; }

}  // namespace peat::kernels

int main() {
  peat_backend_api_t table = peat::gpu::RuntimeTable<HostRuntime>::make();
  table.signature_accumulate = peat::gpu::GpuEntries<HostRuntime>::signature_accumulate;
  table.inject = peat::gpu::GpuInject<HostRuntime>::inject;
  return run_conformance(&table, "host emulation of the GPU plugins") == 0 ? 0 : 1;
}
