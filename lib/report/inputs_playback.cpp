// Reads the JSON lines of peat_playback_write_jsonl: record lines, then op
// and layer group lines; files with several appended runs give several runs.
#include "report/report.hpp"

#include "core/error.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <sstream>

namespace peat::report {

namespace {

using nlohmann::json;

template <typename T>
T get_or(const json& j, const char* key, T fallback) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  return it->get<T>();
}

// Sums or maxima of the per-output figures.
template <typename Row>
void read_outputs(const json& j, Row& row) {
  const auto it = j.find("outputs");
  if (it == j.end() || !it->is_array()) return;
  for (const json& o : *it) {
    row.elements += get_or<uint64_t>(o, "elements", 0);
    row.bitwise += get_or<uint64_t>(o, "bitwise_mismatches", 0);
    row.tolerance_failures += get_or<uint64_t>(o, "tolerance_failures", 0);
    row.nonfinite += get_or<uint64_t>(o, "new_nonfinite", 0);
    row.max_abs_error = std::max(row.max_abs_error, get_or<double>(o, "max_abs_error", 0.0));
    row.max_rel_error = std::max(row.max_rel_error, get_or<double>(o, "max_rel_error", 0.0));
  }
}

}  // namespace

std::vector<PlaybackRun> read_playback_jsonl(const std::string& path, const std::string& text) {
  std::vector<PlaybackRun> runs;
  std::istringstream in(text);
  std::string line;
  uint64_t line_no = 0;
  bool in_groups = false;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    json j;
    try {
      j = json::parse(line);
    } catch (const json::exception& e) {
      fail(PEAT_STATUS_CORRUPT_DATA, "{}: line {}: not JSON ({})", path, line_no, e.what());
    }
    try {
      if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
        fail(PEAT_STATUS_CORRUPT_DATA, "{}: line {}: not a playback line (no \"type\")", path, line_no);
      const std::string type = j["type"].get<std::string>();
      if (type == "record") {
        if (runs.empty() || in_groups) {
          runs.emplace_back();
          runs.back().path = path;
          runs.back().label = "run " + std::to_string(runs.size());
        }
        in_groups = false;
        PlaybackRecord r;
        r.record = get_or<uint64_t>(j, "record", 0);
        r.op = get_or<std::string>(j, "op", "");
        r.layer = get_or<std::string>(j, "layer", "");
        r.step = get_or<int64_t>(j, "step", 0);
        r.call = get_or<uint64_t>(j, "call", 0);
        r.status = get_or<std::string>(j, "status", "");
        r.message = get_or<std::string>(j, "message", "");
        r.deterministic = get_or<int>(j, "deterministic", -1);
        read_outputs(j, r);
        runs.back().records.push_back(std::move(r));
      } else if (type == "op" || type == "layer") {
        if (runs.empty()) {
          runs.emplace_back();
          runs.back().path = path;
          runs.back().label = "run 1";
        }
        in_groups = true;
        PlaybackGroup g;
        g.type = type;
        g.name = get_or<std::string>(j, "name", "");
        g.records = get_or<uint64_t>(j, "records", 0);
        g.ok = get_or<uint64_t>(j, "ok", 0);
        g.failed = get_or<uint64_t>(j, "failed", 0);
        g.exact = get_or<uint64_t>(j, "exact", 0);
        g.nondeterministic = get_or<uint64_t>(j, "nondeterministic", 0);
        read_outputs(j, g);
        runs.back().groups.push_back(std::move(g));
      }  // other types: ignored (forward compatibility)
    } catch (const json::exception& e) {
      fail(PEAT_STATUS_CORRUPT_DATA, "{}: line {}: unexpected value ({})", path, line_no, e.what());
    }
  }
  if (runs.empty()) fail(PEAT_STATUS_CORRUPT_DATA, "{}: no playback record or group line", path);
  return runs;
}

}  // namespace peat::report
