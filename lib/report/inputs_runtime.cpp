// Reads a runtime-FI / demo JSON report (make demo's report.json; keys in
// docs/cli.md). The reader is tolerant: known keys are read where they are
// found, loss series are found by shape under any key that names a loss,
// unknown keys are ignored.
#include "report/report.hpp"

#include "core/error.hpp"
#include "report/svg.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>

namespace peat::report {

namespace {

using nlohmann::json;

bool names_loss(const std::string& key) {
  std::string k = key;
  std::transform(k.begin(), k.end(), k.begin(), [](unsigned char c) { return std::tolower(c); });
  return k.find("loss") != std::string::npos;
}

bool generic_key(const std::string& key) {
  return key == "loss" || key == "losses" || key == "loss_series" || key == "series" || key == "values" ||
         key == "curve" || key == "loss_curve";
}

std::string scalar_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number()) return format_number(v.get<double>(), 6);
  if (v.is_null()) return "—";
  return v.dump();
}

double number_or_nan(const json& v) { return v.is_number() ? v.get<double>() : NAN; }

// Reads `j` as one series when it has a series' shape: an array of >= 2
// numbers (x = index), an array of {"step", "loss"|"value"} objects, or an
// object {"steps": [...], "loss"|"values": [...]}.
bool as_series(const json& j, NamedSeries& s) {
  if (j.is_array() && j.size() >= 2) {
    if (std::all_of(j.begin(), j.end(), [](const json& v) { return v.is_number() || v.is_null(); })) {
      for (std::size_t i = 0; i < j.size(); ++i) {
        s.x.push_back(static_cast<double>(i));
        s.y.push_back(number_or_nan(j[i]));
      }
      return true;
    }
    const auto point = [](const json& v) {
      return v.is_object() && v.contains("step") && (v.contains("loss") || v.contains("value"));
    };
    if (std::all_of(j.begin(), j.end(), point)) {
      for (const json& v : j) {
        s.x.push_back(number_or_nan(v["step"]));
        s.y.push_back(number_or_nan(v.contains("loss") ? v["loss"] : v["value"]));
      }
      return true;
    }
    return false;
  }
  if (j.is_object()) {
    const json* ys = j.contains("loss") && j["loss"].is_array()       ? &j["loss"]
                     : j.contains("values") && j["values"].is_array() ? &j["values"]
                                                                      : nullptr;
    if (ys == nullptr || ys->size() < 2) return false;
    const json* xs = j.contains("steps") && j["steps"].is_array() && j["steps"].size() == ys->size() ? &j["steps"] : nullptr;
    for (std::size_t i = 0; i < ys->size(); ++i) {
      s.x.push_back(xs ? number_or_nan((*xs)[i]) : static_cast<double>(i));
      s.y.push_back(number_or_nan((*ys)[i]));
    }
    return true;
  }
  return false;
}

std::string element_label(const json& e, std::size_t index) {
  if (e.is_object()) {
    for (const char* k : {"name", "label", "run"})
      if (e.contains(k) && e[k].is_string()) return e[k].get<std::string>();
    if (e.contains("every") && e["every"].is_number()) return "1/" + scalar_text(e["every"]);
  }
  return "#" + std::to_string(index + 1);
}

std::string join(const std::string& a, const std::string& b) { return a.empty() ? b : b.empty() ? a : a + " " + b; }

// Finds loss series anywhere under `j`.
// `direct`: the key right above `j` names a loss; deeper down (e.g. under
// "finetune") a strictly increasing array of integers is taken for a list of
// settings or steps (such as [1, 10, 100]), not a loss curve.
bool increasing_integers(const std::vector<double>& v) {
  for (std::size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i]) || v[i] != std::floor(v[i]) || (i > 0 && v[i] <= v[i - 1])) return false;
  return true;
}

void collect_series(const json& j, const std::string& label, bool under_loss, std::vector<NamedSeries>& out,
                    int depth, bool direct = false) {
  if (depth > 8) return;
  NamedSeries s;
  if (under_loss && as_series(j, s) && (direct || !increasing_integers(s.y))) {
    s.label = label.empty() ? "loss" : label;
    out.push_back(std::move(s));
    return;
  }
  if (j.is_object()) {
    for (const auto& [key, v] : j.items()) {
      if (key == "checkpoint_drift" || key == "detection") continue;
      if (depth == 0 && key == "finetune") continue;
      collect_series(v, generic_key(key) ? label : join(label, key), under_loss || names_loss(key), out, depth + 1,
                     names_loss(key));
    }
  } else if (j.is_array()) {
    for (std::size_t i = 0; i < j.size(); ++i)
      if (j[i].is_object() || j[i].is_array())
        collect_series(j[i], join(label, element_label(j[i], i)), under_loss, out, depth + 1);
  }
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
  if (c.contains("runtime_fi") && c["runtime_fi"].is_array()) {
    for (const json& r : c["runtime_fi"]) {
      if (!r.is_object()) continue;
      const auto field = [&](const char* k) { return r.contains(k) ? scalar_text(r[k]) : std::string("—"); };
      out.runtime_fi.push_back({field("every"), field("candidate_calls"), field("final_loss"), field("final_delta"),
                                field("test_accuracy"), field("beyond_band_steps"), field("inside_band")});
    }
  }
  return out;
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
    for (const auto& [key, v] : j.items()) {
      if (v.is_primitive()) r.facts.emplace_back(key, scalar_text(v));
      if (v.is_object() && key != "checkpoint_drift" && key != "finetune")
        for (const auto& [k2, v2] : v.items())
          if (v2.is_primitive()) r.facts.emplace_back(key + "." + k2, scalar_text(v2));
    }
    if (j.contains("noise_band") && j["noise_band"].is_number()) r.noise_band = j["noise_band"].get<double>();
    if (j.contains("candidates") && j["candidates"].is_array())
      for (const json& c : j["candidates"])
        if (c.is_object()) r.candidates.push_back(read_candidate(c));
    collect_series(j, "", false, r.loss, 0);
    if (j.contains("finetune")) collect_series(j["finetune"], "finetune", true, r.finetune_loss, 1);
    if (j.contains("checkpoint_drift") && j["checkpoint_drift"].is_object()) {
      for (const auto& [label, rows] : j["checkpoint_drift"].items()) {
        if (!rows.is_array())
          fail(PEAT_STATUS_CORRUPT_DATA, "{}: checkpoint_drift.{} is not an array", path, label);
        std::vector<DriftRow> out;
        for (const json& row : rows) {
          if (!row.is_object()) fail(PEAT_STATUS_CORRUPT_DATA, "{}: checkpoint_drift.{}: an entry is not an object", path, label);
          DriftRow d;
          d.tensor = row.contains("tensor") ? scalar_text(row["tensor"]) : "?";
          if (row.contains("count") && row["count"].is_number()) d.count = row["count"].get<uint64_t>();
          d.rmse = row.contains("rmse") ? number_or_nan(row["rmse"]) : NAN;
          d.relative_l2 = row.contains("relative_l2") ? number_or_nan(row["relative_l2"]) : NAN;
          d.max_abs_error = row.contains("max_abs_error") ? number_or_nan(row["max_abs_error"]) : NAN;
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

}  // namespace peat::report
