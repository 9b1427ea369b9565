// The CPU backend's signature_accumulate table entry (host memory).
#include "analyzer/analyze.hpp"
#include "analyzer/map.hpp"
#include "backend/backend.hpp"
#include "core/error.hpp"
#include "core/versioned_struct.hpp"

#include <fmt/format.h>

#include <cstring>
#include <new>

namespace peat::analyzer {

peat_status_t cpu_signature_accumulate(const DLTensor* golden, const DLTensor* candidate,
                                       const struct peat_signature_config* config,
                                       struct peat_signature* inout_signature, struct peat_spatial_map* inout_map,
                                       void* /*stream*/) noexcept {
  try {
    if (inout_signature == nullptr) fail(PEAT_STATUS_INVALID_ARGUMENT, "inout_signature is NULL");
    if (inout_signature->struct_size != sizeof(peat_signature_t))
      fail(PEAT_STATUS_VERSION_MISMATCH, "inout_signature: struct_size {} is not {}", inout_signature->struct_size,
           sizeof(peat_signature_t));
    peat_signature_config_t cfg;
    peat_signature_config_init(&cfg);
    if (config != nullptr) {
      copy_versioned_struct(cfg, *config, "config");
    }
    const TensorView g = make_view(golden, "golden");
    const TensorView c = make_view(candidate, "candidate");
    peat_signature_t piece = empty_signature();
    peat_signature_t merged = *inout_signature;
    if (inout_map != nullptr) {
      check_map_size(*inout_map, "inout_map");
      check_map_overlap(*inout_map, inout_signature, sizeof(*inout_signature));
      peat_spatial_map_t map_piece;
      peat_spatial_map_init(&map_piece);
      try {
        analyze_piece(g, c, cfg, piece, &map_piece);
        merge(merged, piece);
        merge_map(*inout_map, map_piece);
      } catch (...) {
        release_map(map_piece);
        throw;
      }
      release_map(map_piece);
    } else {
      analyze(g, c, cfg, piece, nullptr);
      merge(merged, piece);
    }
    *inout_signature = merged;
    return PEAT_STATUS_OK;
  } catch (const Error& e) {
    try { cpu_backend_set_error(e.what()); } catch (...) {}
    return e.status();
  } catch (const std::bad_alloc&) {
    try { cpu_backend_set_error("signature_accumulate: out of memory"); } catch (...) {}
    return PEAT_STATUS_OUT_OF_MEMORY;
  } catch (...) {
    try { cpu_backend_set_error("signature_accumulate: internal error"); } catch (...) {}
    return PEAT_STATUS_INTERNAL;
  }
}

}  // namespace peat::analyzer
