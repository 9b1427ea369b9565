// What the report says about a candidate, computed once from the model and
// used by the summary and the candidate's own section: its verdict (floor +
// anomaly over the per-call verdicts of its ops), the key parameter, the ops
// it affects, its training impact in band units and one plain sentence.
#pragma once

#include "lib/report/model.hpp"

#include <string>
#include <vector>

namespace peat::impl::report {

// True for EXACT, ROUNDING and REDUCED_PRECISION (an error's floor).
bool is_floor_model(int32_t model);

// "7.1 eff. mantissa bits (~bf16)", "bit 27 = 1 on lane 5/32", ... for a verdict.
std::string key_parameter(const peat_verdict_t& v);

// "REDUCED_PRECISION x40" / "STUCK_AT x12, ROUNDING x3": the per-call verdicts of an output.
std::string verdict_counts(const peat_playback_verdicts_t& v);

// The effective mantissa bits the verdict of an output used (its detection's
// ROUNDING / REDUCED_PRECISION verdict), NaN when it has none.
double verdict_bits(const OpOutcome& o);

struct Finding {
  std::string name;
  std::string floor, anomaly;  // model names; "" when none
  std::string verdict;         // "ROUNDING + STUCK_AT", or the runtime JSON's text
  std::string parameter;       // key parameter of the verdict that leads
  std::string ops;             // "3 of 5 ops: fc1, fc2, ..."
  std::string impact;          // "1/10: 0.4 (inside); 1/1: 3.2 (OUTSIDE)" over stages
  std::string sentence;        // one plain sentence
  bool bad = false;            // an anomaly, or training outside the noise
  const CandidatePlayback* playback = nullptr;
  const Candidate* from_json = nullptr;  // the runtime JSON's entry, when no playback was added
  std::vector<const FiRun*> fi_runs;
};

// One finding per candidate: playbacks added through the API first (in
// order), then candidates only the runtime JSON, FI runs or signatures name.
std::vector<Finding> findings(const Model& model);

}  // namespace peat::impl::report
