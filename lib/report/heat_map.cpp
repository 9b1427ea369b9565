// Heat map: XOR bit positions per op, spatial mismatch tiles of a call.
#include "lib/report/charts.hpp"
#include "lib/report/svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace peat::impl::report {

namespace {

// White (t = 0) to dark red (t = 1).
std::string heat_colour(double t) {
  t = std::clamp(t, 0.0, 1.0);
  const int r = static_cast<int>(255 - 75 * t), g = static_cast<int>(255 - 235 * t), b = static_cast<int>(255 - 225 * t);
  return fmt::format("#{:02x}{:02x}{:02x}", r, g, b);
}

}  // namespace

std::string heat_map(std::string_view id, std::string_view title, std::size_t rows, std::size_t cols,
                     const std::vector<double>& values, const std::vector<std::string>& row_labels,
                     const std::vector<std::string>& col_labels, std::string_view x_label, bool log_scale) {
  const double left = row_labels.empty() ? 20 : 230, top = 24, bottom = col_labels.empty() ? 30 : 46;
  // Bounded whatever the input: at most kMaxHeatMapWidth x kMaxHeatMapHeight
  // of cells (callers fold large grids first).
  const double cell_w = cols ? std::min(kMaxHeatMapWidth / static_cast<double>(cols), 40.0) : kMaxHeatMapWidth;
  const double cell_h = rows ? std::min(std::clamp(cell_w, 4.0, 18.0), kMaxHeatMapHeight / static_cast<double>(rows)) : 18;
  const double plot_w = cols ? cell_w * static_cast<double>(cols) : kMaxHeatMapWidth;
  const double plot_h = cell_h * static_cast<double>(std::max<std::size_t>(rows, 1));
  const double width = std::max(left + plot_w + 90, 420.0), height = top + plot_h + bottom;
  SvgWriter svg(id, width, height, title);
  svg.text(std::max(left + plot_w / 2, width / 2), 16, title, "middle", 13);
  svg.text(left + plot_w / 2, height - 6, x_label, "middle", 11);
  double top_value = 0;
  for (double v : values) top_value = std::max(top_value, std::isfinite(v) ? v : 0.0);
  const auto scale = [&](double v) {
    if (top_value <= 0 || !(v > 0)) return 0.0;
    return log_scale ? std::log1p(v) / std::log1p(top_value) : v / top_value;
  };
  svg.rect(left, top, plot_w, plot_h, "#ffffff");
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      const double v = r * cols + c < values.size() ? values[r * cols + c] : 0;
      if (!(v > 0)) continue;
      const std::string where = (r < row_labels.size() ? row_labels[r] : fmt::format("row {}", r)) + ", " +
                                (c < col_labels.size() ? col_labels[c] : fmt::format("col {}", c));
      svg.rect(left + cell_w * static_cast<double>(c), top + cell_h * static_cast<double>(r), cell_w, cell_h,
               heat_colour(0.15 + 0.85 * scale(v)), where + ": " + format_number(v, 6));
    }
    if (r < row_labels.size() && (cell_h >= 6 || r % static_cast<std::size_t>(std::ceil(6 / cell_h)) == 0))
      svg.text(left - 4, top + cell_h * (static_cast<double>(r) + 0.75), row_labels[r].size() > 40 ? row_labels[r].substr(0, 39) + "…" : row_labels[r], "end",
               std::clamp(cell_h, 6.0, 10.0));
  }
  const std::size_t every = std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(14.0 / cell_w)));
  for (std::size_t c = 0; c < col_labels.size() && c < cols; c += every)
    svg.text(left + cell_w * (static_cast<double>(c) + 0.5), top + plot_h + 12, col_labels[c], "middle", 9);
  svg.line(left, top + plot_h, left + plot_w, top + plot_h, "#444");
  // Colour scale.
  for (int k = 0; k < 10; ++k)
    svg.rect(left + plot_w + 20, top + plot_h * (1 - (k + 1) / 10.0), 14, plot_h / 10.0, heat_colour(0.15 + 0.85 * k / 9.0));
  svg.text(left + plot_w + 38, top + 8, format_number(top_value, 3), "start", 9);
  svg.text(left + plot_w + 38, top + plot_h, log_scale ? "0 (log)" : "0", "start", 9);
  if (rows == 0 || cols == 0 || top_value <= 0) svg.text(left + plot_w / 2, top + plot_h / 2, "no mismatches", "middle", 12);
  return svg.finish();
}

}  // namespace peat::impl::report
