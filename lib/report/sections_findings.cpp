// The findings: the summary (one row per candidate), one section per
// candidate (per-op verdicts with the one effective-bits figure the verdict
// used, evidence, error over steps as small multiples, the spatial map of the
// most informative call, loss curves against the measured band), and the
// training impact of every runtime-FI run.
#include "lib/core/error_model.hpp"
#include "lib/report/charts.hpp"
#include "lib/report/findings.hpp"
#include "lib/report/html_table.hpp"
#include "lib/report/sections.hpp"
#include "lib/report/svg.hpp"

#include "lib/analyzer/metrics.hpp"

#include <peat/injector.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace peat::impl::report {

namespace {

std::string bits_figure(double b) { return std::isfinite(b) ? format_number(b, 3) : "—"; }

std::string evidence_of(const peat_verdict_t& v) {
  std::string e;
  for (int i = 0; i < v.evidence_count && i < PEAT_DETECT_EVIDENCE_LINES; ++i)
    e += (i ? " | " : "") + std::string(v.evidence[i], strnlen(v.evidence[i], PEAT_DETECT_EVIDENCE_CHARS));
  return e;
}

const StageBand* band_of(const Model& model, const std::string& stage) {
  for (const StageBand& b : model.bands)
    if (b.stage == stage) return &b;
  return nullptr;
}

// Golden with its band, then at most kMaxSeriesPerChart - 1 runs per chart.
std::string loss_charts(const Model& model, const std::string& id, const std::string& title, const std::string& stage,
                        const std::vector<LineSeries>& runs) {
  const StageBand* b = band_of(model, stage);
  std::optional<Band> band;
  LineSeries golden;
  if (b) {
    golden = {"golden (smoothed reference: band around it)", b->golden.x, b->golden.y, false};
    if (std::isfinite(b->band) && b->band > 0) {
      Band nb;
      nb.label = fmt::format("golden ± noise band {}{}", format_number(b->band, 3),
                             b->k ? fmt::format(" (k={} reruns, factor {})", b->k, format_number(b->factor, 3)) : "");
      nb.x = b->golden.x;
      for (double y : b->golden.y) nb.lo.push_back(y - b->band), nb.hi.push_back(y + b->band);
      band = std::move(nb);
    }
  }
  std::string out;
  const std::size_t per = b ? kMaxSeriesPerChart - 1 : kMaxSeriesPerChart;
  const std::size_t charts = std::max<std::size_t>(1, (runs.size() + per - 1) / per);
  for (std::size_t c = 0; c < charts; ++c) {
    std::vector<LineSeries> lines;
    if (b) lines.push_back(golden);
    for (std::size_t i = c * per; i < std::min(runs.size(), (c + 1) * per); ++i) lines.push_back(runs[i]);
    out += line_chart(charts > 1 ? fmt::format("{}-{}", id, c + 1) : id,
                      charts > 1 ? fmt::format("{} ({} of {})", title, c + 1, charts) : title, lines, band,
                      "training step", "loss", false);
  }
  return out;
}

// Loss values far beyond the band (a diverged run) would flatten every other
// curve: clip the drawn values to the golden range widened by 10 bands.
LineSeries clipped_run(const Model& model, const FiRun& f) {
  LineSeries s{f.label, f.loss.x, f.loss.y, true};
  if (const StageBand* b = band_of(model, f.stage); b && !b->golden.y.empty() && std::isfinite(b->band)) {
    const auto [lo, hi] = std::minmax_element(b->golden.y.begin(), b->golden.y.end());
    const double top = *hi + 10 * b->band, bottom = *lo - 10 * b->band;
    bool cut = false;
    for (double& y : s.y)
      if (std::isfinite(y) && (y > top || y < bottom)) y = std::clamp(y, bottom, top), cut = true;
      else if (!std::isfinite(y)) y = top, cut = true;
    if (cut) s.label += " (clipped at golden ± 10 bands)";
  }
  return s;
}

}  // namespace

