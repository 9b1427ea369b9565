// Playback section: per-op figures of each run and its error over training
// steps (max relative error of every replayed record).
#include "lib/report/charts.hpp"
#include "lib/report/html_table.hpp"
#include "lib/report/sections.hpp"
#include "lib/report/svg.hpp"

#include <fmt/format.h>

#include <map>

namespace peat::impl::report {

namespace {

// peat_playback_write_jsonl writes "ok"; other writers may say "OK".
bool is_ok(const std::string& status) { return status == "ok" || status == "OK" || status == "PEAT_STATUS_OK"; }

// Runs appended by make demo carry no candidate name; when a runtime report
// lists as many candidates with playback figures as there are runs (or as
// many playbacks were added through the API), the runs are named after them,
// in order.
std::vector<std::string> run_labels(const Model& model) {
  std::vector<std::string> labels;
  for (const auto& r : model.playback) labels.push_back(r.label);
  std::vector<std::string> api;
  for (const CandidatePlayback& c : model.candidates) api.push_back(c.name);
  for (const RuntimeReport& rr : model.runtime) {
    std::vector<std::string> names;
    for (const Candidate& c : rr.candidates)
      if (!c.playback.empty()) names.push_back(c.name);
    if (names.size() == labels.size()) return names;
  }
  if (api.size() == labels.size()) return api;
  return labels;
}

}  // namespace

std::string section_playback(const Model& model) {
  if (model.playback.empty()) return "";
  const auto labels = run_labels(model);
  std::string out;
  std::string charts;
  for (std::size_t k = 0; k < model.playback.size(); ++k) {
    const PlaybackRun& run = model.playback[k];
    out += "<h3>Playback run " + escape_html(labels[k]) + " <span class=\"meta\">(" + escape_html(run.path) + ", " +
           std::to_string(run.records.size()) + " records)</span></h3>";
    HtmlTable t(fmt::format("playback-{}-ops", k + 1),
                {"op", "records", "ok", "failed", "exact", "nondeterministic", "elements", "bitwise mismatches",
                 "tolerance failures", "new non-finite", "max abs error", "max rel error"});
    for (const PlaybackGroup& g : run.groups) {
      if (g.type != "op") continue;
      t.add_row({g.name, std::to_string(g.records), std::to_string(g.ok), std::to_string(g.failed), std::to_string(g.exact),
                 std::to_string(g.nondeterministic), std::to_string(g.elements), std::to_string(g.bitwise),
                 std::to_string(g.tolerance_failures), std::to_string(g.nonfinite), format_number(g.max_abs_error),
                 format_number(g.max_rel_error)},
                g.failed || g.tolerance_failures || g.nonfinite ? "bad" : "");
    }
    out += t.render(model.max_table_rows);
    HtmlTable failed(fmt::format("playback-{}-failed", k + 1), {"record", "op", "step", "status", "message"});
    for (const PlaybackRecord& r : run.records)
      if (!is_ok(r.status) && !r.status.empty())
        failed.add_row({std::to_string(r.record), r.op, std::to_string(r.step), r.status, r.message}, "bad");
    if (failed.rows()) out += failed.render(model.max_table_rows);
    // Error over steps, one line per op.
    std::map<std::string, LineSeries> by_op;
    for (const PlaybackRecord& r : run.records) {
      if (!is_ok(r.status)) continue;
      auto& s = by_op[r.op];
      s.label = r.op;
      s.x.push_back(static_cast<double>(r.step));
      s.y.push_back(r.max_rel_error);
    }
    std::vector<LineSeries> series;
    for (auto& [name, s] : by_op) series.push_back(std::move(s));
    charts += small_multiples(fmt::format("chart-playback-steps-{}", k + 1),
                              labels[k] + ": max relative error per replayed call", series, "training step",
                              "max rel. error (log)", true);
  }
  return out + "<h3>Error over training steps</h3><p class=\"note\">Each point is one replayed call (max over its "
               "outputs); exact calls (error 0) are not drawn on the log scale.</p><div class=\"charts\">" + charts + "</div>";
}

}  // namespace peat::impl::report
