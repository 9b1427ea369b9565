// Reads a runtime-FI JSON report (make demo's report.json) by its schema,
// docs/schemas/runtime-fi.schema.json: the loss curves are the ones named
// under "loss_series" (and "finetune"."loss_series"), the noise band is
// "noise_band" with its rule (noise_band_reruns, noise_band_factor,
// loss_window, noise_band_rule), and every runtime-FI run is an entry of
// candidates[].runtime_fi whose "label" names its curve. Keys the schema does
// not name are ignored (top-level scalars are listed as facts).
#include "lib/report/report.hpp"

#include "lib/core/error.hpp"
#include "lib/report/svg.hpp"

#include <nlohmann/json.hpp>

#include <cmath>

namespace peat::impl::report {

namespace {

using nlohmann::json;

std::string scalar_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number()) return format_number(v.get<double>(), 6);
  if (v.is_null()) return "—";
  return v.dump();
}

double number_or_nan(const json& v) { return v.is_number() ? v.get<double>() : NAN; }

double number_at(const json& j, const char* key) { return j.is_object() && j.contains(key) ? number_or_nan(j[key]) : NAN; }

[[noreturn]] void bad(const std::string& path, const std::string& where, const std::string& what) {
  fail(PEAT_STATUS_CORRUPT_DATA, "{}: {}: {}", path, where, what);
}

// A series of the schema: {"steps": [int], "loss": [number|null]} or a plain
// array of numbers (x = index). `first_step` shifts a plain array.
NamedSeries read_series(const std::string& path, const std::string& where, const std::string& label, const json& j,
                        double first_step) {
  NamedSeries s;
  s.label = label;
  if (j.is_array()) {
    for (std::size_t i = 0; i < j.size(); ++i) {
      if (!j[i].is_number() && !j[i].is_null()) bad(path, where, "a loss is not a number");
      s.x.push_back(first_step + static_cast<double>(i));
      s.y.push_back(number_or_nan(j[i]));
    }
    return s;
  }
  if (!j.is_object() || !j.contains("loss") || !j["loss"].is_array())
    bad(path, where, "expected {\"steps\": [...], \"loss\": [...]} or an array of numbers");
  const json& ys = j["loss"];
  const json* xs = j.contains("steps") ? &j["steps"] : nullptr;
  if (xs && (!xs->is_array() || xs->size() != ys.size())) bad(path, where, "\"steps\" and \"loss\" differ in length");
  for (std::size_t i = 0; i < ys.size(); ++i) {
    if (!ys[i].is_number() && !ys[i].is_null()) bad(path, where, "a loss is not a number");
    s.x.push_back(xs ? number_or_nan((*xs)[i]) : first_step + static_cast<double>(i));
    s.y.push_back(number_or_nan(ys[i]));
  }
  return s;
}

// The impact fields of a stage object (a runtime_fi entry or its "finetune").
std::optional<peat_impact_t> read_impact(const json& st) {
  if (!st.is_object() || !(st.contains("impact") || st.contains("inside_band"))) return std::nullopt;
  peat_impact_t m{};
  m.struct_size = sizeof m;
  const bool outside = st.contains("impact") && st["impact"].is_string()
                           ? st["impact"].get<std::string>() == "OUTSIDE_NOISE"
                           : st.contains("inside_band") && st["inside_band"].is_boolean() && !st["inside_band"].get<bool>();
  m.verdict = outside ? PEAT_IMPACT_OUTSIDE_NOISE : PEAT_IMPACT_INSIDE_NOISE;
  // "effect": null is written for an infinite effect.
  m.effect = st.contains("effect") ? (st["effect"].is_null() ? INFINITY : number_or_nan(st["effect"])) : NAN;
  m.first_beyond_step = st.contains("first_beyond_step") && st["first_beyond_step"].is_number_integer()
                            ? st["first_beyond_step"].get<int64_t>()
                            : -1;
  m.beyond_count = st.contains("beyond_band_steps") && st["beyond_band_steps"].is_number_integer()
                       ? st["beyond_band_steps"].get<int64_t>()
                       : 0;
  m.final_delta = number_at(st, "final_delta");
  m.param_drift_ratio = number_at(st, "param_drift_ratio");
  m.param_drift = NAN;
  m.max_deviation = NAN;
  return m;
}

Candidate read_candidate(const json& c) {
  Candidate out;
  if (c.contains("name")) out.name = scalar_text(c["name"]);
  if (c.contains("verdict")) out.verdict = scalar_text(c["verdict"]);
  if (c.contains("detector_op")) out.detector_op = scalar_text(c["detector_op"]);
  if (c.contains("playback") && c["playback"].is_object()) {
    for (const auto& [k, v] : c["playback"].items()) out.playback += (out.playback.empty() ? "" : ", ") + k + " " + scalar_text(v);
  }
  if (c.contains("detection") && c["detection"].is_object() && c["detection"].contains("verdicts") &&
      c["detection"]["verdicts"].is_array()) {
    for (const json& v : c["detection"]["verdicts"]) {
      if (!v.is_object()) continue;
      Verdict verdict;
      if (v.contains("model")) verdict.model = scalar_text(v["model"]);
      if (v.contains("confidence") && v["confidence"].is_number()) verdict.confidence = v["confidence"].get<double>();
      if (v.contains("evidence") && v["evidence"].is_array())
        for (const json& e : v["evidence"]) verdict.evidence.push_back(scalar_text(e));
      out.verdicts.push_back(std::move(verdict));
    }
  }
  return out;
}