std::string spatial_map_chart(const SpatialMapCopy& m, const std::string& id) {
  // Fold the tile grid into at most kMaxMapCells x kMaxMapCells cells.
  constexpr int64_t kMaxMapCells = 48;
  const int64_t fr = std::max<int64_t>(1, (m.grid_rows + kMaxMapCells - 1) / kMaxMapCells);
  const int64_t fc = std::max<int64_t>(1, (m.grid_cols + kMaxMapCells - 1) / kMaxMapCells);
  const auto rows = static_cast<std::size_t>((m.grid_rows + fr - 1) / fr), cols = static_cast<std::size_t>((m.grid_cols + fc - 1) / fc);
  std::vector<double> values(rows * cols, 0.0);
  for (int64_t r = 0; r < m.grid_rows; ++r)
    for (int64_t c = 0; c < m.grid_cols; ++c)
      values[static_cast<std::size_t>(r / fr) * cols + static_cast<std::size_t>(c / fc)] +=
          static_cast<double>(m.tiles[static_cast<std::size_t>(r * m.grid_cols + c)]);
  std::vector<std::string> row_labels, col_labels;
  for (std::size_t r = 0; r < rows; ++r) {
    const int64_t a = static_cast<int64_t>(r) * fr * m.tile_rows, b = std::min(m.rows, (static_cast<int64_t>(r) + 1) * fr * m.tile_rows) - 1;
    row_labels.push_back(a == b ? fmt::format("row {}", a) : fmt::format("rows {}–{}", a, b));
  }
  for (std::size_t c = 0; c < cols; ++c)
    col_labels.push_back(std::to_string(static_cast<int64_t>(c) * fc * m.tile_cols));
  int64_t rows_hit = 0, cols_hit = 0;
  for (auto v : m.row_counts) rows_hit += v > 0;
  for (auto v : m.col_counts) cols_hit += v > 0;
  std::string out = fmt::format(
      "<p>{}: {} x {} elements, {} mismatches in {} of {} rows and {} of {} columns; tiles of {} x {}{}.</p>",
      escape_html(m.label), m.rows, m.cols, m.mismatches, rows_hit, m.rows, cols_hit, m.cols, m.tile_rows, m.tile_cols,
      fr > 1 || fc > 1 ? fmt::format(", each cell sums {} x {} tiles", fr, fc) : std::string());
  out += heat_map(id, "mismatches per tile", rows, cols, values, row_labels,
                  col_labels, "output column", false);
  return out;
}

std::string section_summary(const Model& model, const std::vector<Finding>& found) {
  if (found.empty()) return "";
  HtmlTable t("summary-table", {"candidate", "verdict (floor + anomaly)", "key parameter", "ops affected",
                                "training impact (band units)", "in one sentence"});
  for (const Finding& f : found)
    t.add_row({f.name, f.verdict, f.parameter.empty() ? "—" : f.parameter, f.ops, f.impact, f.sentence}, f.bad ? "bad" : "");
  std::string out = "<p class=\"note\">Verdicts: each replayed call is judged alone by the Detector and counted per op "
                    "and output; the floor (EXACT, ROUNDING, REDUCED_PRECISION) is named with the anomaly on top of it. "
                    "Training impact: the largest deviation of the smoothed loss from golden, in units of the noise band "
                    "measured from golden reruns (≤ 1 is inside run-to-run noise).</p>";
  (void)model;
  return out + t.render(model.max_table_rows);
}

