// Signature section: one row per (source, op) with derived metrics and the
// detector's top verdict, the verdicts' evidence, relative-error and
// ULP-distance histograms, the XOR bit-position heat map and the per-op error
// series of the aggregator.
#include "lib/core/error_model.hpp"
#include "lib/report/charts.hpp"
#include "lib/report/html_table.hpp"
#include "lib/report/sections.hpp"
#include "lib/report/svg.hpp"

#include "lib/analyzer/metrics.hpp"
#include "lib/detector/detector.hpp"

#include <peat/injector.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace peat::impl::report {

namespace {

constexpr std::size_t kMaxHistogramGroups = 8;

std::string rel_bucket_label(int b) {
  if (b == 0) return "0";
  if (b == 1) return "<2^-64";
  if (b == PEAT_SIGNATURE_REL_LARGE_BUCKET) return ">=1";
  if (b == PEAT_SIGNATURE_REL_UNDEFINED_BUCKET) return "undef";
  return fmt::format("2^{}", b - 2 + PEAT_SIGNATURE_REL_MIN_EXPONENT);
}

std::string ulp_bucket_label(int b) {
  if (b == 0) return "0";
  if (b == PEAT_SIGNATURE_ULP_NAN_BUCKET) return "NaN";
  return fmt::format("2^{}", b - 1);
}

// Bars of buckets [first non-zero - 1, last non-zero + 1], with bucket 0 and
// the special last buckets always kept so that exact pairs show.
std::vector<Bar> bars(const uint64_t* hist, int n, int special_from, std::string (*label)(int)) {
  int lo = n, hi = -1;
  for (int b = 1; b < special_from; ++b)
    if (hist[b]) lo = std::min(lo, b), hi = std::max(hi, b);
  std::vector<Bar> out;
  const auto add = [&](int b) { out.push_back({label(b), static_cast<double>(hist[b]), label(b) + ": " + std::to_string(hist[b]) + " pairs"}); };
  add(0);
  if (hi >= lo)
    for (int b = std::max(1, lo - 1); b <= std::min(special_from - 1, hi + 1); ++b) add(b);
  for (int b = special_from; b < n; ++b) add(b);
  return out;
}

std::string top_verdict(const std::optional<peat_detection_t>& d) {
  if (!d || d->verdict_count < 1) return "—";
  return fmt::format("{} ({:.2f})", error_model_name(d->verdicts[0].model), d->verdicts[0].confidence);
}

}  // namespace

