#include "lib/core/error_model.hpp"
#include "lib/report/findings.hpp"

#include "lib/detector/detector.hpp"
#include "lib/report/svg.hpp"

#include <peat/injector.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

namespace peat::impl::report {

namespace {

const char* model_name(int32_t m) { return m < 0 ? "—" : error_model_name(m); }

std::string bits_text(uint64_t bits) {
  std::string out;
  int n = 0;
  for (int b = 0; b < 64; ++b)
    if (bits >> b & 1) out += (n++ ? ", " : "") + std::to_string(b);
  return n == 0 ? "" : (n == 1 ? "bit " : "bits {") + out + (n == 1 ? "" : "}");
}

std::string impact_text(const FiRun& f) {
  const std::string when = f.every ? "1/" + std::to_string(f.every) : f.label;
  if (!f.impact) return when + ": not judged";
  const peat_impact_t& m = *f.impact;
  const std::string effect = std::isfinite(m.effect) ? format_number(m.effect, 2) : std::isnan(m.effect) ? "?" : "∞";
  return fmt::format("{} {}{}", when, effect, m.verdict == PEAT_IMPACT_OUTSIDE_NOISE ? " OUTSIDE" : "");
}

// What a model means, in words, for the sentence.
std::string model_words(int32_t m, const std::string& parameter) {
  switch (m) {
    case PEAT_ERROR_MODEL_EXACT: return "matches golden bit for bit";
    case PEAT_ERROR_MODEL_ROUNDING: return "differs from golden by rounding only (another summation order)";
    case PEAT_ERROR_MODEL_REDUCED_PRECISION:
      return "behaves like rounding to a narrower format" + (parameter.empty() ? "" : " (" + parameter + ")");
    case PEAT_ERROR_MODEL_STUCK_AT: return "has a stuck bit" + (parameter.empty() ? "" : " (" + parameter + ")");
    case PEAT_ERROR_MODEL_REGION:
      return "corrupts a region of its output" + (parameter.empty() ? "" : " (" + parameter + ")");
    case PEAT_ERROR_MODEL_DROPPED_WRITES: return "drops writes (zeros or stale values where results belong)";
    case PEAT_ERROR_MODEL_BITFLIP_SINGLE: return "flips single bits";
    case PEAT_ERROR_MODEL_BITFLIP_MULTI: return "flips several bits";
    case PEAT_ERROR_MODEL_SCALING: return "scales its output" + (parameter.empty() ? "" : " (" + parameter + ")");
    case PEAT_ERROR_MODEL_NONFINITE: return "produces new NaN or Inf values";
    case PEAT_ERROR_MODEL_NONDETERMINISM: return "gives different results on the same input";
    case PEAT_ERROR_MODEL_GARBAGE: return "produces values unrelated to golden";
    default: return "shows an error no model explains";
  }
}

}  // namespace

bool is_floor_model(int32_t m) {
  return m == PEAT_ERROR_MODEL_EXACT || m == PEAT_ERROR_MODEL_ROUNDING || m == PEAT_ERROR_MODEL_REDUCED_PRECISION;
}

std::string key_parameter(const peat_verdict_t& v) {
  switch (v.model) {
    case PEAT_ERROR_MODEL_REDUCED_PRECISION:
    case PEAT_ERROR_MODEL_ROUNDING:
      return fmt::format("{:.1f} eff. mantissa bits{}", v.effective_mantissa_bits,
                         v.nearest_format >= 0 ? std::string(" (~") + detector::format_name(v.nearest_format) + ")" : "");
    case PEAT_ERROR_MODEL_STUCK_AT:
      return fmt::format("bit {} = {}{}", v.bit, v.polarity,
                         v.lane_period > 0 ? fmt::format(" on lane {}/{}", v.lane, v.lane_period) : std::string());
    case PEAT_ERROR_MODEL_BITFLIP_SINGLE:
    case PEAT_ERROR_MODEL_BITFLIP_MULTI:
      return v.bit >= 0 ? fmt::format("bit {}", v.bit) : "";
    case PEAT_ERROR_MODEL_REGION:
    case PEAT_ERROR_MODEL_DROPPED_WRITES:
      if (v.rows_affected < 0) return fmt::format("{} elements", v.elements);
      return fmt::format("{} rows x {} cols, {} tiles", v.rows_affected, v.cols_affected, v.tiles_affected);
    case PEAT_ERROR_MODEL_SCALING: return fmt::format("alpha {:.4g}", v.alpha);
    default: return "";
  }
}

std::string verdict_counts(const peat_playback_verdicts_t& v) {
  std::vector<std::pair<uint64_t, int>> by;
  for (int m = 0; m < PEAT_PLAYBACK_MODEL_SLOTS; ++m)
    if (v.counts[m]) by.emplace_back(v.counts[m], m);
  std::stable_sort(by.begin(), by.end(), [](auto& a, auto& b) { return a.first > b.first; });
  std::string out;
  for (const auto& [n, m] : by) out += (out.empty() ? "" : ", ") + fmt::format("{} x{}", model_name(m), n);
  const std::string bits = bits_text(v.bits);
  return out.empty() ? "not judged" : bits.empty() ? out : out + "; " + bits;
}

double verdict_bits(const OpOutcome& o) {
  if (!o.detection) return NAN;
  for (int i = 0; i < o.detection->verdict_count && i < PEAT_DETECT_MAX_VERDICTS; ++i) {
    const peat_verdict_t& v = o.detection->verdicts[i];
    if (v.model == PEAT_ERROR_MODEL_ROUNDING || v.model == PEAT_ERROR_MODEL_REDUCED_PRECISION)
      return v.effective_mantissa_bits;
  }
  return NAN;
}

namespace {

void from_playback(Finding& f, const CandidatePlayback& c) {
  // Calls per top-verdict model over every op output; the anomaly leads.
  std::array<uint64_t, PEAT_PLAYBACK_MODEL_SLOTS> calls{};
  std::size_t affected = 0;
  std::vector<std::string> names;
  for (const OpOutcome& o : c.ops) {
    for (int m = 0; m < PEAT_PLAYBACK_MODEL_SLOTS; ++m) calls[m] += o.verdicts.counts[m];
    if (o.exact < o.records - o.failed || o.failed) {
      ++affected;
      if (names.size() < 3) names.push_back(o.op);
    }
  }
  // The floor is the widest error floor any call shows (REDUCED_PRECISION >
  // ROUNDING > EXACT); the anomaly the most frequent other model.
  int floor = -1, anomaly = -1;
  for (int m = 0; m < PEAT_PLAYBACK_MODEL_SLOTS; ++m) {
    if (!calls[m]) continue;
    if (is_floor_model(m)) {
      floor = std::max(floor, m);
    } else if (anomaly < 0 || calls[m] > calls[anomaly]) {
      anomaly = m;
    }
  }
  // An anomaly's calls name no floor: take it from the secondary verdicts.
  if (floor < 0)
    for (const OpOutcome& o : c.ops)
      if (o.detection)
        for (int i = 1; i < o.detection->verdict_count && floor < 0; ++i)
          if (is_floor_model(o.detection->verdicts[i].model)) floor = o.detection->verdicts[i].model;
  f.floor = floor >= 0 ? model_name(floor) : "";
  f.anomaly = anomaly >= 0 ? model_name(anomaly) : "";
  uint64_t judged = 0;
  for (uint64_t n : calls) judged += n;
  if (f.anomaly.empty())
    f.verdict = f.floor.empty() ? "not judged" : f.floor;
  else if (f.floor.empty() || floor == PEAT_ERROR_MODEL_EXACT)
    f.verdict = fmt::format("{} ({} of {} calls{})", f.anomaly, calls[anomaly], judged, f.floor.empty() ? "" : "; the rest exact");
  else
    f.verdict = fmt::format("{} + {} ({} of {} calls)", f.floor, f.anomaly, calls[anomaly], judged);
  // The key parameter: of the leading model, from the output with most such calls.
  const int lead = anomaly >= 0 ? anomaly : floor;
  const OpOutcome* best = nullptr;
  for (const OpOutcome& o : c.ops)
    if (lead >= 0 && o.detection && o.detection->verdict_count > 0 && o.detection->verdicts[0].model == lead &&
        (!best || o.verdicts.counts[lead] > best->verdicts.counts[lead]))
      best = &o;
  if (best) {
    f.parameter = key_parameter(best->detection->verdicts[0]);
    if (anomaly >= 0 && f.parameter.find("bit") == std::string::npos) {
      const std::string bits = bits_text(best->verdicts.bits);
      if (!bits.empty() && (anomaly == PEAT_ERROR_MODEL_BITFLIP_SINGLE || anomaly == PEAT_ERROR_MODEL_BITFLIP_MULTI))
        f.parameter = bits;
    }
    f.parameter = best->op + (f.parameter.empty() ? "" : ": " + f.parameter);
  }
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  f.ops = fmt::format("{} of {}{}{}", affected, c.ops.size(), list.empty() ? "" : ": " + list,
                      affected > names.size() ? ", …" : "");
  f.bad = anomaly >= 0 || c.failed > 0;
  f.sentence = model_words(lead, best ? key_parameter(best->detection->verdicts[0]) : "");
  if (anomaly >= 0 && floor >= 0 && floor != PEAT_ERROR_MODEL_EXACT)
    f.sentence += ", on top of " + std::string(floor == PEAT_ERROR_MODEL_ROUNDING ? "rounding noise" : "reduced precision");
  if (c.failed) f.sentence += fmt::format("; {} replayed calls failed", c.failed);
}

}  // namespace

std::vector<Finding> findings(const Model& model) {
  std::vector<Finding> out;
  const auto find = [&](const std::string& name) -> Finding* {
    for (Finding& f : out)
      if (f.name == name) return &f;
    return nullptr;
  };
  for (const CandidatePlayback& c : model.candidates) {
    Finding f;
    f.name = c.name;
    f.playback = &c;
    from_playback(f, c);
    out.push_back(std::move(f));
  }
  for (const RuntimeReport& r : model.runtime)
    for (const Candidate& c : r.candidates) {
      Finding* f = find(c.name);
      if (f == nullptr) {
        out.emplace_back();
        f = &out.back();
        f->name = c.name;
        f->verdict = c.verdict.empty() ? "—" : c.verdict;
        f->anomaly = !c.verdicts.empty() && !c.verdicts[0].model.empty() && c.verdicts[0].model != "EXACT" &&
                             c.verdicts[0].model != "ROUNDING" && c.verdicts[0].model != "REDUCED_PRECISION"
                         ? c.verdicts[0].model
                         : "";
        f->bad = !f->anomaly.empty();
        f->ops = c.detector_op.empty() ? "—" : "first call of " + c.detector_op + " (not replayed here)";
        f->sentence = "Verdict of the runtime report (one call, not replayed in this report)";
      }
      if (f->from_json == nullptr) f->from_json = &c;
    }
  for (const FiRun& run : model.fi_runs) {
    Finding* f = find(run.candidate);
    if (f == nullptr) {
      out.emplace_back();
      f = &out.back();
      f->name = run.candidate;
      f->verdict = "—";
      f->ops = "—";
      f->sentence = "No playback of this candidate was added";
    }
    f->fi_runs.push_back(&run);
  }
  for (const SignatureGroup& g : model.signatures)
    if (find(g.source) == nullptr) {
      Finding f;
      f.name = g.source;
      f.verdict = g.detection && g.detection->verdict_count > 0 ? model_name(g.detection->verdicts[0].model) : "—";
      f.ops = "see the signatures section";
      f.sentence = "Signatures added one by one";
      out.push_back(std::move(f));
    }
  // Training impact per stage, and the closing words of the sentence: a
  // frequency stays inside the noise when it does in every stage, and leaves
  // it when it does in any (the stages named).
  for (Finding& f : out) {
    std::vector<std::string> stages, whens;
    for (const FiRun* r : f.fi_runs) {
      if (std::find(stages.begin(), stages.end(), r->stage) == stages.end()) stages.push_back(r->stage);
      const std::string when = r->every ? "1/" + std::to_string(r->every) : r->label;
      if (std::find(whens.begin(), whens.end(), when) == whens.end()) whens.push_back(when);
    }
    for (const std::string& st : stages) {
      std::string part;
      for (const FiRun* r : f.fi_runs)
        if (r->stage == st) part += (part.empty() ? "" : " · ") + impact_text(*r);
      f.impact += (f.impact.empty() ? "" : " | ") + (stages.size() > 1 ? st + ": " : std::string()) + part;
    }
    std::string inside, outside;
    for (const std::string& when : whens) {
      std::vector<std::string> left;
      std::size_t judged = 0;
      for (const FiRun* r : f.fi_runs) {
        const std::string w = r->every ? "1/" + std::to_string(r->every) : r->label;
        if (w != when || !r->impact) continue;
        ++judged;
        if (r->impact->verdict == PEAT_IMPACT_OUTSIDE_NOISE) left.push_back(r->stage);
      }
      if (judged == 0) continue;
      if (left.empty()) {
        inside += (inside.empty() ? "" : ", ") + when;
        continue;
      }
      f.bad = true;
      std::string where;
      if (left.size() < judged)  // name the stages only where some stayed inside
        for (const auto& st : left) where += (where.empty() ? " (" : ", ") + st;
      outside += (outside.empty() ? "" : ", ") + when + (where.empty() ? "" : where + ")");
    }
    if (f.impact.empty()) f.impact = "not measured";
    if (!inside.empty() || !outside.empty()) {
      f.sentence += "; training";
      if (!inside.empty()) f.sentence += " stays inside run-to-run noise at " + inside;
      if (!inside.empty() && !outside.empty()) f.sentence += " and";
      if (!outside.empty()) f.sentence += " leaves it at " + outside;
    }
    f.sentence += ".";
    if (!f.sentence.empty()) f.sentence[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(f.sentence[0])));
  }
  return out;
}

}  // namespace peat::impl::report
