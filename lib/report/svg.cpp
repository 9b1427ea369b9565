#include "lib/report/svg.hpp"

#include "lib/core/utf8.hpp"

#include <fmt/format.h>

#include <cmath>

namespace peat::impl::report {

std::string escape_html(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 16);
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    switch (c) {
      case '&': out += "&amp;"; ++i; continue;
      case '<': out += "&lt;"; ++i; continue;
      case '>': out += "&gt;"; ++i; continue;
      case '"': out += "&quot;"; ++i; continue;
      case '\'': out += "&#39;"; ++i; continue;
      default: break;
    }
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x20 && c != '\t' && c != '\n') {
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    const std::size_t n = utf8_length(text, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    out.append(text.substr(i, n));
    i += n;
  }
  return out;
}

std::string format_number(double value, int digits) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Inf" : "-Inf";
  return fmt::format("{:.{}g}", value, digits);
}

SvgWriter::SvgWriter(std::string_view id, double width, double height, std::string_view title, long series) {
  out_ = fmt::format(
      "<svg id=\"{}\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {} {}\" width=\"{}\" "
      "height=\"{}\"{} role=\"img\"><title>{}</title>",
      escape_html(id), width, height, width, height, series >= 0 ? fmt::format(" data-series=\"{}\"", series) : "",
      escape_html(title));
}

void SvgWriter::rect(double x, double y, double w, double h, std::string_view fill, std::string_view tooltip) {
  out_ += fmt::format("<rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" fill=\"{}\"", x, y, w, h,
                      escape_html(fill));
  if (tooltip.empty())
    out_ += "/>";
  else
    out_ += fmt::format("><title>{}</title></rect>", escape_html(tooltip));
}

void SvgWriter::line(double x1, double y1, double x2, double y2, std::string_view stroke, double width,
                     std::string_view dash) {
  out_ += fmt::format("<line x1=\"{:.2f}\" y1=\"{:.2f}\" x2=\"{:.2f}\" y2=\"{:.2f}\" stroke=\"{}\" stroke-width=\"{}\"",
                      x1, y1, x2, y2, escape_html(stroke), width);
  if (!dash.empty()) out_ += fmt::format(" stroke-dasharray=\"{}\"", escape_html(dash));
  out_ += "/>";
}

void SvgWriter::polyline(std::string_view points, std::string_view stroke, double width, std::string_view dash) {
  out_ += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\"", escape_html(points),
                      escape_html(stroke), width);
  if (!dash.empty()) out_ += fmt::format(" stroke-dasharray=\"{}\"", escape_html(dash));
  out_ += "/>";
}

void SvgWriter::polygon(std::string_view points, std::string_view fill, double opacity) {
  out_ += fmt::format("<polygon points=\"{}\" fill=\"{}\" fill-opacity=\"{}\" stroke=\"none\"/>", escape_html(points),
                      escape_html(fill), opacity);
}

void SvgWriter::text(double x, double y, std::string_view content, std::string_view anchor, double size,
                     double rotate) {
  out_ += fmt::format("<text x=\"{:.2f}\" y=\"{:.2f}\" text-anchor=\"{}\" font-size=\"{}\"", x, y, escape_html(anchor),
                      size);
  if (rotate != 0) out_ += fmt::format(" transform=\"rotate({} {:.2f} {:.2f})\"", rotate, x, y);
  out_ += fmt::format(">{}</text>", escape_html(content));
}

std::string SvgWriter::finish() {
  out_ += "</svg>";
  return std::move(out_);
}

}  // namespace peat::impl::report
