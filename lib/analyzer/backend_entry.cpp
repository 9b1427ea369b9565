// The CPU backend's signature_accumulate table entry (host memory).
#include "analyzer/accumulate.hpp"
#include "analyzer/analyze.hpp"
#include "backend/backend.hpp"
#include "core/error.hpp"

#include <fmt/format.h>

#include <new>

namespace peat::analyzer {

peat_status_t cpu_signature_accumulate(const DLTensor* golden, const DLTensor* candidate,
                                       const struct peat_signature_config* config,
                                       struct peat_signature* inout_signature, struct peat_spatial_map* inout_map,
                                       void* /*stream*/) noexcept {
  try {
    accumulate(golden, candidate, config, inout_signature, inout_map);
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
