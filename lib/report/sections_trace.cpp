// Trace section: run metadata, records per kind and op, sizes and codec ratio.
#include "report/html_table.hpp"
#include "report/sections.hpp"
#include "report/svg.hpp"

#include <fmt/format.h>

namespace peat::report {

std::string section_traces(const Model& model) {
  std::string out;
  std::size_t k = 0;
  for (const TraceSummary& t : model.traces) {
    ++k;
    out += "<h3>" + escape_html(t.path) + "</h3>";
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
    facts.add_row({"tensor bytes", fmt::format("{} raw, {} encoded (ratio {})", format_bytes(t.raw_bytes),
                                               format_bytes(t.encoded_bytes),
                                               t.encoded_bytes ? format_number(double(t.raw_bytes) / double(t.encoded_bytes), 3) : "—")});
    for (const auto& c : t.checkpoints) facts.add_row({"checkpoint", c});
    for (const auto& [name, s] : t.scalars)
      facts.add_row({"scalar series", fmt::format("{}: {} points", name, s.y.size())});
    out += facts.render(model.max_table_rows);
    HtmlTable ops(fmt::format("trace-{}-ops", k), {"op", "records", "tensors", "raw", "encoded", "ratio"});
    for (const auto& [name, s] : t.ops)
      ops.add_row({name, std::to_string(s.records), std::to_string(s.tensors), format_bytes(s.raw_bytes),
                   format_bytes(s.encoded_bytes),
                   s.encoded_bytes ? format_number(double(s.raw_bytes) / double(s.encoded_bytes), 3) : "—"});
    if (ops.rows()) out += ops.render(model.max_table_rows);
  }
  return out;
}

}  // namespace peat::report
