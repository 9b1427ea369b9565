// Runtime-FI sections: candidates with verdicts and evidence, loss curves
// (golden vs runtime FI, with the noise band; the finetune stage), and the
// checkpoint drift per parameter tensor.
#include "report/charts.hpp"
#include "report/html_table.hpp"
#include "report/sections.hpp"
#include "report/svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

namespace peat::report {

namespace {

bool contains_ci(std::string s, const char* what) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s.find(what) != std::string::npos;
}

LineSeries to_line(const NamedSeries& s) { return {s.label, s.x, s.y, false}; }

// Lines plus golden +- noise band (when the runtime report gives a band).
std::string loss_chart(const std::string& id, const std::string& title, std::vector<LineSeries> lines,
                       std::optional<double> band) {
  std::optional<Band> b;
  if (band && *band > 0) {
    auto golden = std::find_if(lines.begin(), lines.end(), [](const LineSeries& s) { return contains_ci(s.label, "golden"); });
    if (golden == lines.end() && !lines.empty()) golden = lines.begin();
    if (golden != lines.end()) {
      Band nb;
      nb.label = "golden ± noise band " + format_number(*band, 3);
      nb.x = golden->x;
      for (double y : golden->y) nb.lo.push_back(y - *band), nb.hi.push_back(y + *band);
      b = std::move(nb);
    }
  }
  for (auto& l : lines) l.dashed = !contains_ci(l.label, "golden");
  return line_chart(id, title, lines, b, "training step", "loss", false);
}

}  // namespace

std::string section_candidates(const Model& model) {
  std::string out;
  std::size_t k = 0;
  for (const RuntimeReport& r : model.runtime) {
    ++k;
    out += "<h3>" + escape_html(r.path) + "</h3>";
    HtmlTable facts(fmt::format("runtime-{}-facts", k), {"key", "value"});
    for (const auto& [key, v] : r.facts) facts.add_row({key, v});
    if (facts.rows()) out += facts.render(model.max_table_rows);
    if (r.candidates.empty()) continue;
    HtmlTable c(fmt::format("runtime-{}-candidates", k), {"candidate", "verdict (key parameter)", "detector op", "playback"});
    HtmlTable ev(fmt::format("runtime-{}-evidence", k), {"candidate", "rank", "model", "confidence", "evidence"});
    HtmlTable fi(fmt::format("runtime-{}-fi", k), {"candidate", "every", "candidate calls", "final loss", "Δ vs golden",
                                                    "test accuracy", "steps beyond band", "inside band"});
    for (const Candidate& cand : r.candidates) {
      c.add_row({cand.name, cand.verdict, cand.detector_op, cand.playback});
      for (std::size_t i = 0; i < cand.verdicts.size(); ++i) {
        std::string e;
        for (std::size_t j = 0; j < cand.verdicts[i].evidence.size(); ++j) e += (j ? " | " : "") + cand.verdicts[i].evidence[j];
        ev.add_row({cand.name, std::to_string(i + 1), cand.verdicts[i].model, format_number(cand.verdicts[i].confidence, 3), e});
      }
      for (const RuntimeFiRow& row : cand.runtime_fi)
        fi.add_row({cand.name, "1/" + row.every, row.candidate_calls, row.final_loss, row.final_delta, row.test_accuracy,
                    row.beyond, row.inside},
                   row.inside == "false" ? "bad" : "");
    }
    out += c.render(model.max_table_rows);
    if (ev.rows()) out += "<h3>Detector evidence</h3>" + ev.render(model.max_table_rows);
    if (fi.rows()) out += "<h3>Runtime FI</h3>" + fi.render(model.max_table_rows);
  }
  return out;
}

std::string section_loss(const Model& model) {
  std::vector<LineSeries> lines, finetune;
  std::optional<double> band;
  bool golden_from_runtime = false;
  for (const RuntimeReport& r : model.runtime) {
    for (const auto& s : r.loss) {
      lines.push_back(to_line(s));
      golden_from_runtime = golden_from_runtime || contains_ci(s.label, "golden");
    }
    for (const auto& s : r.finetune_loss) finetune.push_back(to_line(s));
    if (r.noise_band) band = r.noise_band;
  }
  // The trace's recorded loss is the golden curve when the runtime report has none.
  if (!golden_from_runtime)
    for (const TraceSummary& t : model.traces)
      for (const auto& [name, s] : t.scalars)
        if (contains_ci(name, "loss")) {
          LineSeries l = to_line(s);
          l.label = "golden " + name + " (trace)";
          lines.insert(lines.begin(), std::move(l));
        }
  if (lines.empty() && finetune.empty()) return "";
  std::string out = "<p class=\"note\">Solid: golden; dashed: runtime FI runs. ";
  out += band ? "The grey band is the golden curve ± the noise band of the runtime report (the spread between golden "
                "runs); a curve that leaves it is affected beyond run-to-run noise.</p>"
              : "No noise band was given.</p>";
  out += "<div class=\"charts\">";
  if (!lines.empty()) out += loss_chart("chart-loss", "loss per step: golden vs runtime FI", lines, band);
  if (!finetune.empty()) out += loss_chart("chart-finetune-loss", "finetune stage: loss per step", finetune, band);
  return out + "</div>";
}

std::string section_drift(const Model& model) {
  std::string out;
  std::vector<std::string> runs, tensors;
  std::vector<const RuntimeReport*> sources;
  for (const RuntimeReport& r : model.runtime)
    for (const auto& [label, rows] : r.drift) {
      runs.push_back(label);
      for (const DriftRow& d : rows)
        if (std::find(tensors.begin(), tensors.end(), d.tensor) == tensors.end()) tensors.push_back(d.tensor);
    }
  if (runs.empty()) return "";
  std::vector<double> values(runs.size() * tensors.size(), 0.0);
  HtmlTable t("drift", {"run", "tensor", "elements", "RMSE", "relative L2", "max abs error"});
  std::size_t i = 0;
  for (const RuntimeReport& r : model.runtime)
    for (const auto& [label, rows] : r.drift) {
      for (const DriftRow& d : rows) {
        const auto c = static_cast<std::size_t>(std::find(tensors.begin(), tensors.end(), d.tensor) - tensors.begin());
        values[i * tensors.size() + c] = std::isfinite(d.relative_l2) ? d.relative_l2 : 0.0;
        t.add_row({label, d.tensor, std::to_string(d.count), format_number(d.rmse), format_number(d.relative_l2),
                   format_number(d.max_abs_error)});
      }
      ++i;
    }
  out += "<p class=\"note\">Relative L2 distance of each parameter tensor between the run's final checkpoint and the "
         "golden run's.</p>";
  out += heat_map("chart-drift", "checkpoint drift: relative L2 per parameter tensor", runs.size(), tensors.size(), values,
                  runs, tensors, "parameter tensor", true);
  return out + t.render(model.max_table_rows);
}

}  // namespace peat::report
