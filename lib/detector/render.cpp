// Renderers of a detection: a text table, JSON (nlohmann-json, with a schema
// version) and CSV.
#include "lib/core/error_model.hpp"
#include "lib/detector/detector.hpp"

#include "lib/core/error.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <string>

namespace peat::impl::detector {
namespace {

std::string csv_quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string joined_evidence(const peat_verdict_t& v, const char* sep) {
  std::string out;
  for (int i = 0; i < v.evidence_count && i < PEAT_DETECT_EVIDENCE_LINES; ++i) {
    if (i) out += sep;
    out += std::string(v.evidence[i], strnlen(v.evidence[i], PEAT_DETECT_EVIDENCE_CHARS));
  }
  return out;
}

}  // namespace

std::string render(const peat_detection_t& d, peat_render_format_t format) {
  if (d.verdict_count < 0 || d.verdict_count > PEAT_DETECT_MAX_VERDICTS)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "detection.verdict_count = {} is outside 0..{}", d.verdict_count,
         PEAT_DETECT_MAX_VERDICTS);
  switch (format) {
    case PEAT_RENDER_TEXT: {
      std::string out = fmt::format("{} elements, {} mismatches\n", d.elements, d.mismatches);
      out += fmt::format("{:<4} {:<18} {:>5} {:>5} {:>4} {:>5} {:>6} {:>10} {:>12} {:>8} {:>8} {:>8} {:>10}\n", "rank",
                         "model", "conf", "bit", "pol", "lane", "bits", "format", "alpha", "rows", "cols", "tiles",
                         "elements");
      for (int i = 0; i < d.verdict_count; ++i) {
        const peat_verdict_t& v = d.verdicts[i];
        out += fmt::format("{:<4} {:<18} {:>5.2f} {:>5} {:>4} {:>5} {:>6.1f} {:>10} {:>12.6g} {:>8} {:>8} {:>8} {:>10}\n",
                           i + 1, error_model_name(v.model), v.confidence, v.bit, v.polarity,
                           v.lane_period > 0 ? fmt::format("{}/{}", v.lane, v.lane_period) : std::string("-"),
                           v.effective_mantissa_bits, format_name(v.nearest_format), v.alpha, v.rows_affected,
                           v.cols_affected, v.tiles_affected, v.elements);
        for (int e = 0; e < v.evidence_count && e < PEAT_DETECT_EVIDENCE_LINES; ++e)
          out += fmt::format("     - {}\n", std::string(v.evidence[e], strnlen(v.evidence[e], PEAT_DETECT_EVIDENCE_CHARS)));
      }
      return out;
    }
    case PEAT_RENDER_JSON: {
      nlohmann::json j;
      j["schema_version"] = PEAT_DETECT_JSON_SCHEMA_VERSION;
      j["elements"] = d.elements;
      j["mismatches"] = d.mismatches;
      nlohmann::json verdicts = nlohmann::json::array();
      for (int i = 0; i < d.verdict_count; ++i) {
        const peat_verdict_t& v = d.verdicts[i];
        nlohmann::json e = nlohmann::json::array();
        for (int k = 0; k < v.evidence_count && k < PEAT_DETECT_EVIDENCE_LINES; ++k)
          e.push_back(std::string(v.evidence[k], strnlen(v.evidence[k], PEAT_DETECT_EVIDENCE_CHARS)));
        verdicts.push_back({{"rank", i + 1},
                            {"model", error_model_name(v.model)},
                            {"model_code", v.model},
                            {"confidence", v.confidence},
                            {"bit", v.bit},
                            {"polarity", v.polarity},
                            {"lane_period", v.lane_period},
                            {"lane", v.lane},
                            {"effective_mantissa_bits", v.effective_mantissa_bits},
                            {"nearest_format", format_name(v.nearest_format)},
                            {"alpha", v.alpha},
                            {"rows_affected", v.rows_affected},
                            {"cols_affected", v.cols_affected},
                            {"tiles_affected", v.tiles_affected},
                            {"elements", v.elements},
                            {"first_index", v.first_index},
                            {"evidence", e}});
      }
      j["verdicts"] = verdicts;
      return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    }
    case PEAT_RENDER_CSV: {
      std::string out =
          "rank,model,confidence,bit,polarity,lane_period,lane,effective_mantissa_bits,nearest_format,alpha,"
          "rows_affected,cols_affected,tiles_affected,elements,first_index,evidence\n";
      for (int i = 0; i < d.verdict_count; ++i) {
        const peat_verdict_t& v = d.verdicts[i];
        out += fmt::format("{},{},{:.4f},{},{},{},{},{:.1f},{},{:.17g},{},{},{},{},{},{}\n", i + 1,
                           error_model_name(v.model), v.confidence, v.bit, v.polarity, v.lane_period, v.lane,
                           v.effective_mantissa_bits, format_name(v.nearest_format), v.alpha, v.rows_affected,
                           v.cols_affected, v.tiles_affected, v.elements, v.first_index,
                           csv_quote(joined_evidence(v, " | ")));
      }
      return out;
    }
    default:
      fail(PEAT_STATUS_INVALID_ARGUMENT, "format = {} is not a peat_render_format_code value (0..2)", format);
  }
}

}  // namespace peat::impl::detector
