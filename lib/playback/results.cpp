// Playback's results as the C API reads them: per record and per group
// (op or layer), their signatures, and the JSON-lines export.
#include "lib/playback/work.hpp"

#include "lib/core/error.hpp"
#include "lib/core/status.hpp"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unordered_map>

namespace peat::impl::playback {

const Result& Playback::result(uint64_t index) const {
  if (index >= results_.size())
    fail(PEAT_STATUS_NOT_FOUND, "result {} does not exist (the last run has {})", index, results_.size());
  return results_[index];
}

namespace {
void check_which(peat_playback_compare_t which, bool run_twice) {
  if (which < PEAT_PLAYBACK_FIRST_VS_GOLDEN || which > PEAT_PLAYBACK_SECOND_VS_FIRST)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "which {} is not a peat_playback_compare_code value (0..2)", which);
  if (which != PEAT_PLAYBACK_FIRST_VS_GOLDEN && !run_twice)
    fail(PEAT_STATUS_NOT_FOUND, "comparison {} needs options.run_twice = 1", which);
}
void check_kind(peat_playback_group_kind_t kind) {
  if (kind != PEAT_PLAYBACK_BY_OP && kind != PEAT_PLAYBACK_BY_LAYER)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "kind {} is not a peat_playback_group_kind_code value (0..1)", kind);
}
}  // namespace

const peat_signature_t& Playback::result_signature(uint64_t index, uint64_t output,
                                                   peat_playback_compare_t which) const {
  check_which(which, run_twice());
  const Result& r = result(index);
  if (r.status != PEAT_STATUS_OK)
    fail(PEAT_STATUS_NOT_FOUND, "result {} (record {}) was not compared: {}", index, r.record, r.message);
  if (output >= r.signatures.size())
    fail(PEAT_STATUS_NOT_FOUND, "result {} has {} outputs; there is no output {}", index, r.signatures.size(), output);
  return r.signatures[output][which];
}

const Playback::Grouping& Playback::grouping(peat_playback_group_kind_t kind) const {
  check_kind(kind);
  return kind == PEAT_PLAYBACK_BY_OP ? by_op_ : by_layer_;
}

uint64_t Playback::group_count(peat_playback_group_kind_t kind) const { return grouping(kind).groups.size(); }

const Group& Playback::group(peat_playback_group_kind_t kind, uint64_t index) const {
  const Grouping& g = grouping(kind);
  if (index >= g.groups.size())
    fail(PEAT_STATUS_NOT_FOUND, "group {} does not exist (there are {})", index, g.groups.size());
  return g.groups[index];
}

peat_signature_t Playback::group_signature(peat_playback_group_kind_t kind, uint64_t index, uint64_t output,
                                           peat_playback_compare_t which) const {
  check_which(which, run_twice());
  const Group& g = group(kind, index);
  if (output >= g.n_outputs)
    fail(PEAT_STATUS_NOT_FOUND, "group '{}' has {} outputs; there is no output {}", g.name, g.n_outputs, output);
  return g.aggregators[output]->signature(static_cast<uint32_t>(which));
}

// The recorded name of output `i` of `record` ("grad_weight"; "" when none).
std::string Playback::output_name(uint64_t record, std::size_t i) const {
  if (i >= reader_.tensor_count(record, PEAT_TRACE_SLOT_OUTPUT)) return {};
  return str(reader_.tensor(record, PEAT_TRACE_SLOT_OUTPUT, i).name());
}

void Playback::write_jsonl(const std::string& path, bool append) const {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty() && !std::filesystem::is_directory(parent))
    fail(PEAT_STATUS_NOT_FOUND, "cannot write '{}': directory '{}' does not exist", path, parent.string());
  std::ofstream out(path, append ? std::ios::app : std::ios::trunc);
  if (!out) fail(PEAT_STATUS_IO_ERROR, "cannot open '{}' for writing: {}", path, std::strerror(errno));
  const auto figures = [&](const peat_signature_t& s, nlohmann::json& j) {
    j["elements"] = s.count;
    j["bitwise_mismatches"] = s.bitwise_mismatch_count;
    j["tolerance_failures"] = s.tolerance_fail_count;
    j["new_nonfinite"] = s.new_nonfinite_count;
    j["max_abs_error"] = s.max_abs_error;
    j["max_rel_error"] = s.max_rel_error;
  };
  for (const Result& r : results_) {
    nlohmann::json j;
    j["type"] = "record";
    j["record"] = r.record;
    j["op"] = r.op;
    j["layer"] = r.module_path;
    j["phase"] = r.phase;
    j["step"] = r.step;
    j["call"] = r.call_index;
    j["status"] = status_name(r.status);
    j["message"] = r.message;
    j["deterministic"] = r.deterministic;
    nlohmann::json outs = nlohmann::json::array();
    for (std::size_t i = 0; i < r.signatures.size(); ++i) {
      const auto& sigs = r.signatures[i];
      nlohmann::json o;
      o["name"] = output_name(r.record, i);
      figures(sigs[PEAT_PLAYBACK_FIRST_VS_GOLDEN], o);
      if (run_twice()) o["repeat_mismatches"] = sigs[PEAT_PLAYBACK_SECOND_VS_FIRST].bitwise_mismatch_count;
      outs.push_back(std::move(o));
    }
    j["outputs"] = std::move(outs);
    out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  }
  std::unordered_map<std::string, uint64_t> first_ok;  // op -> its first compared record: names the outputs
  for (const Result& r : results_)
    if (r.status == PEAT_STATUS_OK) first_ok.emplace(r.op, r.record);
  for (const auto kind : {PEAT_PLAYBACK_BY_OP, PEAT_PLAYBACK_BY_LAYER}) {
    const Grouping& grp = grouping(kind);
    for (const Group& g : grp.groups) {
      const auto named = kind == PEAT_PLAYBACK_BY_OP ? first_ok.find(g.name) : first_ok.end();
      nlohmann::json j;
      j["type"] = kind == PEAT_PLAYBACK_BY_OP ? "op" : "layer";
      j["name"] = g.name;
      j["records"] = g.records;
      j["ok"] = g.ok;
      j["failed"] = g.failed;
      j["exact"] = g.exact;
      j["nondeterministic"] = g.nondeterministic;
      nlohmann::json outs = nlohmann::json::array();
      for (uint64_t i = 0; i < g.n_outputs; ++i) {
        nlohmann::json o;
        o["name"] = named != first_ok.end() ? output_name(named->second, i) : std::string();
        figures(g.aggregators[i]->signature(PEAT_PLAYBACK_FIRST_VS_GOLDEN), o);
        if (run_twice())
          o["repeat_mismatches"] = g.aggregators[i]->signature(PEAT_PLAYBACK_SECOND_VS_FIRST).bitwise_mismatch_count;
        outs.push_back(std::move(o));
      }
      j["outputs"] = std::move(outs);
      out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    }
  }
  out.flush();
  if (!out) fail(PEAT_STATUS_IO_ERROR, "writing '{}' failed: {}", path, std::strerror(errno));
}

}  // namespace peat::impl::playback