std::string section_candidate(const Model& model, const Finding& f, std::size_t n) {
  std::string out = fmt::format("<p><b>{}</b> — {}</p>", escape_html(f.verdict), escape_html(f.sentence));
  if (const CandidatePlayback* c = f.playback) {
    out += fmt::format("<p class=\"meta\">Playback: {} records replayed, {} compared, {} exact, {} differing, {} "
                       "nondeterministic, {} failed.</p>",
                       c->selected, c->ok, c->exact, c->mismatched, c->nondeterministic, c->failed);
    HtmlTable t(fmt::format("candidate-{}-ops", n),
                {"op [output]", "calls", "exact", "per-call verdicts", "eff. mantissa bits (verdict's)", "key parameter",
                 "max rel error", "tolerance failures", "new non-finite"});
    HtmlTable ev(fmt::format("candidate-{}-evidence", n), {"op [output]", "record", "rank", "model", "confidence", "evidence"});
    std::vector<std::size_t> order(c->ops.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    // Anomalies first, then by tolerance failures.
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      const bool aa = c->ops[a].verdicts.top_model >= 0 && !is_floor_model(c->ops[a].verdicts.top_model);
      const bool bb = c->ops[b].verdicts.top_model >= 0 && !is_floor_model(c->ops[b].verdicts.top_model);
      if (aa != bb) return aa;
      return c->ops[a].merged.tolerance_fail_count > c->ops[b].merged.tolerance_fail_count;
    });
    for (std::size_t i : order) {
      const OpOutcome& o = c->ops[i];
      const bool anomaly = o.verdicts.top_model >= 0 && !is_floor_model(o.verdicts.top_model);
      t.add_row({o.op, std::to_string(o.records), std::to_string(o.exact), verdict_counts(o.verdicts),
                 bits_figure(verdict_bits(o)),
                 o.detection && o.detection->verdict_count > 0 ? key_parameter(o.detection->verdicts[0]) : "—",
                 format_number(o.merged.max_rel_error), std::to_string(o.merged.tolerance_fail_count),
                 std::to_string(o.merged.new_nonfinite_count)},
                anomaly || o.failed ? "bad" : "");
      if (o.detection && (anomaly || ev.rows() < 3))
        for (int k = 0; k < o.detection->verdict_count && k < 2; ++k) {
          const peat_verdict_t& v = o.detection->verdicts[k];
          ev.add_row({o.op, std::to_string(o.detection_record), std::to_string(k + 1), error_model_name(v.model),
                      format_number(v.confidence, 3), evidence_of(v)});
        }
    }
    out += "<p class=\"note\">The effective mantissa bits are the figure the op's verdict used (the Detector on the call "
           "that named the op's top model), not a statistic of the merged signature.</p>";
    out += t.render(model.max_table_rows);
    if (ev.rows()) out += "<h4>Evidence (the call behind each verdict)</h4>" + ev.render(model.max_table_rows);
    std::vector<LineSeries> series;
    for (std::size_t i : order) {
      const OpOutcome& o = c->ops[i];
      if (o.exact == o.steps.size()) continue;  // exact everywhere: nothing to draw on a log axis
      series.push_back({o.op, o.steps, o.max_rel_error, false});
    }
    if (!series.empty())
      out += "<h4>Error over training steps</h4><p class=\"note\">Max relative error of each replayed call; ops "
             "equal to golden in every call are left out; at most 6 ops per chart.</p><div class=\"charts\">" +
             small_multiples(fmt::format("chart-cand-{}-steps", n), f.name + ": max relative error per call", series,
                             "training step", "max rel. error (log)", true) +
             "</div>";
  } else if (f.from_json) {
    const Candidate& jc = *f.from_json;
    HtmlTable t(fmt::format("candidate-{}-json", n), {"detector op", "playback", "rank", "model", "confidence", "evidence"});
    for (std::size_t i = 0; i < jc.verdicts.size(); ++i) {
      std::string e;
      for (std::size_t j = 0; j < jc.verdicts[i].evidence.size(); ++j) e += (j ? " | " : "") + jc.verdicts[i].evidence[j];
      t.add_row({jc.detector_op, jc.playback, std::to_string(i + 1), jc.verdicts[i].model, format_number(jc.verdicts[i].confidence, 3), e});
    }
    if (t.rows()) out += t.render(model.max_table_rows);
  }
  for (const CandidateMap& m : model.candidate_maps)
    if (m.candidate == f.name)
      out += "<h4>Spatial map of the most informative call</h4>" + spatial_map_chart(m.map, fmt::format("chart-cand-{}-map", n));
  // Loss curves of its runtime-FI runs, per stage.
  std::vector<std::string> stages;
  for (const FiRun* r : f.fi_runs)
    if (std::find(stages.begin(), stages.end(), r->stage) == stages.end()) stages.push_back(r->stage);
  std::string charts;
  for (std::size_t s = 0; s < stages.size(); ++s) {
    std::vector<LineSeries> runs;
    for (const FiRun* r : f.fi_runs)
      if (r->stage == stages[s] && !r->loss.y.empty()) runs.push_back(clipped_run(model, *r));
    if (!runs.empty())
      charts += loss_charts(model, fmt::format("chart-cand-{}-loss-{}", n, s + 1), f.name + ": loss, " + stages[s], stages[s], runs);
  }
  if (!charts.empty()) out += "<h4>Training with the candidate (runtime FI)</h4><div class=\"charts\">" + charts + "</div>";
  return out;
}

