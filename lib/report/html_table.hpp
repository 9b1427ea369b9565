// HtmlTable: an HTML <table> whose cells are escaped text. Long tables are
// cut at max_rows with one closing row that says how many were left out.
#pragma once

#include <string>
#include <vector>

namespace peat::impl::report {

class HtmlTable {
 public:
  HtmlTable(std::string id, std::vector<std::string> header);
  // One row; cells beyond the header's width are dropped, missing ones empty.
  // `css_class` (may be "") marks the row, e.g. "bad" for a failing record.
  void add_row(std::vector<std::string> cells, std::string css_class = {});
  std::size_t rows() const noexcept { return rows_.size(); }
  std::string render(std::size_t max_rows) const;

 private:
  std::string id_;
  std::vector<std::string> header_;
  std::vector<std::pair<std::vector<std::string>, std::string>> rows_;
};

}  // namespace peat::impl::report
