// Bar histogram (relative-error and ULP-distance buckets, drift bars).
#include "lib/report/charts.hpp"
#include "lib/report/svg.hpp"

#include <algorithm>
#include <cmath>

namespace peat::impl::report {

const char* palette(std::size_t index) {
  static const char* colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                  "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};
  return colours[index % (sizeof colours / sizeof colours[0])];
}

std::string histogram_chart(std::string_view id, std::string_view title, const std::vector<Bar>& bars,
                            std::string_view x_label, bool log_y) {
  const double width = 570, height = 230, left = 56, right = 12, top = 24, bottom = 58;
  SvgWriter svg(id, width, height, title);
  svg.text(width / 2, 16, title, "middle", 13);
  const double plot_w = width - left - right, plot_h = height - top - bottom;
  const auto scaled = [&](double v) { return log_y ? std::log10(1 + std::max(0.0, v)) : std::max(0.0, v); };
  double top_value = 0;
  for (const Bar& b : bars) top_value = std::max(top_value, scaled(b.value));
  svg.line(left, top + plot_h, left + plot_w, top + plot_h, "#444");
  svg.line(left, top, left, top + plot_h, "#444");
  svg.text(left - 4, top + 8, format_number(log_y ? std::pow(10.0, top_value) - 1 : top_value, 3), "end", 10);
  svg.text(left - 4, top + plot_h, "0", "end", 10);
  svg.text(14, top + plot_h / 2, log_y ? "count (log)" : "count", "middle", 10, -90);
  svg.text(left + plot_w / 2, height - 6, x_label, "middle", 11);
  if (bars.empty() || top_value <= 0) {
    svg.text(left + plot_w / 2, top + plot_h / 2, "no data", "middle", 12);
    return svg.finish();
  }
  const double slot = plot_w / static_cast<double>(bars.size());
  const std::size_t label_every = std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(28.0 / slot)));
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const double x = left + slot * static_cast<double>(i);
    const double h = plot_h * scaled(bars[i].value) / top_value;
    if (bars[i].value > 0)
      svg.rect(x + slot * 0.1, top + plot_h - std::max(h, 1.0), slot * 0.8, std::max(h, 1.0), palette(0),
               bars[i].tooltip.empty() ? bars[i].label + ": " + format_number(bars[i].value, 6) : bars[i].tooltip);
    if (!bars[i].label.empty() && i % label_every == 0)
      svg.text(x + slot / 2, top + plot_h + 12, bars[i].label, "end", 9, -45);
  }
  return svg.finish();
}

}  // namespace peat::impl::report
