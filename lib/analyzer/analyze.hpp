// The analyzer's internal C++ entry points: the signature of a (golden,
// candidate) pair on the CPU, merging, and the spatial map. The C layer
// (peat_analyze and friends) and other objects (the injector's playback and
// runtime comparison) call these; they throw peat::impl::Error.
#pragma once

#include <peat/analyzer.h>

#include "lib/core/dtype.hpp"
#include "lib/core/tensor_view.hpp"

namespace peat::impl::analyzer {

// The config with every default resolved against the golden dtype (rtol/atol,
// unit roundoff, ratio threshold, spatial view). Throws INVALID_ARGUMENT for
// out-of-range fields, naming them.
struct ResolvedConfig {
  double rtol = 0, atol = 0, unit_roundoff = 0, ratio_min_abs = 0;
  int64_t reduction_length = 0, index_base = 0;
  int64_t rows = 0, cols = 0, tile_rows = 32, tile_cols = 32;
  int64_t tile_grid_rows = 0, tile_grid_cols = 0;
  peat_mismatch_kind_t map_mismatch = PEAT_MISMATCH_TOLERANCE;
  int num_threads = 0;
};
ResolvedConfig resolve_config(const TensorView& golden, const peat_signature_config_t& config);

// Fills the spatial-view part of `resolved` (rows, cols, tile grid). Throws
// INVALID_ARGUMENT when the view does not divide the tensor.
// `piece`: the tensor is one piece of the view (accumulating), so the view
// only has to cover index_base + count elements; otherwise a view starting at
// index_base 0 must have exactly the tensor's element count.
void resolve_spatial(const TensorView& golden, const peat_signature_config_t& config, ResolvedConfig& resolved,
                     bool piece = false);

// The default rtol/atol of a dtype (see peat_default_tolerance).
void default_tolerance(Float f, double& rtol, double& atol);

// Computes the signature of (golden, candidate) into `out` (overwritten, its
// struct_size set to sizeof(peat_signature_t)). When `map` is not null it is
// rebuilt: geometry from the config, counts cleared, library-owned buffers
// allocated where the pointers are NULL (see peat_spatial_map_t). `config`
// is a full-size struct (read at the C boundary with read_options). Both
// views must be host memory. Throws peat::impl::Error (SHAPE_MISMATCH, UNSUPPORTED,
// INVALID_ARGUMENT, BUFFER_TOO_SMALL).
void analyze(const TensorView& golden, const TensorView& candidate, const peat_signature_config_t& config,
             peat_signature_t& out, peat_spatial_map_t* map /* may be null */);

// As above, for one piece of a larger spatial view (see resolve_spatial).
void analyze_piece(const TensorView& golden, const TensorView& candidate, const peat_signature_config_t& config,
                   peat_signature_t& out, peat_spatial_map_t* map);

// into = into (+) from. Both full-size. Throws INVALID_ARGUMENT when both are
// non-empty and their golden dtype, tolerances, K or u differ.
void merge(peat_signature_t& into, const peat_signature_t& from);

// The empty signature (identity of merge).
peat_signature_t empty_signature() noexcept;

// into = into (+) from for spatial maps (see peat_spatial_map_merge); `into`
// and `from` must be two maps (INVALID_ARGUMENT).
void merge_map(peat_spatial_map_t& into, const peat_spatial_map_t& from);

// Frees the library-owned buffers of a map.
void release_map(peat_spatial_map_t& map) noexcept;

}  // namespace peat::impl::analyzer
