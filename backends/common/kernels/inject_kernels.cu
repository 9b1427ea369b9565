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
#include "backends/common/kernels/gpu_portability.h"
#include "backends/common/kernels/inject_apply.h"
#include "backends/common/kernels/kernel_launch.h"
#include "backends/common/signature_element.h"  // ctz64

namespace peat::kernels {
namespace {

namespace hd = peat::hd;

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
