// The runtime reports' top-level facts (inventory) and the checkpoint drift
// per parameter tensor.
#include "lib/report/charts.hpp"
#include "lib/report/html_table.hpp"
#include "lib/report/sections.hpp"
#include "lib/report/svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace peat::impl::report {

std::string section_runtime_facts(const Model& model) {
  std::string out;
  std::size_t k = 0;
  for (const RuntimeReport& r : model.runtime) {
    ++k;
    out += "<h3>Runtime report " + escape_html(r.path) + "</h3>";
    HtmlTable facts(fmt::format("runtime-{}-facts", k), {"key", "value"});
    for (const auto& [key, v] : r.facts) facts.add_row({key, v});
    if (facts.rows()) out += facts.render(model.max_table_rows);
  }
  return out;
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

}  // namespace peat::impl::report
