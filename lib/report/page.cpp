// The page: head with the inline style sheet, a table of contents, the
// sections. No script, no external resource: the file is the whole report.
#include "lib/report/report.hpp"
#include "lib/report/sections.hpp"
#include "lib/report/svg.hpp"

#include "lib/core/version.hpp"

#include <peat/core.h>

#include <fmt/format.h>

namespace peat::impl::report {

namespace {

const char* kStyle = R"(
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1200px;padding:0 16px 40px;color:#222;font-size:14px;line-height:1.4}
h1{font-size:22px;margin:18px 0 4px}h2{font-size:18px;border-bottom:2px solid #ddd;padding-bottom:3px;margin-top:28px}
h3{font-size:15px;margin:16px 0 6px}.meta{color:#666;font-size:12px}
table{border-collapse:collapse;margin:6px 0 12px;font-size:12px;width:auto;max-width:100%}
th,td{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f2f2f2}td{font-variant-numeric:tabular-nums}tr.bad td{background:#fde8e8}tr.more td{color:#666;font-style:italic}
.charts{display:flex;flex-wrap:wrap;gap:12px}svg.chart{max-width:100%;height:auto;border:1px solid #eee;background:#fff}
svg.chart text{font-family:inherit;fill:#222}nav ul{columns:2;font-size:13px}.note{color:#555;font-size:12px}
@media print{body{max-width:none;font-size:11px}h2{break-before:auto}section,svg.chart,table{break-inside:avoid}nav{display:none}}
)";

struct Entry {
  std::string id;
  std::string title;  // HTML (escaped where it holds input)
  std::string html;
};

}  // namespace

std::string format_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", v, units[u]);
}

std::string render_page(const Model& model) {
  const std::vector<Finding> found = findings(model);
  // Findings first, the inventory of the inputs last.
  std::vector<Entry> entries;
  entries.push_back({"summary", "Summary", section_summary(model, found)});
  for (std::size_t i = 0; i < found.size(); ++i)
    entries.push_back({fmt::format("candidate-{}", i + 1), "Candidate " + escape_html(found[i].name),
                       section_candidate(model, found[i], i + 1)});
  entries.push_back({"impact", "Training impact of the runtime-FI runs", section_impact(model)});
  entries.push_back({"drift", "Checkpoint drift", section_drift(model)});
  entries.push_back({"signatures", "Error signatures", section_signatures(model)});
  entries.push_back({"spatial", "Spatial mismatch map of the worst call", section_spatial_map(model)});
  std::string inventory = section_traces(model) + section_playback(model) + section_runtime_facts(model);
  entries.push_back({"inventory", "Inputs: traces, playback runs, runtime reports", std::move(inventory)});
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">";
  out += "<title>" + escape_html(model.title) + "</title><style>" + kStyle + "</style></head><body>";
  out += "<h1>" + escape_html(model.title) + "</h1>";
  out += fmt::format("<p class=\"meta\">Written by PEAT {} from {} trace(s), {} playback run(s), {} runtime-FI report(s), "
                     "{} signature group(s), {} playback(s) and {} runtime-FI run(s) added through the API.</p>",
                     escape_html(version_string()), model.traces.size(), model.playback.size(), model.runtime.size(),
                     model.signatures.size(), model.candidates.size(), model.fi_runs.size());
  const auto section = [](const Entry& e) {
    return fmt::format("<section id=\"{}\"><h2>{}</h2>{}</section>", e.id, e.title, e.html);
  };
  // The summary comes first, before the table of contents of the rest.
  if (!entries[0].html.empty()) out += section(entries[0]);
  out += "<nav><ul>";
  bool any = !entries[0].html.empty();
  for (std::size_t i = 1; i < entries.size(); ++i)
    if (!entries[i].html.empty()) {
      out += fmt::format("<li><a href=\"#{}\">{}</a></li>", entries[i].id, entries[i].title);
      any = true;
    }
  out += "</ul></nav>";
  if (!any) out += "<p class=\"note\">Nothing to show: no input was added.</p>";
  for (std::size_t i = 1; i < entries.size(); ++i)
    if (!entries[i].html.empty()) out += section(entries[i]);
  out += "</body></html>\n";
  return out;
}

}  // namespace peat::impl::report
