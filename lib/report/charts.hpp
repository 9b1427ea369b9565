// The report's chart types, each drawn as one inline SVG (svg.hpp): a bar
// histogram, a line chart with an optional band, a heat map. Inputs are plain
// numbers and labels; the functions know nothing of signatures or files.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace peat::impl::report {

// Colour `index` of a palette that stays distinguishable when printed.
const char* palette(std::size_t index);

struct Bar {
  std::string label;    // axis label under the bar (may be "" to skip)
  double value = 0;     // bar height (a count)
  std::string tooltip;  // shown on hover
};

// Vertical bars, one per entry, left to right. log_y draws log10(1 + value)
// so that a few outliers next to millions of exact pairs stay visible.
std::string histogram_chart(std::string_view id, std::string_view title, const std::vector<Bar>& bars,
                            std::string_view x_label, bool log_y);

struct LineSeries {
  std::string label;
  std::vector<double> x, y;  // same length; non-finite y values break the line
  bool dashed = false;
};

// A band drawn under the lines, e.g. golden +- noise band.
struct Band {
  std::string label;
  std::vector<double> x, lo, hi;  // same length
};

// At most this many lines in one chart; more are split into small multiples.
constexpr std::size_t kMaxSeriesPerChart = 6;
// A log axis spans at most this many decades (lower values sit on the axis).
constexpr double kMaxDecades = 10;

// Lines over a shared x axis; log_y plots log10(y) of positive values only,
// over whole decades chosen from the data. Draws the first
// kMaxSeriesPerChart series; the legend under the plot gives whole labels.
std::string line_chart(std::string_view id, std::string_view title, const std::vector<LineSeries>& series,
                       const std::optional<Band>& band, std::string_view x_label, std::string_view y_label,
                       bool log_y);

// The series as charts of at most kMaxSeriesPerChart lines each, ids
// "<id>-1", "<id>-2", ...
std::string small_multiples(std::string_view id, std::string_view title, const std::vector<LineSeries>& series,
                            std::string_view x_label, std::string_view y_label, bool log_y);

// The plot area of a heat map never exceeds these (CSS pixels).
constexpr double kMaxHeatMapWidth = 600, kMaxHeatMapHeight = 480;

// A heat map of rows x cols values (row-major), coloured from white (0) to
// dark red (the largest value), with a log scale when log_scale is set.
// Labels are optional (empty vectors: no labels, e.g. for a large tile grid).
std::string heat_map(std::string_view id, std::string_view title, std::size_t rows, std::size_t cols,
                     const std::vector<double>& values, const std::vector<std::string>& row_labels,
                     const std::vector<std::string>& col_labels, std::string_view x_label, bool log_scale);

}  // namespace peat::impl::report
