// The sections of the report page, each a function of the model that returns
// an HTML fragment ("" when it has nothing to show). page.cpp puts them in order.
#pragma once

#include "lib/report/findings.hpp"
#include "lib/report/model.hpp"

#include <string>

namespace peat::impl::report {

// Findings first (sections_findings.cpp).
std::string section_summary(const Model& model, const std::vector<Finding>& found);
std::string section_candidate(const Model& model, const Finding& f, std::size_t n);
std::string section_impact(const Model& model);
std::string section_drift(const Model& model);
// Signatures and maps added one by one (peat_report_add_signature / _spatial_map).
std::string section_signatures(const Model& model);
std::string section_spatial_map(const Model& model);
// The inventory, last: traces, playback JSON lines, runtime reports' facts.
std::string section_traces(const Model& model);
std::string section_playback(const Model& model);
std::string section_runtime_facts(const Model& model);

// A spatial map folded to at most 48 x 48 cells, with row and column labels.
std::string spatial_map_chart(const SpatialMapCopy& map, const std::string& id);

// "12.3 MiB" style sizes.
std::string format_bytes(uint64_t bytes);

}  // namespace peat::impl::report
