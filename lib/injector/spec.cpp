// The injection spec on the CPU side: its defaults, reading and checks (the
// shared host plan, backends/common/inject_plan.hpp, thrown as peat::impl::Error),
// the ground truth's versioned output and the single-value rounding.
#include "lib/injector/inject.hpp"

#include "lib/core/error.hpp"
#include "lib/core/versioned_struct.hpp"

#include "backends/common/inject_plan.hpp"
#include "backends/common/precision.h"

namespace peat::impl::injector {

namespace {
void check(const Problem& p) {
  if (!p.ok()) throw Error(p.status, p.message);
}
}  // namespace

peat_inject_spec_t default_spec(peat_inject_kind_t kind) noexcept { return inject_plan::default_spec(kind); }

peat_inject_spec_t read_spec(const peat_inject_spec_t* spec, std::string_view name) {
  peat_inject_spec_t s;
  check(inject_plan::read_spec(spec, name, s));
  return s;
}

void validate_spec(const peat_inject_spec_t& s, std::string_view name) { check(inject_plan::validate(s, name)); }

peat_error_model_t model_of(const peat_inject_spec_t& s) noexcept { return inject_plan::model_of(s); }

peat_inject_truth_t empty_truth() noexcept { return zeroed_struct<peat_inject_truth_t>(); }

void copy_truth_out(const peat_inject_truth_t& full, peat_inject_truth_t* dst, std::string_view name) {
  write_versioned(dst, full, name);
}

double checked_round_value(double value, peat_float_format_t format, peat_rounding_t rounding, int32_t saturate) {
  peat_inject_spec_t s = default_spec(PEAT_INJECT_PRECISION);
  s.format = format;
  s.rounding = rounding;
  s.saturate = saturate;
  validate_spec(s, "arguments");
  return round_value(value, format, rounding, saturate != 0);
}

double round_value(double value, peat_float_format_t format, peat_rounding_t rounding, bool saturate) noexcept {
  hd::FloatFormat f{};
  if (!hd::format_by_code(format, f)) return value;
  return hd::round_to_format(value, f, rounding, saturate);
}

}  // namespace peat::impl::injector