// One stage: its band and golden curve, the curves of loss_series that no FI
// run claims (golden reruns and others).
void read_stage(const std::string& path, const std::string& stage, const json& j, const std::string& where,
                const json* rule_source, RuntimeReport& r, std::vector<std::string>& claimed) {
  if (!j.contains("loss_series")) return;
  const json& ls = j["loss_series"];
  if (!ls.is_object()) bad(path, where + ".loss_series", "is not an object");
  const double first = j.contains("first_step") && j["first_step"].is_number() ? j["first_step"].get<double>() : 0.0;
  for (const auto& [label, v] : ls.items()) {
    NamedSeries s = read_series(path, where + ".loss_series." + label, label, v, first);
    if (label == "golden") {
      StageBand b;
      b.stage = stage;
      b.golden = std::move(s);
      b.band = number_at(j, "noise_band");
      if (rule_source) {
        const json& rs = *rule_source;
        if (rs.contains("noise_band_reruns") && rs["noise_band_reruns"].is_number_unsigned())
          b.k = rs["noise_band_reruns"].get<uint32_t>();
        b.factor = number_at(rs, "noise_band_factor");
        if (rs.contains("loss_window") && rs["loss_window"].is_number_integer()) b.window = rs["loss_window"].get<int32_t>();
        if (rs.contains("noise_band_rule") && rs["noise_band_rule"].is_string()) b.rule = rs["noise_band_rule"].get<std::string>();
      }
      r.bands.push_back(std::move(b));
      continue;
    }
    bool used = false;
    for (FiRun& f : r.fi_runs)
      if (f.stage == stage && f.label == label) {
        f.loss = s;
        used = true;
      }
    if (!used) r.other_runs.emplace_back(stage, std::move(s));
  }
  (void)claimed;
}

}  // namespace

RuntimeReport read_runtime_json(const std::string& path, const std::string& text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    fail(PEAT_STATUS_CORRUPT_DATA, "{}: not JSON: {}", path, e.what());
  }
  if (!j.is_object()) fail(PEAT_STATUS_CORRUPT_DATA, "{}: the top level is not a JSON object", path);
  RuntimeReport r;
  r.path = path;
  try {
    for (const auto& [key, v] : j.items())
      if (v.is_primitive() && key != "noise_band_rule") r.facts.emplace_back(key, scalar_text(v));
    if (j.contains("candidates")) {
      if (!j["candidates"].is_array()) bad(path, "candidates", "is not an array");
      for (const json& c : j["candidates"]) {
        if (!c.is_object()) bad(path, "candidates", "an entry is not an object");
        Candidate cand = read_candidate(c);
        if (c.contains("runtime_fi") && c["runtime_fi"].is_array()) {
          for (const json& e : c["runtime_fi"]) {
            if (!e.is_object()) bad(path, "candidates." + cand.name + ".runtime_fi", "an entry is not an object");
            FiRun f;
            f.candidate = cand.name;
            if (e.contains("every") && e["every"].is_number_unsigned()) f.every = e["every"].get<uint64_t>();
            f.label = e.contains("label") && e["label"].is_string()
                          ? e["label"].get<std::string>()
                          : cand.name + (f.every ? " 1/" + std::to_string(f.every) : std::string());
            if (e.contains("candidate_calls") && e["candidate_calls"].is_number_integer())
              f.candidate_calls = e["candidate_calls"].get<int64_t>();
            f.stage = "pretrain";  // make demo's two stages: pretrain, finetune
            f.impact = read_impact(e);
            f.test_accuracy = number_at(e, "test_accuracy");
            r.fi_runs.push_back(f);
            if (e.contains("finetune") && e["finetune"].is_object() && !e["finetune"].empty()) {
              FiRun ft = f;
              ft.stage = "finetune";
              ft.impact = read_impact(e["finetune"]);
              ft.test_accuracy = number_at(e["finetune"], "test_accuracy");
              r.fi_runs.push_back(std::move(ft));
            }
          }
        }
        r.candidates.push_back(std::move(cand));
      }
    }
    std::vector<std::string> claimed;
    read_stage(path, "pretrain", j, "loss_series", &j, r, claimed);
    if (j.contains("finetune") && j["finetune"].is_object())
      read_stage(path, "finetune", j["finetune"], "finetune", &j, r, claimed);
    if (j.contains("checkpoint_drift")) {
      if (!j["checkpoint_drift"].is_object()) bad(path, "checkpoint_drift", "is not an object");
      for (const auto& [label, rows] : j["checkpoint_drift"].items()) {
        if (!rows.is_array()) bad(path, "checkpoint_drift." + label, "is not an array");
        std::vector<DriftRow> out;
        for (const json& row : rows) {
          if (!row.is_object()) bad(path, "checkpoint_drift." + label, "an entry is not an object");
          DriftRow d;
          d.tensor = row.contains("tensor") ? scalar_text(row["tensor"]) : "?";
          if (row.contains("count") && row["count"].is_number()) d.count = row["count"].get<uint64_t>();
          d.rmse = number_at(row, "rmse");
          d.relative_l2 = number_at(row, "relative_l2");
          d.max_abs_error = number_at(row, "max_abs_error");
          out.push_back(std::move(d));
        }
        r.drift.emplace_back(label, std::move(out));
      }
    }
  } catch (const json::exception& e) {
    fail(PEAT_STATUS_CORRUPT_DATA, "{}: unexpected value: {}", path, e.what());
  }
  return r;
}

}  // namespace peat::impl::report
