// Rendering of per-op verdicts (playback and compare) as a text table, JSON
// and CSV rows.
#pragma once

#include <peat/peat.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace peat::cli {

// The top verdict as "MODEL (confidence)" or "-" when none.
std::string top_verdict(const peat_detection_t& d, bool detected);

// The bits set in a peat_playback_verdicts_t.bits mask, lowest first.
std::vector<int> bits_of(uint64_t mask);

// "BITFLIP_SINGLE 40/40 bits 22,29" of a group output's per-call verdicts
// ("" when no call was judged).
std::string per_call_text(const peat_playback_verdicts_t& v);
// The verdicts with model, confidence, parameters and evidence lines.
nlohmann::json verdicts_json(const peat_detection_t& d, bool detected);
// Signature figures: elements, mismatches, tolerance failures, errors, relative L2.
nlohmann::json signature_json(const peat_signature_t& s);
double relative_l2(const peat_signature_t& s);
// CSV quoting of one field.
std::string csv(const std::string& field);

}  // namespace peat::cli
