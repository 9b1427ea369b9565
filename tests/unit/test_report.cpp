// lib/report: escaping, the chart writers, tables, the input readers and the
// report builder.
#include "report/charts.hpp"
#include "report/html_table.hpp"
#include "report/report.hpp"
#include "report/svg.hpp"

#include "core/error.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <string>

using namespace peat::impl::report;

namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("report: escape_html escapes markup and replaces control bytes and bad UTF-8") {
  CHECK(escape_html("<a href=\"x\">&'") == "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
  CHECK(escape_html("tab\tand\nnewline") == "tab\tand\nnewline");
  CHECK(escape_html(std::string("a\x01z", 3)) == "a\xEF\xBF\xBDz");
  CHECK(escape_html("\xC3\xA9t\xC3\xA9") == "\xC3\xA9t\xC3\xA9");          // valid UTF-8 kept
  CHECK(escape_html("bad \xC3 byte") == "bad \xEF\xBF\xBD byte");          // truncated sequence replaced
  CHECK(format_number(1.0 / 0.0) == "Inf");
  CHECK(format_number(0.000123456, 3) == "0.000123");
}

TEST_CASE("report: the histogram draws one bar per non-zero bucket and escapes labels") {
  std::vector<Bar> bars = {{"0", 100, ""}, {"<b>", 0, ""}, {"2^-3", 5, ""}, {"x", 1, ""}};
  const std::string svg = histogram_chart("h1", "title & more", bars, "x axis", true);
  CHECK(svg.rfind("<svg id=\"h1\"", 0) == 0);
  CHECK(svg.substr(svg.size() - 6) == "</svg>");
  CHECK(count(svg, "<rect") == 3);  // zero buckets draw no bar
  CHECK(svg.find("&lt;b&gt;") != std::string::npos);
  CHECK(svg.find("title &amp; more") != std::string::npos);
  CHECK(histogram_chart("h2", "t", {}, "x", false).find("no data") != std::string::npos);
}

TEST_CASE("report: the line chart breaks lines at non-finite values and draws the band") {
  LineSeries s{"golden", {0, 1, 2, 3, 4}, {1, 2, NAN, 3, 4}, false};
  Band b{"band", {0, 1, 2}, {0.5, 1.5, 2.5}, {1.5, 2.5, 3.5}};
  const std::string svg = line_chart("l1", "loss", {s}, b, "step", "loss", false);
  CHECK(count(svg, "<polyline") == 2);
  CHECK(count(svg, "<polygon") == 1);
  const std::string logsvg = line_chart("l2", "err", {{"e", {0, 1, 2}, {0, 1e-3, 1e-2}, true}}, std::nullopt, "s", "e", true);
  CHECK(count(logsvg, "<polyline") == 1);  // the 0 is not drawn on a log scale
  CHECK(logsvg.find("stroke-dasharray") != std::string::npos);
  CHECK(line_chart("l3", "t", {}, std::nullopt, "x", "y", false).find("no data") != std::string::npos);
}

TEST_CASE("report: the heat map colours only non-zero cells") {
  const std::string svg = heat_map("m1", "bits", 2, 3, {0, 1, 0, 5, 0, 2}, {"a", "b"}, {"0", "1", "2"}, "bit", false);
  // background + 3 cells + 10 colour-scale steps
  CHECK(count(svg, "<rect") == 1 + 3 + 10);
  CHECK(svg.find("b, 0: 5") != std::string::npos);
}

TEST_CASE("report: a table cuts long bodies and escapes cells") {
  HtmlTable t("t1", {"a", "b"});
  for (int i = 0; i < 5; ++i) t.add_row({"<" + std::to_string(i) + ">", "x"}, i == 0 ? "bad" : "");
  const std::string html = t.render(3);
  CHECK(count(html, "<tr") == 1 + 3 + 1);
  CHECK(html.find("2 more rows not shown") != std::string::npos);
  CHECK(html.find("&lt;0&gt;") != std::string::npos);
  CHECK(html.find("<tr class=\"bad\">") != std::string::npos);
}

TEST_CASE("report: playback JSON lines with appended runs give one run each") {
  const std::string rec = R"({"type":"record","record":1,"op":"mm","step":4,"call":0,"status":"OK","outputs":[{"elements":8,"bitwise_mismatches":2,"tolerance_failures":1,"max_rel_error":0.5}]})";
  const std::string grp = R"({"type":"op","name":"mm","records":1,"ok":1,"outputs":[{"elements":8,"max_rel_error":0.5}]})";
  const auto runs = read_playback_jsonl("p.jsonl", rec + "\n" + grp + "\n" + rec + "\n" + grp + "\n{\"type\":\"future\"}\n");
  REQUIRE(runs.size() == 2);
  CHECK(runs[1].records.size() == 1);
  CHECK(runs[0].records[0].tolerance_failures == 1);
  CHECK(runs[0].records[0].max_rel_error == 0.5);
  CHECK(runs[0].groups[0].name == "mm");
  try {
    read_playback_jsonl("p.jsonl", rec + "\n{broken\n");
    FAIL("no error");
  } catch (const peat::impl::Error& e) {
    CHECK(e.status() == PEAT_STATUS_CORRUPT_DATA);
    CHECK(std::string(e.what()).find("p.jsonl: line 2") != std::string::npos);
  }
}

TEST_CASE("report: a multi-output op's group line gives one row per output, named") {
  const std::string grp =
      R"({"type":"op","name":"conv1/aten::convolution_backward","records":2,"ok":2,"outputs":[)"
      R"({"name":"grad_weight","elements":8,"bitwise_mismatches":3,"max_rel_error":0.25},)"
      R"({"name":"","elements":2,"bitwise_mismatches":1,"max_rel_error":0.5}]})";
  const std::string one = R"({"type":"op","name":"fc/aten::mm","records":1,"ok":1,"outputs":[{"name":"output","elements":4}]})";
  const auto runs = read_playback_jsonl("p.jsonl", grp + "\n" + one + "\n");
  REQUIRE(runs.size() == 1);
  REQUIRE(runs[0].groups.size() == 3);
  CHECK(runs[0].groups[0].name == "conv1/aten::convolution_backward[grad_weight]");
  CHECK(runs[0].groups[0].elements == 8);
  CHECK(runs[0].groups[0].bitwise == 3);
  CHECK(runs[0].groups[0].max_rel_error == 0.25);
  CHECK(runs[0].groups[1].name == "conv1/aten::convolution_backward[1]");
  CHECK(runs[0].groups[1].elements == 2);
  CHECK(runs[0].groups[1].records == 2);
  CHECK(runs[0].groups[2].name == "fc/aten::mm");
}

TEST_CASE("report: the runtime reader follows the schema: loss_series by run label, bands, FI runs, drift") {
  const auto r = read_runtime_json("r.json", R"({
    "noise_band": 0.2, "model": "cnn", "noise_band_reruns": 3, "noise_band_factor": 1.5, "loss_window": 4,
    "loss_series": {"golden": {"steps": [0, 1, 2], "loss": [3, 2, 1]}, "c1 1/10": [3, 2.5, 2], "golden order 7": [3, 2, 1.1]},
    "candidates": [{"name": "c1", "runtime_fi": [{"every": 10, "label": "c1 1/10", "impact": "OUTSIDE_NOISE", "effect": 2.5,
                                                  "first_beyond_step": 2, "beyond_band_steps": 1,
                                                  "finetune": {"impact": "INSIDE_NOISE", "effect": null}}]}],
    "finetune": {"noise_band": 0.3, "first_step": 3, "loss_series": {"golden": [1, 0.5], "c1 1/10": [1, 0.6]}},
    "my_loss_curve": [9, 8, 7],
    "checkpoint_drift": {"c1 1/10": [{"tensor": "w", "count": 4, "rmse": 0.1, "relative_l2": 0.2, "max_abs_error": 0.3}]},
    "future": {"x": [1, 2, 3]}})");
  REQUIRE(r.bands.size() == 2);
  CHECK(r.bands[0].stage == "pretrain");
  CHECK(r.bands[0].band == 0.2);
  CHECK(r.bands[0].k == 3);
  CHECK(r.bands[0].window == 4);
  CHECK(r.bands[0].golden.y == std::vector<double>{3, 2, 1});
  CHECK(r.bands[1].stage == "finetune");
  CHECK(r.bands[1].golden.x == std::vector<double>{3, 4});  // first_step shifts a plain array
  REQUIRE(r.fi_runs.size() == 2);
  CHECK(r.fi_runs[0].candidate == "c1");
  CHECK(r.fi_runs[0].every == 10);
  CHECK(r.fi_runs[0].loss.y == std::vector<double>{3, 2.5, 2});
  REQUIRE(r.fi_runs[0].impact);
  CHECK(r.fi_runs[0].impact->verdict == PEAT_IMPACT_OUTSIDE_NOISE);
  CHECK(r.fi_runs[0].impact->effect == 2.5);
  CHECK(r.fi_runs[0].impact->first_beyond_step == 2);
  CHECK(r.fi_runs[1].stage == "finetune");
  CHECK(std::isinf(r.fi_runs[1].impact->effect));  // null: infinite
  CHECK(r.fi_runs[1].loss.y == std::vector<double>{1, 0.6});
  // A golden rerun is drawn as such; a key that merely names a loss is not read.
  REQUIRE(r.other_runs.size() == 1);
  CHECK(r.other_runs[0].second.label == "golden order 7");
  REQUIRE(r.drift.size() == 1);
  CHECK(r.drift[0].second[0].relative_l2 == 0.2);
  CHECK_THROWS_AS(read_runtime_json("r.json", "[1, 2]"), peat::impl::Error);
  CHECK_THROWS_AS(read_runtime_json("r.json", R"({"checkpoint_drift": {"a": 3}})"), peat::impl::Error);
  CHECK_THROWS_AS(read_runtime_json("r.json", R"({"loss_series": {"golden": {"steps": [1], "loss": [1, 2]}}})"), peat::impl::Error);
  CHECK_THROWS_AS(read_runtime_json("r.json", R"({"loss_series": {"golden": ["x", 2]}})"), peat::impl::Error);
}

