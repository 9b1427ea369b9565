// The sections of the report page, each a function of the model that returns
// an HTML fragment ("" when it has nothing to show). page.cpp puts them in order.
#pragma once

#include "report/model.hpp"

#include <string>

namespace peat::report {

std::string section_traces(const Model& model);
std::string section_candidates(const Model& model);
std::string section_signatures(const Model& model);
std::string section_spatial_map(const Model& model);
std::string section_playback(const Model& model);
std::string section_loss(const Model& model);
std::string section_drift(const Model& model);

// "12.3 MiB" style sizes.
std::string format_bytes(uint64_t bytes);

}  // namespace peat::report
