// See accumulate.hpp.
#include "lib/analyzer/accumulate.hpp"

#include "lib/analyzer/analyze.hpp"
#include "lib/analyzer/defaults.hpp"
#include "lib/analyzer/map.hpp"
#include "lib/core/tensor_view.hpp"
#include "lib/core/versioned_struct.hpp"

namespace peat::impl::analyzer {

void analyze_to(const DLTensor* golden, const DLTensor* candidate, const peat_signature_config_t* config,
                peat_signature_t* out_signature, peat_spatial_map_t* out_map) {
  require_struct(out_signature, "out_signature");
  const peat_signature_config_t cfg = read_config(config);
  const TensorView g = make_view(golden, "golden");
  const TensorView c = make_view(candidate, "candidate");
  if (out_map) {
    check_map_size(*out_map, "out_map");
    // The map's buffers must not overlap the caller's signature at the shape
    // this call gives the map (analyze() sees only our local signature).
    ResolvedConfig shape = resolve_config(g, cfg);
    resolve_spatial(g, cfg, shape);
    peat_spatial_map_t will_be = *out_map;
    will_be.rows = shape.rows;
    will_be.cols = shape.cols;
    will_be.tile_grid_rows = shape.tile_grid_rows;
    will_be.tile_grid_cols = shape.tile_grid_cols;
    check_map_overlap(will_be, out_signature, out_signature->struct_size);
  }
  peat_signature_t s;
  analyze(g, c, cfg, s, out_map);
  write_versioned(out_signature, s, "out_signature");
}

void spatial_shape(const DLTensor* golden, const peat_signature_config_t* config, int64_t* rows, int64_t* cols,
                   int64_t* tiles) {
  const peat_signature_config_t cfg = read_config(config);
  const TensorView g = make_view(golden, "golden");
  ResolvedConfig resolved = resolve_config(g, cfg);
  resolve_spatial(g, cfg, resolved);
  if (rows) *rows = resolved.rows;
  if (cols) *cols = resolved.cols;
  if (tiles) *tiles = resolved.tile_grid_rows * resolved.tile_grid_cols;
}

void accumulate(const DLTensor* golden, const DLTensor* candidate, const peat_signature_config_t* config,
                peat_signature_t* inout_signature, peat_spatial_map_t* inout_map) {
  peat_signature_t merged = read_versioned(inout_signature, empty_signature(), "inout_signature");
  const peat_signature_config_t cfg = read_config(config);
  const TensorView g = make_view(golden, "golden");
  const TensorView c = make_view(candidate, "candidate");
  peat_signature_t piece = empty_signature();
  if (inout_map == nullptr) {
    analyze(g, c, cfg, piece, nullptr);
    merge(merged, piece);
  } else {
    check_map_size(*inout_map, "inout_map");
    check_map_overlap(*inout_map, inout_signature, inout_signature->struct_size);
    peat_spatial_map_t map_piece = empty_map();
    struct Release {
      peat_spatial_map_t& map;
      ~Release() { release_map(map); }
    } release{map_piece};
    analyze_piece(g, c, cfg, piece, &map_piece);
    merge(merged, piece);
    merge_map(*inout_map, map_piece);
  }
  write_versioned(inout_signature, merged, "inout_signature");
}

}  // namespace peat::impl::analyzer
