// Trace section: run metadata, records per kind and op, sizes and codec ratio.
#include "lib/report/charts.hpp"
#include "lib/report/html_table.hpp"
#include "lib/report/sections.hpp"
#include "lib/report/svg.hpp"

#include <fmt/format.h>

namespace peat::impl::report {

namespace {
// The one convention (as peat info and the codec benchmark): encoded / raw.
std::string codec_ratio(uint64_t raw, uint64_t encoded) {
  return raw ? format_number(double(encoded) / double(raw), 3) : "—";
}
}  // namespace

std::string section_traces(const Model& model) {
  std::string out;
  std::size_t k = 0;
  for (const TraceSummary& t : model.traces) {
    ++k;
    out += "<h3>Trace " + escape_html(t.path) + "</h3>";
    HtmlTable facts(fmt::format("trace-{}-info", k), {"field", "value"});
    facts.add_row({"format", fmt::format("{}.{}", t.format_major, t.format_minor)});
    facts.add_row({"framework", t.framework});
    facts.add_row({"device", t.device + " (" + t.vendor + ")"});
    facts.add_row({"run", fmt::format("{} (rank {} of {})", t.run_name, t.rank, t.world_size)});
    facts.add_row({"written by PEAT", t.library_version});
    facts.add_row({"file size", format_bytes(t.file_bytes)});
    facts.add_row({"complete", t.complete ? "yes (footer index present)" : "no: " + t.stop_reason},
                  t.complete ? "" : "bad");
    facts.add_row({"records", fmt::format("{} op, {} checkpoint, {} scalar, {} step marker", t.records[1], t.records[2],
                                          t.records[3], t.records[4])});
    facts.add_row({"steps", t.step_max >= t.step_min ? fmt::format("{} .. {}", t.step_min, t.step_max) : "none"});
    facts.add_row({"tensor bytes", fmt::format("{} raw, {} encoded (codec ratio {} encoded/raw)", format_bytes(t.raw_bytes),
                                               format_bytes(t.encoded_bytes), codec_ratio(t.raw_bytes, t.encoded_bytes))});
    for (const auto& c : t.checkpoints) facts.add_row({"checkpoint", c});
    for (const auto& [name, s] : t.scalars)
      facts.add_row({"scalar series", fmt::format("{}: {} points", name, s.y.size())});
    out += facts.render(model.max_table_rows);
    // The recorded scalar series, one small chart each (their scales differ).
    std::string charts;
    std::size_t n = 0;
    for (const auto& [name, s] : t.scalars) {
      if (++n > kMaxSeriesPerChart) break;
      charts += line_chart(fmt::format("chart-trace-{}-scalar-{}", k, n), "recorded " + name, {{name, s.x, s.y, false}},
                           std::nullopt, "training step", name, false);
    }
    if (!charts.empty()) out += "<div class=\"charts\">" + charts + "</div>";
    HtmlTable ops(fmt::format("trace-{}-ops", k), {"op", "records", "tensors", "raw", "encoded", "ratio (encoded/raw)"});
    for (const auto& [name, s] : t.ops)
      ops.add_row({name, std::to_string(s.records), std::to_string(s.tensors), format_bytes(s.raw_bytes),
                   format_bytes(s.encoded_bytes),
                   codec_ratio(s.raw_bytes, s.encoded_bytes)});
    if (ops.rows()) out += ops.render(model.max_table_rows);
  }
  return out;
}

}  // namespace peat::impl::report
