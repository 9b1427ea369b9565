// SvgWriter: builds one inline <svg> element as text. Every string that
// reaches the output goes through escape_html, so op names, labels and paths
// from untrusted inputs cannot break the page.
#pragma once

#include <string>
#include <string_view>

namespace peat::impl::report {

// Escapes &, <, >, " and ' for HTML text and attribute values; replaces
// control characters (other than tab and newline) and invalid UTF-8 bytes
// with U+FFFD so that the page stays well-formed.
std::string escape_html(std::string_view text);

// Formats a number for labels: up to `digits` significant digits, "NaN",
// "Inf", "-Inf" for non-finite values.
std::string format_number(double value, int digits = 4);

class SvgWriter {
 public:
  // An <svg> with a viewBox of width x height (user units = CSS pixels at
  // 100 %); `id` becomes the element id (tests and links find charts by it),
  // `title` its accessible <title>.
  // `series` >= 0 is written as data-series (the lines a chart draws).
  SvgWriter(std::string_view id, double width, double height, std::string_view title, long series = -1);

  void rect(double x, double y, double w, double h, std::string_view fill, std::string_view tooltip = {});
  void line(double x1, double y1, double x2, double y2, std::string_view stroke, double width = 1,
            std::string_view dash = {});
  // A polyline through `points` ("x,y x,y ..."), no fill.
  void polyline(std::string_view points, std::string_view stroke, double width = 1.5, std::string_view dash = {});
  // A closed, filled polygon (e.g. a noise band).
  void polygon(std::string_view points, std::string_view fill, double opacity);
  // anchor: "start", "middle" or "end"; rotate: degrees about (x, y).
  void text(double x, double y, std::string_view content, std::string_view anchor = "start", double size = 11,
            double rotate = 0);

  // Closes the element and returns the markup.
  std::string finish();

 private:
  std::string out_;
};

}  // namespace peat::impl::report
