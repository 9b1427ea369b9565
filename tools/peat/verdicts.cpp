#include "tools/peat/verdicts.hpp"

#include "tools/peat/common.hpp"

#include <cstdio>
#include <cstring>

namespace peat::cli {

std::string top_verdict(const peat_detection_t& d, bool detected) {
  if (!detected || d.verdict_count < 1) return "-";
  char b[96];
  std::snprintf(b, sizeof b, "%s (%.2f)", peat_error_model_name(d.verdicts[0].model), d.verdicts[0].confidence);
  return b;
}

nlohmann::json verdicts_json(const peat_detection_t& d, bool detected) {
  nlohmann::json out = nlohmann::json::array();
  if (!detected) return out;
  for (int i = 0; i < d.verdict_count && i < PEAT_DETECT_MAX_VERDICTS; ++i) {
    const peat_verdict_t& v = d.verdicts[i];
    nlohmann::json ev = nlohmann::json::array();
    for (int e = 0; e < v.evidence_count && e < PEAT_DETECT_EVIDENCE_LINES; ++e)
      ev.push_back(std::string(v.evidence[e], strnlen(v.evidence[e], PEAT_DETECT_EVIDENCE_CHARS)));
    out.push_back({{"model", peat_error_model_name(v.model)},
                   {"confidence", json_number(v.confidence)},
                   {"bit", v.bit},
                   {"effective_mantissa_bits", json_number(v.effective_mantissa_bits)},
                   {"alpha", json_number(v.alpha)},
                   {"evidence", ev}});
  }
  return out;
}

double relative_l2(const peat_signature_t& s) {
  double v = 0;  // 0 for a signature the library refuses (one never initialised)
  failure([&] { v = peat::relative_l2(s); });
  return v;
}

nlohmann::json signature_json(const peat_signature_t& s) {
  return {{"elements", s.count},
          {"bitwise_mismatches", s.bitwise_mismatch_count},
          {"tolerance_failures", s.tolerance_fail_count},
          {"new_nonfinite", s.new_nonfinite_count},
          {"max_abs_error", json_number(s.max_abs_error)},
          {"max_rel_error", json_number(s.max_rel_error)},
          {"relative_l2", json_number(relative_l2(s))}};
}

std::string csv(const std::string& field) {
  if (field.find_first_of(",\"\n") == std::string::npos) return field;
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';
    out += c == '\n' ? ' ' : c;
  }
  return out + "\"";
}

std::string per_call_text(const peat_playback_verdicts_t& v) {
  if (v.top_model < 0 || v.top_model >= PEAT_PLAYBACK_MODEL_SLOTS) return "";
  std::string out = std::string(peat_error_model_name(v.top_model)) + " " +
                    std::to_string(v.counts[v.top_model]) + "/" + std::to_string(v.records);
  if (v.bits != 0 && (v.top_model == PEAT_ERROR_MODEL_BITFLIP_SINGLE || v.top_model == PEAT_ERROR_MODEL_BITFLIP_MULTI ||
                      v.top_model == PEAT_ERROR_MODEL_STUCK_AT)) {
    out += " bits ";
    const std::vector<int> bits = bits_of(v.bits);
    for (std::size_t i = 0; i < bits.size(); ++i) out += (i ? "," : "") + std::to_string(bits[i]);
  }
  return out;
}

std::vector<int> bits_of(uint64_t mask) {
  std::vector<int> out;
  for (int b = 0; b < 64; ++b)
    if ((mask >> b) & 1u) out.push_back(b);
  return out;
}

}  // namespace peat::cli
