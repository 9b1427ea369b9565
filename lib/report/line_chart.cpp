// Line chart: error over training steps, loss curves with the noise band.
#include "lib/report/charts.hpp"
#include "lib/report/svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace peat::impl::report {

namespace {
constexpr std::size_t kMarkedPoints = 60;
}  // namespace

std::string line_chart(std::string_view id, std::string_view title, const std::vector<LineSeries>& all_series,
                       const std::optional<Band>& band, std::string_view x_label, std::string_view y_label,
                       bool log_y) {
  // A chart holds at most kMaxSeriesPerChart lines (callers split larger sets
  // into small multiples); the legend sits under the plot with whole labels.
  const std::vector<LineSeries> series(all_series.begin(),
                                       all_series.begin() + static_cast<std::ptrdiff_t>(std::min(all_series.size(), kMaxSeriesPerChart)));
  const std::size_t legend_rows = series.size() + (band ? 1 : 0);
  const double width = 560, left = 64, right = 16, top = 24, bottom = 40;
  const double plot_h = 200, legend_h = 14.0 * static_cast<double>(legend_rows) + 6;
  const double height = top + plot_h + bottom + legend_h;
  SvgWriter svg(id, width, height, title, series.size());
  svg.text((width - right + left) / 2, 16, title, "middle", 12);
  const double plot_w = width - left - right;
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
  svg.text(left + plot_w / 2, top + plot_h + 30, x_label, "middle", 11);
  svg.text(14, top + plot_h / 2, y_label, "middle", 10, -90);
  if (!(x0 <= x1)) {
    svg.text(left + plot_w / 2, top + plot_h / 2, "no data", "middle", 12);
    return svg.finish();
  }
  if (x1 == x0) x1 = x0 + 1;
  bool clipped = false;
  if (log_y) {
    // Whole decades around the data, at most kMaxDecades of them: a few
    // exact-looking points far below the rest do not squash the lines.
    y1 = std::ceil(y1 - 1e-9);
    y0 = std::floor(y0);
    if (y1 - y0 > kMaxDecades) y0 = y1 - kMaxDecades, clipped = true;
    if (y1 == y0) y0 = y1 - 1;
  } else {
    const double pad = (y1 - y0) * 0.05;
    y0 -= pad, y1 += pad;
    if (y1 == y0) y1 = y0 + (y0 == 0 ? 1 : std::fabs(y0) * 0.1);
  }
  const auto px = [&](double x) { return left + plot_w * (x - x0) / (x1 - x0); };
  const auto py = [&](double y) { return top + plot_h * (1 - (std::max(y, y0) - y0) / (y1 - y0)); };
  const int ticks = log_y ? static_cast<int>(y1 - y0) : 4;
  const int tick_every = std::max(1, ticks / 6);
  for (int k = 0; k <= ticks; k += tick_every) {
    const double y = y0 + (y1 - y0) * k / ticks;
    svg.line(left, py(y), left + plot_w, py(y), "#ddd", 0.5);
    svg.text(left - 4, py(y) + 3, log_y ? fmt::format("1e{}", static_cast<int>(std::lround(y))) : format_number(y, 3), "end", 10);
  }
  for (int k = 0; k <= 4; ++k) {
    const double x = x0 + (x1 - x0) * k / 4.0;
    svg.text(px(x), top + plot_h + 13, format_number(x, 5), "middle", 10);
  }
  if (clipped) svg.text(left + 4, top + plot_h - 4, fmt::format("values below 1e{} drawn at the axis", static_cast<int>(y0)), "start", 9);
  double legend_y = top + plot_h + bottom + 12;
  if (band && !band->x.empty()) {
    std::string pts;
    for (std::size_t i = 0; i < band->x.size(); ++i)
      if (std::isfinite(ty(band->hi[i]))) pts += fmt::format("{:.2f},{:.2f} ", px(band->x[i]), py(ty(band->hi[i])));
    for (std::size_t i = band->x.size(); i-- > 0;)
      if (std::isfinite(ty(band->lo[i]))) pts += fmt::format("{:.2f},{:.2f} ", px(band->x[i]), py(ty(band->lo[i])));
    svg.polygon(pts, "#999999", 0.3);
    svg.rect(left, legend_y - 8, 14, 8, "#cccccc");
    svg.text(left + 20, legend_y, band->label, "start", 10);
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
      // Sparse series get a marker per point, so a lone call still shows.
      if (s.x.size() <= kMarkedPoints) svg.rect(px(s.x[i]) - 2, py(y) - 2, 4, 4, palette(k));
    }
    flush();
    svg.line(left, legend_y - 4, left + 14, legend_y - 4, palette(k), 2, s.dashed ? "5,3" : "");
    svg.text(left + 20, legend_y, s.label.size() > 80 ? s.label.substr(0, 79) + "…" : s.label, "start", 10);
    legend_y += 14;
  }
  return svg.finish();
}

std::string small_multiples(std::string_view id, std::string_view title, const std::vector<LineSeries>& series,
                            std::string_view x_label, std::string_view y_label, bool log_y) {
  std::string out;
  const std::size_t charts = (series.size() + kMaxSeriesPerChart - 1) / kMaxSeriesPerChart;
  for (std::size_t c = 0; c < charts; ++c) {
    const auto first = series.begin() + static_cast<std::ptrdiff_t>(c * kMaxSeriesPerChart);
    const auto last = series.begin() + static_cast<std::ptrdiff_t>(std::min(series.size(), (c + 1) * kMaxSeriesPerChart));
    const std::string t = charts > 1 ? fmt::format("{} ({} of {})", title, c + 1, charts) : std::string(title);
    out += line_chart(fmt::format("{}-{}", id, c + 1), t, std::vector<LineSeries>(first, last), std::nullopt, x_label,
                      y_label, log_y);
  }
  return out;
}

}  // namespace peat::impl::report