std::string section_impact(const Model& model) {
  if (model.fi_runs.empty() && model.bands.empty()) return "";
  std::string out;
  HtmlTable bands("noise-bands", {"stage", "band (loss units)", "golden reruns k", "factor", "window", "rule"});
  for (const StageBand& b : model.bands)
    bands.add_row({b.stage, format_number(b.band, 4), b.k ? std::to_string(b.k) : "—",
                   std::isfinite(b.factor) && b.factor > 0 ? format_number(b.factor, 3) : "—", std::to_string(b.window),
                   b.rule.empty() ? "factor x the largest deviation of a golden rerun's moving average from golden's (peat_noise_band_t)" : b.rule});
  if (bands.rows()) out += bands.render(model.max_table_rows);
  HtmlTable t("fi-runs", {"run", "stage", "candidate calls", "impact", "effect (band units)", "first step beyond",
                          "steps beyond", "final Δ loss", "param drift (x golden reruns')", "test accuracy"});
  for (const FiRun& f : model.fi_runs) {
    const auto* m = f.impact ? &*f.impact : nullptr;
    t.add_row({f.label, f.stage, f.candidate_calls >= 0 ? std::to_string(f.candidate_calls) : "—",
               m ? (m->verdict == PEAT_IMPACT_OUTSIDE_NOISE ? "OUTSIDE_NOISE" : "INSIDE_NOISE") : "not judged",
               m ? format_number(m->effect, 3) : "—", m && m->first_beyond_step >= 0 ? std::to_string(m->first_beyond_step) : "—",
               m ? std::to_string(m->beyond_count) : "—", m ? format_number(m->final_delta, 4) : "—",
               m ? format_number(m->param_drift_ratio, 3) : "—", format_number(f.test_accuracy, 3)},
              m && m->verdict == PEAT_IMPACT_OUTSIDE_NOISE ? "bad" : "");
  }
  if (t.rows()) out += t.render(model.max_table_rows);
  // The golden reruns (what the band is made of), per stage.
  std::string charts;
  for (std::size_t s = 0; s < model.bands.size(); ++s) {
    std::vector<LineSeries> runs;
    for (const RuntimeReport& r : model.runtime)
      for (const auto& [stage, series] : r.other_runs)
        if (stage == model.bands[s].stage) runs.push_back({series.label, series.x, series.y, true});
    if (!runs.empty())
      charts += loss_charts(model, fmt::format("chart-reruns-{}", s + 1), "golden reruns, " + model.bands[s].stage,
                            model.bands[s].stage, runs);
  }
  if (!charts.empty())
    out += "<h3>Golden reruns</h3><p class=\"note\">Other seeds or batch orders: the run-to-run noise the band is "
           "measured from.</p><div class=\"charts\">" + charts + "</div>";
  return out;
}

}  // namespace peat::impl::report
