// signature_kernels.cu — the error-signature kernel (DESIGN.md §5), one source
// for CUDA (nvcc) and HIP (clang -x hip).
//
// Each thread walks the elements with a grid-stride loop, classifies every
// pair with peat::hd::classify_pair and adds it to its own partial signature
// with peat::hd::accumulate_pair: the per-element code the CPU backend's tests
// check. A block then merges its threads' partials in shared memory with
// peat::hd::merge_signature_data in a fixed order and writes one partial; the
// host merges the block partials, in block order, with the same function.
// Nothing here touches a signature field directly, so the representation of
// the sums stays the business of signature_element.h.
//
// The spatial map: a mismatching element sets its bit in a mask (from which
// the host derives first/last mismatch and the runs) and adds one to its row,
// column, tile and lane counters with 64-bit atomics (integer sums: the same
// result in any order).
#include "backends/common/kernels/gpu_portability.h"
#include "backends/common/kernels/kernel_launch.h"
#include "backends/common/signature_element.h"

#include <cstring>

namespace peat::kernels {
namespace {

namespace hd = peat::hd;

constexpr int kSlots = kSignatureSlots;  // kernel_launch.h

// The empty partial: what peat_signature_init gives (all zero, no extremum).
__device__ __forceinline__ void init_partial(peat_signature_t& s) {
  s = peat_signature_t{};  // value-initialised: every field zero
  s.struct_size = sizeof(peat_signature_t);
  s.max_abs_error_index = -1;
  s.max_rel_error_index = -1;
}

template <typename F>
__device__ __forceinline__ typename F::Bits load_bits(const void* base, int64_t i) {
  return static_cast<const typename F::Bits*>(base)[i];
}

// The candidate converted to the golden format: the same conversion as the
// CPU's mixed-dtype path (exact widening to double, one rounding).
template <typename G>
__device__ __forceinline__ typename G::Bits candidate_as(const void* base, int64_t i, int32_t store) {
  switch (store) {
    case hd::kStoreF16: return hd::from_double<G>(hd::FormatF16::to_double(load_bits<hd::FormatF16>(base, i)));
    case hd::kStoreBF16: return hd::from_double<G>(hd::FormatBF16::to_double(load_bits<hd::FormatBF16>(base, i)));
    case hd::kStoreF32: return hd::from_double<G>(hd::FormatF32::to_double(load_bits<hd::FormatF32>(base, i)));
    default: return hd::from_double<G>(hd::FormatF64::to_double(load_bits<hd::FormatF64>(base, i)));
  }
}

__device__ __forceinline__ void record_mismatch(const MapLaunch& m, int64_t i, int64_t index) {
  atomic_or_u32(&m.mask[i >> 5], 1u << (i & 31));
  const int64_t row = index / m.n_cols, col = index - row * m.n_cols;
  atomic_add_u64(&m.rows[row], 1);
  atomic_add_u64(&m.cols[col], 1);
  atomic_add_u64(&m.tiles[(row / m.tile_rows) * m.tile_grid_cols + col / m.tile_cols], 1);
  atomic_add_u64(&m.lanes[index & 31], 1);
  atomic_add_u64(&m.lanes[32 + (index & 63)], 1);
}

// kSame: the candidate has the golden's dtype (no conversion).
template <typename G, bool kSame>
__global__ void __launch_bounds__(kBlockThreads) signature_kernel(SignatureLaunch p) {
  using GB = typename G::Bits;
  peat_signature_t mine;
  init_partial(mine);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const bool map = p.map.mask != nullptr;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.n; i += stride) {
    const GB gb = load_bits<G>(p.golden, i);
    const GB cb = kSame ? load_bits<G>(p.candidate, i) : candidate_as<G>(p.candidate, i, p.candidate_store);
    const hd::PairInfo info = hd::classify_pair<G>(gb, cb, p.rtol, p.atol, p.ratio_min_abs);
    const int64_t index = p.index_base + i;
    hd::accumulate_pair(mine, info, index);
    if (map && (info.flags & p.map.want_flags) != 0) record_mismatch(p.map, i, index);
  }

  // Block reduction in a fixed order: thread t folds into slot t % kSlots in
  // rounds of kSlots threads, then the slots combine pairwise.
  __shared__ peat_signature_t slot[kSlots];
  const int t = static_cast<int>(threadIdx.x);
  for (int round = 0; round < kBlockThreads / kSlots; ++round) {
    if (t / kSlots == round) {
      if (round == 0) slot[t] = mine;
      else hd::merge_signature_data(slot[t % kSlots], mine);
    }
    __syncthreads();
  }
  for (int width = kSlots / 2; width >= 1; width /= 2) {
    if (t < width) hd::merge_signature_data(slot[t], slot[t + width]);
    __syncthreads();
  }
  if (t == 0) p.block_out[blockIdx.x] = slot[0];
}

template <typename G>
gpu_error_t launch_for(const SignatureLaunch& p, gpu_stream_t stream) {
  const dim3 grid(static_cast<unsigned>(p.blocks)), block(kBlockThreads);
  if (p.candidate_store == p.golden_store) signature_kernel<G, true><<<grid, block, 0, stream>>>(p);
  else signature_kernel<G, false><<<grid, block, 0, stream>>>(p);
  return gpu_last_launch_error();
}

}  // namespace

int launch_signature(const SignatureLaunch& p, void* stream) {
  const auto s = static_cast<gpu_stream_t>(stream);
  switch (p.golden_store) {
    case hd::kStoreF16: return static_cast<int>(launch_for<hd::FormatF16>(p, s));
    case hd::kStoreBF16: return static_cast<int>(launch_for<hd::FormatBF16>(p, s));
    case hd::kStoreF32: return static_cast<int>(launch_for<hd::FormatF32>(p, s));
    default: return static_cast<int>(launch_for<hd::FormatF64>(p, s));
  }
}

const char* launch_error_string(int error) { return gpu_error_string(static_cast<gpu_error_t>(error)); }

}  // namespace peat::kernels
