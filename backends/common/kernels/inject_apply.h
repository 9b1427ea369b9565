// inject_apply.h — what the injection kernel does to one unit, as PEAT_HD
// functions: the element a unit stands for, and the model applied to it
// (the CPU's Runner::element, lib/injector/inject.cpp, over the same
// peat::hd functions). inject_kernels.cu calls these on the device; the host
// test tests/gpu/test_gpu_host_emulation.cpp replays the kernel with them.
#pragma once

#include "backends/common/inject_element.h"
#include "backends/common/kernels/kernel_launch.h"
#include "backends/common/peat_hd.h"

#include <cstdint>

namespace peat::kernels {

PEAT_HD uint64_t load_word(const void* base, int64_t k, int32_t size) {
  switch (size) {
    case 2: return static_cast<const uint16_t*>(base)[k];
    case 4: return static_cast<const uint32_t*>(base)[k];
    default: return static_cast<const uint64_t*>(base)[k];
  }
}
PEAT_HD void store_word(void* base, int64_t k, int32_t size, uint64_t w) {
  switch (size) {
    case 2: static_cast<uint16_t*>(base)[k] = static_cast<uint16_t>(w); return;
    case 4: static_cast<uint32_t*>(base)[k] = static_cast<uint32_t>(w); return;
    default: static_cast<uint64_t*>(base)[k] = w; return;
  }
}

// The element index of unit u (units are in increasing index order).
PEAT_HD int64_t element_of(const InjectLaunch& p, int64_t u) {
  switch (p.selection) {
    case kSelectList: return p.list[u];
    case kSelectLanes: return p.spec.lane + u * p.spec.lane_period;
    case kSelectBands: {
      int32_t lo = 0, hi = p.n_bands - 1;  // last band with band_start <= u
      while (lo < hi) {
        const int32_t mid = (lo + hi + 1) / 2;
        if (p.band_start[mid] <= u) lo = mid;
        else hi = mid - 1;
      }
      const Band b = p.bands[lo];
      const int64_t width = b.c1 - b.c0, cell = u - p.band_start[lo];
      return (b.r0 + cell / width) * p.cols + b.c0 + cell % width;
    }
    default: return u;
  }
}

PEAT_HD uint64_t fill_bits(const InjectLaunch& p, int64_t k, const peat::hd::Philox4x32& w) {
  switch (p.spec.fill) {
    case PEAT_FILL_GARBAGE: return peat::hd::garbage_bits(p.layout, w);
    case PEAT_FILL_STALE: return load_word(p.stale, k, p.elem_size);
    default: return 0;
  }
}

// Applies the model to element k; returns whether it was selected, and the
// old and new words.
PEAT_HD bool apply_element(const InjectLaunch& p, int64_t k, uint64_t& old_bits, uint64_t& new_bits) {
  const peat::hd::Philox4x32 w = p.random ? peat::hd::philox_random(p.seed, p.op, p.call, static_cast<uint64_t>(k))
                                    : peat::hd::Philox4x32{{0, 0, 0, 0}};
  const peat_inject_spec_t& s = p.spec;
  if (p.selection == kSelectBernoulli && !peat::hd::bernoulli(s.probability, w)) return false;
  old_bits = load_word(p.data, k, p.elem_size);
  const peat::hd::ElementLayout& l = p.layout;
  uint64_t nb = old_bits;
  switch (s.kind) {
    case PEAT_INJECT_BITFLIP: {
      const uint64_t mask = s.bit >= 0 ? p.fixed_mask
                                       : peat::hd::random_bit_mask(l, s.field, s.bits, s.adjacent != 0, w, p.seed, p.op,
                                                             p.call, static_cast<uint64_t>(k));
      nb = old_bits ^ mask;
      break;
    }
    case PEAT_INJECT_STUCK_AT: nb = peat::hd::stuck_at(old_bits, s.bit, s.stuck_value); break;
    case PEAT_INJECT_VALUE: nb = peat::hd::value_bits(l, s.value_kind, s.value, s.range, w); break;
    case PEAT_INJECT_REGION: nb = fill_bits(p, k, w); break;
    case PEAT_INJECT_SCALE: nb = peat::hd::scale_bits(old_bits, l, s.alpha); break;
    case PEAT_INJECT_TRANSPOSE: nb = load_word(p.snapshot, (k % p.rows) * p.cols + k / p.rows, p.elem_size); break;
    case PEAT_INJECT_SHIFT: {
      const int64_t from = k - s.offset;
      if (from >= 0 && from < p.numel) nb = load_word(p.snapshot, from, p.elem_size);
      else if (s.fill != PEAT_FILL_KEEP) nb = fill_bits(p, k, w);
      break;
    }
    case PEAT_INJECT_PRECISION: nb = peat::hd::precision_bits(old_bits, l, p.format, s.rounding, s.saturate != 0); break;
    case PEAT_INJECT_ULP_NOISE: nb = peat::hd::ulp_step(old_bits, l, peat::hd::ulp_delta(s.distribution, s.ulp, w)); break;
    default: break;
  }
  new_bits = nb & peat::hd::width_mask(l);
  return true;
}

}  // namespace peat::kernels