std::string section_signatures(const Model& model) {
  if (model.signatures.empty()) return "";
  std::string out;
  HtmlTable t("signatures", {"source", "op", "calls", "elements", "bitwise mismatches", "tolerance failures",
                             "new non-finite", "max abs error", "max rel error", "relative L2", "SQNR dB",
                             "eff. mantissa bits (verdict's)", "top verdict"});
  std::vector<peat_signature_t> sigs;
  for (const SignatureGroup& g : model.signatures) {
    const peat_signature_t s = g.aggregator->signature(0);
    sigs.push_back(s);
    // The effective bits the detection's verdict used (one figure per op
    // and output, as in the candidate sections); none without a detection.
    std::string bits = "—";
    if (g.detection)
      for (int i = 0; i < g.detection->verdict_count && i < PEAT_DETECT_MAX_VERDICTS; ++i)
        if (g.detection->verdicts[i].model == PEAT_ERROR_MODEL_ROUNDING ||
            g.detection->verdicts[i].model == PEAT_ERROR_MODEL_REDUCED_PRECISION) {
          bits = format_number(g.detection->verdicts[i].effective_mantissa_bits, 3);
          break;
        }
    t.add_row({g.source, g.op, std::to_string(g.aggregator->call_count(0)), std::to_string(s.count),
               std::to_string(s.bitwise_mismatch_count), std::to_string(s.tolerance_fail_count),
               std::to_string(s.new_nonfinite_count), format_number(s.max_abs_error), format_number(s.max_rel_error),
               format_number(analyzer::relative_l2(s)), format_number(analyzer::sqnr_db(s)), bits, top_verdict(g.detection)},
              s.tolerance_fail_count || s.new_nonfinite_count ? "bad" : "");
  }
  out += t.render(model.max_table_rows);

  HtmlTable ev("verdicts", {"source", "op", "rank", "model", "confidence", "evidence"});
  for (const SignatureGroup& g : model.signatures) {
    if (!g.detection) continue;
    for (int i = 0; i < g.detection->verdict_count && i < PEAT_DETECT_MAX_VERDICTS; ++i) {
      const peat_verdict_t& v = g.detection->verdicts[i];
      std::string evidence;
      for (int e = 0; e < v.evidence_count && e < PEAT_DETECT_EVIDENCE_LINES; ++e)
        evidence += (e ? " | " : "") + std::string(v.evidence[e], strnlen(v.evidence[e], PEAT_DETECT_EVIDENCE_CHARS));
      ev.add_row({g.source, g.op, std::to_string(i + 1), error_model_name(v.model), format_number(v.confidence, 3),
                  evidence});
    }
  }
  if (ev.rows()) out += "<h3>Detector verdicts and evidence</h3>" + ev.render(model.max_table_rows);

  // Histograms: each source's worst op (largest relative L2) first, then the
  // other groups by tolerance failures, at most kMaxHistogramGroups.
  std::vector<std::size_t> order;
  const auto worse = [&](std::size_t a, std::size_t b) {
    if (sigs[a].tolerance_fail_count != sigs[b].tolerance_fail_count)
      return sigs[a].tolerance_fail_count > sigs[b].tolerance_fail_count;
    return sigs[a].bitwise_mismatch_count > sigs[b].bitwise_mismatch_count;
  };
  for (std::size_t i = 0; i < sigs.size(); ++i) {
    std::size_t best = i;
    bool first_of_source = true;
    for (std::size_t k : order) first_of_source = first_of_source && model.signatures[k].source != model.signatures[i].source;
    if (!first_of_source) continue;
    for (std::size_t j = i; j < sigs.size(); ++j)
      if (model.signatures[j].source == model.signatures[i].source &&
          analyzer::relative_l2(sigs[j]) > analyzer::relative_l2(sigs[best]))
        best = j;
    order.push_back(best);
  }
  std::vector<std::size_t> rest;
  for (std::size_t i = 0; i < sigs.size(); ++i)
    if (std::find(order.begin(), order.end(), i) == order.end()) rest.push_back(i);
  std::stable_sort(rest.begin(), rest.end(), worse);
  order.insert(order.end(), rest.begin(), rest.end());
  if (order.size() > kMaxHistogramGroups) order.resize(kMaxHistogramGroups);
  out += "<h3>Relative-error and ULP-distance histograms</h3><div class=\"charts\">";
  for (std::size_t n = 0; n < order.size(); ++n) {
    const std::size_t i = order[n];
    const std::string name = model.signatures[i].source + ": " + model.signatures[i].op;
    out += histogram_chart(fmt::format("chart-rel-hist-{}", n + 1), name + " — relative error |c-g|/|g|",
                           bars(sigs[i].rel_hist, PEAT_SIGNATURE_REL_BUCKETS, PEAT_SIGNATURE_REL_LARGE_BUCKET, rel_bucket_label),
                           "relative error (bucket lower edge)", true);
    out += histogram_chart(fmt::format("chart-ulp-hist-{}", n + 1), name + " — ULP distance",
                           bars(sigs[i].ulp_hist, PEAT_SIGNATURE_ULP_BUCKETS, PEAT_SIGNATURE_ULP_NAN_BUCKET, ulp_bucket_label),
                           "ULP distance (bucket lower edge)", true);
  }
  out += "</div>";
  if (sigs.size() > order.size())
    out += fmt::format("<p class=\"note\">Histograms of {} more groups not drawn (the table lists them all).</p>",
                       sigs.size() - order.size());

  // XOR bit positions: one row per group, bits of the widest golden dtype.
  std::size_t width = 16;
  for (const auto& s : sigs) width = std::max<std::size_t>(width, s.golden_dtype.bits);
  width = std::min<std::size_t>(width, PEAT_SIGNATURE_XOR_BITS);
  std::vector<double> values;
  std::vector<std::string> rows, cols;
  for (std::size_t i = 0; i < sigs.size(); ++i) {
    // Op first: a cut label still says which op the row is.
    rows.push_back(model.signatures[i].op + " · " + model.signatures[i].source);
    for (std::size_t b = 0; b < width; ++b) values.push_back(static_cast<double>(sigs[i].xor_bit_hist[b]));
  }
  for (std::size_t b = 0; b < width; ++b) cols.push_back(std::to_string(b));
  out += "<h3>Which bits differ</h3><p class=\"note\">Pairs whose storage words differ in bit b (bit 0 = least "
         "significant mantissa bit; the sign is the top bit of the golden dtype).</p>";
  out += heat_map("chart-xor-bits", "XOR bit-position histogram per op", rows.size(), width, values, rows, cols,
                  "storage bit", true);

  // Error over training steps: relative L2 of each call in the aggregator's series.
  std::vector<LineSeries> series;
  for (const SignatureGroup& g : model.signatures) {
    std::vector<peat_series_point_t> points(g.aggregator->series(0, nullptr, 0));
    g.aggregator->series(0, points.data(), points.size());
    LineSeries s;
    s.label = g.source + ": " + g.op;
    for (const auto& p : points) {
      s.x.push_back(static_cast<double>(p.step));
      s.y.push_back(p.relative_l2);
    }
    series.push_back(std::move(s));
  }
  out += "<h3>Error over training steps</h3><div class=\"charts\">" +
         small_multiples("chart-error-steps", "relative L2 error per call (analyzer aggregator series)", series,
                         "training step", "relative L2 (log)", true) +
         "</div>";
  return out;
}

std::string section_spatial_map(const Model& model) {
  if (!model.worst_map) return "";
  return spatial_map_chart(*model.worst_map, "chart-spatial-map");
}

}  // namespace peat::impl::report