TEST_CASE("report: charts keep their series limit and bounded sizes") {
  std::vector<LineSeries> many;
  for (int k = 0; k < 14; ++k) many.push_back({"op " + std::to_string(k), {0, 1, 2}, {1e-30, 1e-3, 1e-2}, false});
  const std::string one = line_chart("c", "t", many, std::nullopt, "x", "y", true);
  CHECK(one.find("data-series=\"6\"") != std::string::npos);
  CHECK(one.find("op 6") == std::string::npos);  // the 7th series is not drawn
  CHECK(one.find("1e-12") != std::string::npos);  // 10 decades below the top (1e-2), not 1e-30
  CHECK(one.find("1e-30") == std::string::npos);
  const std::string multi = small_multiples("m", "t", many, "x", "y", true);
  CHECK(multi.find("id=\"m-3\"") != std::string::npos);
  CHECK(multi.find("id=\"m-4\"") == std::string::npos);
  CHECK(multi.find("op 13") != std::string::npos);
  // A heat map of 84 rows stays within its bounded height.
  std::vector<double> values(84 * 32, 1.0);
  std::vector<std::string> rows(84, "row");
  const std::string map = heat_map("h", "t", 84, 32, values, rows, {}, "x", false);
  const auto at = map.find("height=\"");
  REQUIRE(at != std::string::npos);
  CHECK(std::stod(map.substr(at + 8)) <= kMaxHeatMapHeight + 100);
}

