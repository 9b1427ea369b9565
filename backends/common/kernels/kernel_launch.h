// kernel_launch.h — what the host side of a GPU plugin hands to the kernels
// of this directory: plain parameter structs and the launch functions. It is
// included by plain C++ (the plugin's host code, compiled by the host
// compiler) and by the kernel sources (nvcc / clang -x hip); it names no
// runtime type, so streams travel as void* and errors as the runtime's
// error code in an int (0 = success).
#pragma once

#include <peat/analyzer.h>
#include <peat/injector.h>

#include "backends/common/inject_element.h"
#include "backends/common/precision.h"

#include <cstddef>
#include <cstdint>

namespace peat::kernels {

// Threads per block of every kernel here (a multiple of 64, the AMD wavefront).
constexpr int kBlockThreads = 256;

// ---- signature ------------------------------------------------------------

// The spatial-map side of a signature launch (all device pointers, or all
// NULL when no map is wanted). Indices are global: index_base + i.
struct MapLaunch {
  uint32_t* mask = nullptr;     // [ceil(n / 32)] bit i%32 of word i/32: element i mismatches
  uint64_t* rows = nullptr;     // [map rows] mismatches per row
  uint64_t* cols = nullptr;     // [map cols]
  uint64_t* tiles = nullptr;    // [tile grid rows * tile grid cols]
  uint64_t* lanes = nullptr;    // [32 + 64]: index mod 32, then index mod 64
  int64_t n_cols = 1, tile_rows = 1, tile_cols = 1, tile_grid_cols = 1;
  uint32_t want_flags = 0;      // PairFlag bits that make a mismatch (tolerance or bitwise)
};

struct SignatureLaunch {
  const void* golden = nullptr;     // device pointer to element 0 (contiguous)
  const void* candidate = nullptr;
  int64_t n = 0;                    // elements
  int32_t golden_store = 0;         // kStoreF16 ... (precision.h)
  int32_t candidate_store = 0;
  double rtol = 0, atol = 0, ratio_min_abs = 0;
  int64_t index_base = 0;
  int32_t blocks = 0;               // grid size; block_out holds `blocks` partials
  peat_signature_t* block_out = nullptr;  // device: one partial per block (data fields only)
  MapLaunch map;
};

// Grid size for n elements: a function of n only (never of the device), so
// that the merge tree, and hence every bit of the result, is the same on
// every GPU. Enough blocks to fill any current GPU (8 elements per thread at
// least), at most 2048 partials to merge on the host; at least one.
inline int32_t signature_blocks(int64_t n) {
  const int64_t per_block = static_cast<int64_t>(kBlockThreads) * 8;
  int64_t blocks = (n + per_block - 1) / per_block;
  if (blocks > 2048) blocks = 2048;
  if (blocks < 1) blocks = 1;
  return static_cast<int32_t>(blocks);
}

// Shared-memory slots of the signature kernel's block reduction: as many
// partial signatures as fit in 40 KiB (within CUDA's 48 KiB of static shared
// memory and gfx90a's 64 KiB LDS), a power of two, at least one. Thread t
// folds into slot t % kSignatureSlots in rounds of kSignatureSlots threads;
// the slots then combine pairwise (slot t += slot t + width, width halving).
constexpr int signature_slots_for(std::size_t bytes) {
  int k = 16;
  while (k > 1 && static_cast<std::size_t>(k) * bytes > 40960) k /= 2;
  return k;
}
constexpr int kSignatureSlots = signature_slots_for(sizeof(peat_signature_t));
static_assert(kBlockThreads % kSignatureSlots == 0, "slots must divide the block");

// Launches the signature kernel on `stream`. Returns the runtime's error code
// of the launch (0 = success).
int launch_signature(const SignatureLaunch& launch, void* stream);

// ---- injection --------------------------------------------------------------

// How the elements to touch are enumerated (in increasing index order).
enum Selection : int32_t { kSelectAll = 0, kSelectList = 1, kSelectBernoulli = 2, kSelectLanes = 3, kSelectBands = 4 };

// A band of rows [r0, r1) each covering columns [c0, c1) of the 2-D view.
struct Band {
  int64_t r0, r1, c0, c1;
};

struct InjectLaunch {
  void* data = nullptr;             // device, contiguous
  const void* snapshot = nullptr;   // TRANSPOSE / SHIFT: device copy of the old words
  const void* stale = nullptr;      // FILL_STALE: device, contiguous
  int64_t numel = 0, rows = 0, cols = 0;
  int32_t elem_size = 4;
  peat::hd::ElementLayout layout{};
  peat_inject_spec_t spec{};        // its pointers are host pointers: never read on the device
  int32_t selection = kSelectAll;
  int64_t units = 0;                // elements to visit (list entries, lane hits, band cells ...)
  const int64_t* list = nullptr;    // kSelectList: sorted unique indices (device)
  const Band* bands = nullptr;      // kSelectBands (device)
  const int64_t* band_start = nullptr;  // [n_bands + 1] prefix sums of band cells (device)
  int32_t n_bands = 0;
  uint64_t fixed_mask = 0;          // BITFLIP with a chosen bit
  peat::hd::FloatFormat format{};   // PRECISION
  bool random = true;               // the model draws per-element Philox words
  uint64_t seed = 0;
  uint32_t op = 0, call = 0;
  int64_t units_per_block = 0;
  int32_t blocks = 0;
  struct BlockTruth* block_out = nullptr;  // device: one partial truth per block
};

// The partial ground truth of one block's contiguous range of units.
// "None" is encoded so that atomics can combine it: minima start at
// UINT64_MAX, maxima are stored plus one (0 = none).
struct BlockTruth {
  uint64_t selected, changed, new_nonfinite;
  uint64_t first, last_plus1;
  uint64_t row_min, row_max_plus1, col_min, col_max_plus1;
  uint64_t bit_flips[64];
  int64_t recorded;
  peat_inject_change_t changes[PEAT_INJECT_TRUTH_CAPACITY];
};

// Splits `units` into blocks: units_per_block (a multiple of kBlockThreads,
// at least 16 rounds of a block) and the block count (at most about 4096); a
// function of `units` only.
inline void inject_grid(int64_t units, int64_t& units_per_block, int32_t& blocks) {
  int64_t per = static_cast<int64_t>(kBlockThreads) * 16;
  const int64_t need = (units + 4095) / 4096;
  if (need > per) per = ((need + kBlockThreads - 1) / kBlockThreads) * kBlockThreads;
  int64_t b = (units + per - 1) / per;
  if (b < 1) b = 1;
  units_per_block = per;
  blocks = static_cast<int32_t>(b);
}

int launch_inject(const InjectLaunch& launch, void* stream);

// The runtime's description of an error code returned above.
const char* launch_error_string(int error);

}  // namespace peat::kernels
