// The error-model library (see peat/injector.h, "Error models"): spec
// defaults and validation, the CPU implementation over oneTBB, and the
// backend-generic entry that peat_inject_apply and the scheduler use.
#pragma once

#include <peat/injector.h>

#include "lib/core/tensor_view.hpp"
#include "lib/core/versioned_struct.hpp"

#include <string>
#include <string_view>

namespace peat::impl::injector {

// The defaults of peat_inject_spec_init for `kind`.
peat_inject_spec_t default_spec(peat_inject_kind_t kind) noexcept;

// Reads a caller's spec (struct_size rules of option structs). `name` names
// the argument in messages. Throws VERSION_MISMATCH / INVALID_ARGUMENT.
peat_inject_spec_t read_spec(const peat_inject_spec_t* spec, std::string_view name);

// Checks every field that does not depend on a tensor (enums, ranges).
// Throws INVALID_ARGUMENT naming `name`.field.
void validate_spec(const peat_inject_spec_t& spec, std::string_view name);

// The error-model class an injection with this spec produces.
peat_error_model_t model_of(const peat_inject_spec_t& spec) noexcept;

// Backend-generic: optionally copies `source` into `tensor`, then applies the
// spec on the backend serving the tensor's device. Throws peat::impl::Error.
void apply(const peat_inject_spec_t& spec, DLTensor* tensor, const DLTensor* source, uint64_t seed, uint32_t op,
           uint32_t call, peat_inject_truth_t& truth);

// An empty truth (peat_inject_truth_init).
peat_inject_truth_t empty_truth() noexcept;

// Writes a full truth into a caller's struct by the versioned rule
// (core/versioned_struct.hpp). Throws VERSION_MISMATCH for a bad struct_size.

void copy_truth_out(const peat_inject_truth_t& full, peat_inject_truth_t* dst, std::string_view name);

// Runs `inject(truth)` on a full truth, then writes it into the caller's
// optional `out_truth` (peat_inject_apply, peat_injector_inject), whose
// struct_size is checked first, before the tensor is touched.
template <typename Inject>
void with_truth_out(peat_inject_truth_t* out_truth, Inject&& inject) {
  if (out_truth) require_struct(out_truth, "out_truth");
  peat_inject_truth_t full{};
  inject(full);
  if (out_truth) copy_truth_out(full, out_truth, "out_truth");
}

// peat_inject_round_value: checks the codes as a PRECISION spec's (INVALID_ARGUMENT), then rounds.
double checked_round_value(double value, peat_float_format_t format, peat_rounding_t rounding, int32_t saturate);
// Rounds one value to a narrow format (peat_inject_round_value); the
// arguments are valid codes.
double round_value(double value, peat_float_format_t format, peat_rounding_t rounding, bool saturate) noexcept;

// Names behind peat_inject_kind_name and peat_action_name (the error models'
// are lib/core/error_model.hpp's):
// "unknown" for values outside the enums. Static storage.
const char* kind_name(peat_inject_kind_t kind) noexcept;
const char* action_name(peat_action_t action) noexcept;

}  // namespace peat::impl::injector