TEST_CASE("report: signatures of one (source, op) merge, others make their own groups") {
  peat_report_options_t options;
  peat_report_options_init(&options);
  Report report(options);
  peat_signature_t s;
  peat_signature_init(&s);
  s.golden_dtype = {kDLFloat, 32, 1};
  s.candidate_dtype = s.golden_dtype;
  s.rtol = 1e-5;
  s.atol = 1e-8;
  s.count = 10;
  s.finite_count = 10;
  s.bitwise_mismatch_count = 2;
  s.ulp_hist[0] = 8;
  s.ulp_hist[3] = 2;
  s.rel_hist[0] = 8;
  s.rel_hist[30] = 2;
  s.xor_bit_hist[2] = 2;
  report.add_signature("c", "mm", 0, 0, s, nullptr);
  report.add_signature("c", "mm", 1, 1, s, nullptr);
  peat_signature_t other = s;
  other.rtol = 0.1;
  CHECK_THROWS_AS(report.add_signature("c", "mm", 2, 2, other, nullptr), peat::impl::Error);
  report.add_signature("c", "conv", 0, 0, other, nullptr);
  const std::string page = report.render_html();
  CHECK(page.find("id=\"chart-rel-hist-2\"") != std::string::npos);
  CHECK(page.find("id=\"chart-rel-hist-3\"") == std::string::npos);
  CHECK(page.find("<td>mm</td><td>2</td><td>20</td><td>4</td>") != std::string::npos);  // calls, elements, mismatches
  CHECK(page.find("<script") == std::string::npos);
}
