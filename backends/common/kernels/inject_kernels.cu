// inject_kernels.cu — the injector's error models on the device (DESIGN.md §6),
// one source for CUDA (nvcc) and HIP (clang -x hip). Covers every model of
// inject_element.h, including PRECISION, the rounding of a tensor to bf16 /
// fp16 / tf32 / fp8 (precision.h).
//
// The per-element work is the CPU's Runner::element (lib/injector/inject.cpp)
// with the same peat::hd functions and the same Philox words
// (seed, op, call, element index), so the bits written are identical on every
// backend. Units (all elements, list entries, lane hits, region cells) are
// enumerated in increasing index order; each block takes one contiguous range
// of units and writes one partial ground truth, which the host merges in block
// order. Within a block, changed elements get their slot in the truth's list
// from a block-wide prefix sum, so the list holds the smallest indices in
// increasing order, as on the CPU.
#include "gpu_portability.h"
#include "kernel_launch.h"
#include "signature_element.h"  // ctz64

namespace peat::kernels {
namespace {

namespace hd = peat::hd;

__device__ __forceinline__ uint64_t load_word(const void* base, int64_t k, int32_t size) {
  switch (size) {
    case 2: return static_cast<const uint16_t*>(base)[k];
    case 4: return static_cast<const uint32_t*>(base)[k];
    default: return static_cast<const uint64_t*>(base)[k];
  }
}
__device__ __forceinline__ void store_word(void* base, int64_t k, int32_t size, uint64_t w) {
  switch (size) {
    case 2: static_cast<uint16_t*>(base)[k] = static_cast<uint16_t>(w); return;
    case 4: static_cast<uint32_t*>(base)[k] = static_cast<uint32_t>(w); return;
    default: static_cast<uint64_t*>(base)[k] = w; return;
  }
}

// The element index of unit u (units are in increasing index order).
__device__ __forceinline__ int64_t element_of(const InjectLaunch& p, int64_t u) {
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

__device__ __forceinline__ uint64_t fill_bits(const InjectLaunch& p, int64_t k, const hd::Philox4x32& w) {
  switch (p.spec.fill) {
    case PEAT_FILL_GARBAGE: return hd::garbage_bits(p.layout, w);
    case PEAT_FILL_STALE: return load_word(p.stale, k, p.elem_size);
    default: return 0;
  }
}

// Applies the model to element k; returns whether it was selected, and the
// old and new words.
__device__ bool apply_element(const InjectLaunch& p, int64_t k, uint64_t& old_bits, uint64_t& new_bits) {
  const hd::Philox4x32 w = p.random ? hd::philox_random(p.seed, p.op, p.call, static_cast<uint64_t>(k))
                                    : hd::Philox4x32{{0, 0, 0, 0}};
  const peat_inject_spec_t& s = p.spec;
  if (p.selection == kSelectBernoulli && !hd::bernoulli(s.probability, w)) return false;
  old_bits = load_word(p.data, k, p.elem_size);
  const hd::ElementLayout& l = p.layout;
  uint64_t nb = old_bits;
  switch (s.kind) {
    case PEAT_INJECT_BITFLIP: {
      const uint64_t mask = s.bit >= 0 ? p.fixed_mask
                                       : hd::random_bit_mask(l, s.field, s.bits, s.adjacent != 0, w, p.seed, p.op,
                                                             p.call, static_cast<uint64_t>(k));
      nb = old_bits ^ mask;
      break;
    }
    case PEAT_INJECT_STUCK_AT: nb = hd::stuck_at(old_bits, s.bit, s.stuck_value); break;
    case PEAT_INJECT_VALUE: nb = hd::value_bits(l, s.value_kind, s.value, s.range, w); break;
    case PEAT_INJECT_REGION: nb = fill_bits(p, k, w); break;
    case PEAT_INJECT_SCALE: nb = hd::scale_bits(old_bits, l, s.alpha); break;
    case PEAT_INJECT_TRANSPOSE: nb = load_word(p.snapshot, (k % p.rows) * p.cols + k / p.rows, p.elem_size); break;
    case PEAT_INJECT_SHIFT: {
      const int64_t from = k - s.offset;
      if (from >= 0 && from < p.numel) nb = load_word(p.snapshot, from, p.elem_size);
      else if (s.fill != PEAT_FILL_KEEP) nb = fill_bits(p, k, w);
      break;
    }
    case PEAT_INJECT_PRECISION: nb = hd::precision_bits(old_bits, l, p.format, s.rounding, s.saturate != 0); break;
    case PEAT_INJECT_ULP_NOISE: nb = hd::ulp_step(old_bits, l, hd::ulp_delta(s.distribution, s.ulp, w)); break;
    default: break;
  }
  new_bits = nb & hd::width_mask(l);
  return true;
}

__global__ void __launch_bounds__(kBlockThreads) inject_kernel(InjectLaunch p) {
  __shared__ BlockTruth truth;
  __shared__ int32_t scan[kBlockThreads];
  const int t = static_cast<int>(threadIdx.x);
  // Clear the block's truth.
  for (int i = t; i < 64; i += kBlockThreads) truth.bit_flips[i] = 0;
  if (t == 0) {
    truth.selected = truth.changed = truth.new_nonfinite = 0;
    truth.first = truth.row_min = truth.col_min = ~uint64_t{0};
    truth.last_plus1 = truth.row_max_plus1 = truth.col_max_plus1 = 0;
    truth.recorded = 0;
  }
  __syncthreads();

  const int64_t begin = static_cast<int64_t>(blockIdx.x) * p.units_per_block;
  int64_t end = begin + p.units_per_block;
  if (end > p.units) end = p.units;
  uint64_t selected = 0;
  for (int64_t base = begin; base < end; base += kBlockThreads) {
    const int64_t u = base + t;
    int64_t k = -1;
    uint64_t old_bits = 0, new_bits = 0;
    bool changed = false;
    if (u < end) {
      k = element_of(p, u);
      if (apply_element(p, k, old_bits, new_bits)) {
        ++selected;
        if (new_bits != old_bits) {
          changed = true;
          store_word(p.data, k, p.elem_size, new_bits);
          atomic_add_u64(&truth.changed, 1);
          if (hd::is_finite_bits(old_bits, p.layout) && !hd::is_finite_bits(new_bits, p.layout))
            atomic_add_u64(&truth.new_nonfinite, 1);
          atomic_min_u64(&truth.first, static_cast<uint64_t>(k));
          atomic_max_u64(&truth.last_plus1, static_cast<uint64_t>(k) + 1);
          const int64_t r = p.cols > 0 ? k / p.cols : 0, c = p.cols > 0 ? k % p.cols : 0;
          atomic_min_u64(&truth.row_min, static_cast<uint64_t>(r));
          atomic_max_u64(&truth.row_max_plus1, static_cast<uint64_t>(r) + 1);
          atomic_min_u64(&truth.col_min, static_cast<uint64_t>(c));
          atomic_max_u64(&truth.col_max_plus1, static_cast<uint64_t>(c) + 1);
          for (uint64_t x = old_bits ^ new_bits; x != 0; x &= x - 1) atomic_add_u64(&truth.bit_flips[hd::ctz64(x)], 1);
        }
      }
    }
    // Record the changes of this round in index order while there is room:
    // an inclusive prefix sum of the changed flags gives each its slot.
    const int64_t recorded = truth.recorded;  // uniform: written before the last barrier
    if (recorded < PEAT_INJECT_TRUTH_CAPACITY) {
      scan[t] = changed ? 1 : 0;
      __syncthreads();
      for (int offset = 1; offset < kBlockThreads; offset *= 2) {
        const int32_t add = t >= offset ? scan[t - offset] : 0;
        __syncthreads();
        scan[t] += add;
        __syncthreads();
      }
      const int64_t slot = recorded + scan[t] - 1;
      if (changed && slot < PEAT_INJECT_TRUTH_CAPACITY) {
        peat_inject_change_t& ch = truth.changes[slot];
        ch.index = k;
        ch.old_bits = old_bits;
        ch.new_bits = new_bits;
        ch.old_value = hd::load_as_double(old_bits, p.layout.store);
        ch.new_value = hd::load_as_double(new_bits, p.layout.store);
      }
      __syncthreads();
      if (t == kBlockThreads - 1) {
        const int64_t total = recorded + scan[t];
        truth.recorded = total < PEAT_INJECT_TRUTH_CAPACITY ? total : PEAT_INJECT_TRUTH_CAPACITY;
      }
    }
    __syncthreads();
  }
  if (selected) atomic_add_u64(&truth.selected, selected);
  __syncthreads();
  // Write the partial out (plain copy, all threads).
  const uint64_t* src = reinterpret_cast<const uint64_t*>(&truth);
  uint64_t* dst = reinterpret_cast<uint64_t*>(&p.block_out[blockIdx.x]);
  static_assert(sizeof(BlockTruth) % sizeof(uint64_t) == 0, "BlockTruth is copied as 64-bit words");
  for (std::size_t i = t; i < sizeof(BlockTruth) / sizeof(uint64_t); i += kBlockThreads) dst[i] = src[i];
}

}  // namespace

int launch_inject(const InjectLaunch& p, void* stream) {
  inject_kernel<<<dim3(static_cast<unsigned>(p.blocks)), dim3(kBlockThreads), 0, static_cast<gpu_stream_t>(stream)>>>(p);
  return static_cast<int>(gpu_last_launch_error());
}

}  // namespace peat::kernels
