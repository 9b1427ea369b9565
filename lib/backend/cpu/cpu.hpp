// The built-in CPU backend (host memory), gathered in one folder: its table
// (table.cpp), its numeric entries (signature.cpp, inject.cpp) and the host
// implementations they run (inject_apply.cpp; the analyzer's exact signature
// pass, lib/analyzer/, with its SIMD f32 path). Registry::instance() serves this
// table as the backend named "cpu".
#pragma once

#include <peat/analyzer.h>
#include <peat/backend.h>
#include <peat/injector.h>

#include "lib/core/guard.hpp"
#include "lib/core/tensor_view.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace peat::impl::backend::cpu {

// The CPU backend's table (static storage).
const peat_backend_api_t* table() noexcept;

// Sets the message the CPU backend's last_error() returns on this thread.
void set_error(std::string message) noexcept;

// Runs a table entry's body behind the exception barrier; a failure's message
// ("<entry>: <why>") goes to the CPU backend's last_error().
template <typename Body>
peat_status_t entry(std::string_view name, Body&& body) noexcept {
  return guarded(name, [](std::string message) { set_error(std::move(message)); }, body);
}

// The table's signature_accumulate entry: analyzes and merges into
// *inout_signature / *inout_map (host memory only).
peat_status_t signature_accumulate(const DLTensor* golden, const DLTensor* candidate,
                                   const struct peat_signature_config* config,
                                   struct peat_signature* inout_signature, struct peat_spatial_map* inout_map,
                                   void* stream) noexcept;

// The table's inject entry (host memory only).
peat_status_t inject(DLTensor* tensor, const peat_inject_spec_t* spec, uint64_t seed, uint32_t op, uint32_t call,
                     peat_inject_truth_t* out_truth, void* stream) noexcept;

// Applies `spec` in place to a host tensor. `stale` is the view of spec.stale
// (or nullptr). Fills *truth completely (struct_size = sizeof). Throws
// peat::impl::Error; the tensor is unchanged on error.
void apply_inject(const peat_inject_spec_t& spec, const TensorView& tensor, const TensorView* stale, uint64_t seed,
                  uint32_t op, uint32_t call, peat_inject_truth_t& truth);

}  // namespace peat::impl::backend::cpu
