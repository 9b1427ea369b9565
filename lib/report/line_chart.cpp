// Line chart: error over training steps, loss curves with the noise band.
#include "report/charts.hpp"
#include "report/svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace peat::report {

std::string line_chart(std::string_view id, std::string_view title, const std::vector<LineSeries>& series,
                       const std::optional<Band>& band, std::string_view x_label, std::string_view y_label,
                       bool log_y) {
  const double width = 760, height = 300, left = 64, right = 170, top = 24, bottom = 40;
  SvgWriter svg(id, width, height, title);
  svg.text((width - right + left) / 2, 16, title, "middle", 13);
  const double plot_w = width - left - right, plot_h = height - top - bottom;
  const auto ty = [&](double v) { return log_y ? (v > 0 ? std::log10(v) : NAN) : v; };
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  const auto take = [&](double x, double y) {
    if (!std::isfinite(x) || !std::isfinite(y)) return;
    x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
  };
  for (const LineSeries& s : series)
    for (std::size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i) take(s.x[i], ty(s.y[i]));
  if (band)
    for (std::size_t i = 0; i < band->x.size() && i < band->lo.size() && i < band->hi.size(); ++i) {
      take(band->x[i], ty(band->lo[i]));
      take(band->x[i], ty(band->hi[i]));
    }
  svg.line(left, top + plot_h, left + plot_w, top + plot_h, "#444");
  svg.line(left, top, left, top + plot_h, "#444");
  svg.text(left + plot_w / 2, height - 6, x_label, "middle", 11);
  svg.text(14, top + plot_h / 2, y_label, "middle", 10, -90);
  if (!(x0 <= x1)) {
    svg.text(left + plot_w / 2, top + plot_h / 2, "no data", "middle", 12);
    return svg.finish();
  }
  if (x1 == x0) x1 = x0 + 1;
  if (y1 == y0) y1 = y0 + (y0 == 0 ? 1 : std::fabs(y0) * 0.1);
  const auto px = [&](double x) { return left + plot_w * (x - x0) / (x1 - x0); };
  const auto py = [&](double y) { return top + plot_h * (1 - (y - y0) / (y1 - y0)); };
  const auto ylabel = [&](double y) { return format_number(log_y ? std::pow(10.0, y) : y, 3); };
  for (int k = 0; k <= 4; ++k) {
    const double y = y0 + (y1 - y0) * k / 4.0;
    svg.line(left, py(y), left + plot_w, py(y), "#ddd", 0.5);
    svg.text(left - 4, py(y) + 3, ylabel(y), "end", 10);
    const double x = x0 + (x1 - x0) * k / 4.0;
    svg.text(px(x), top + plot_h + 13, format_number(x, 5), "middle", 10);
  }
  double legend_y = top + 10;
  if (band && !band->x.empty()) {
    std::string pts;
    for (std::size_t i = 0; i < band->x.size(); ++i)
      if (std::isfinite(ty(band->hi[i]))) pts += fmt::format("{:.2f},{:.2f} ", px(band->x[i]), py(ty(band->hi[i])));
    for (std::size_t i = band->x.size(); i-- > 0;)
      if (std::isfinite(ty(band->lo[i]))) pts += fmt::format("{:.2f},{:.2f} ", px(band->x[i]), py(ty(band->lo[i])));
    svg.polygon(pts, "#999999", 0.3);
    svg.rect(left + plot_w + 10, legend_y - 8, 14, 8, "#cccccc");
    svg.text(left + plot_w + 28, legend_y, band->label, "start", 10);
    legend_y += 14;
  }
  for (std::size_t k = 0; k < series.size(); ++k) {
    const LineSeries& s = series[k];
    std::string pts;
    const auto flush = [&] {
      if (!pts.empty()) svg.polyline(pts, palette(k), 1.5, s.dashed ? "5,3" : "");
      pts.clear();
    };
    for (std::size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i) {
      const double y = ty(s.y[i]);
      if (!std::isfinite(y) || !std::isfinite(s.x[i])) {
        flush();
        continue;
      }
      pts += fmt::format("{:.2f},{:.2f} ", px(s.x[i]), py(y));
    }
    flush();
    if (legend_y < height - 10) {
      svg.line(left + plot_w + 10, legend_y - 4, left + plot_w + 24, legend_y - 4, palette(k), 2, s.dashed ? "5,3" : "");
      svg.text(left + plot_w + 28, legend_y, s.label.size() > 26 ? s.label.substr(0, 25) + "…" : s.label, "start", 10);
      legend_y += 14;
    }
  }
  return svg.finish();
}

}  // namespace peat::report
