#include "lib/report/html_table.hpp"

#include "lib/report/svg.hpp"

#include <fmt/format.h>

namespace peat::impl::report {

HtmlTable::HtmlTable(std::string id, std::vector<std::string> header) : id_(std::move(id)), header_(std::move(header)) {}

void HtmlTable::add_row(std::vector<std::string> cells, std::string css_class) {
  cells.resize(header_.size());
  rows_.emplace_back(std::move(cells), std::move(css_class));
}

std::string HtmlTable::render(std::size_t max_rows) const {
  std::string out = fmt::format("<table id=\"{}\"><thead><tr>", escape_html(id_));
  for (const auto& h : header_) out += "<th>" + escape_html(h) + "</th>";
  out += "</tr></thead><tbody>";
  const std::size_t shown = std::min(max_rows, rows_.size());
  for (std::size_t i = 0; i < shown; ++i) {
    const auto& [cells, css] = rows_[i];
    out += css.empty() ? "<tr>" : "<tr class=\"" + escape_html(css) + "\">";
    for (const auto& c : cells) out += "<td>" + escape_html(c) + "</td>";
    out += "</tr>";
  }
  if (shown < rows_.size())
    out += fmt::format("<tr class=\"more\"><td colspan=\"{}\">… {} more rows not shown</td></tr>", header_.size(),
                       rows_.size() - shown);
  out += "</tbody></table>";
  return out;
}

}  // namespace peat::impl::report
