// The CPU backend's signature_accumulate table entry (host memory).
#include "lib/analyzer/accumulate.hpp"
#include "lib/analyzer/analyze.hpp"
#include "lib/backend/backend.hpp"
#include "lib/core/error.hpp"

#include <fmt/format.h>

#include <new>

namespace peat::impl::analyzer {

peat_status_t cpu_signature_accumulate(const DLTensor* golden, const DLTensor* candidate,
                                       const struct peat_signature_config* config,
                                       struct peat_signature* inout_signature, struct peat_spatial_map* inout_map,
                                       void* /*stream*/) noexcept {
  try {
    accumulate(golden, candidate, config, inout_signature, inout_map);
    return PEAT_STATUS_OK;
  } catch (const Error& e) {
    try { backend::cpu_backend_set_error(e.what()); } catch (...) {}
    return e.status();
  } catch (const std::bad_alloc&) {
    try { backend::cpu_backend_set_error("signature_accumulate: out of memory"); } catch (...) {}
    return PEAT_STATUS_OUT_OF_MEMORY;
  } catch (...) {
    try { backend::cpu_backend_set_error("signature_accumulate: internal error"); } catch (...) {}
    return PEAT_STATUS_INTERNAL;
  }
}

}  // namespace peat::impl::analyzer
