// The CPU backend's signature_accumulate entry: the analyzer's exact one-pass
// signature (lib/analyzer/accumulate.hpp) over host memory.
#include "lib/backend/cpu/cpu.hpp"

#include "lib/analyzer/accumulate.hpp"

namespace peat::impl::backend::cpu {

peat_status_t signature_accumulate(const DLTensor* golden, const DLTensor* candidate,
                                   const struct peat_signature_config* config,
                                   struct peat_signature* inout_signature, struct peat_spatial_map* inout_map,
                                   void* /*stream*/) noexcept {
  return entry("signature_accumulate",
               [&] { analyzer::accumulate(golden, candidate, config, inout_signature, inout_map); });
}

}  // namespace peat::impl::backend::cpu
