// Reads the JSON lines of peat_playback_write_jsonl: record lines, then op
// and layer group lines; files with several appended runs give several runs.
#include "lib/report/report.hpp"

#include "lib/core/error.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <sstream>

namespace peat::impl::report {

namespace {

using nlohmann::json;

template <typename T>
T get_or(const json& j, const char* key, T fallback) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  return it->get<T>();
}

// Adds one output's figures to a row (sums and maxima).
template <typename Row>
void add_output(const json& o, Row& row) {
  row.elements += get_or<uint64_t>(o, "elements", 0);
  row.bitwise += get_or<uint64_t>(o, "bitwise_mismatches", 0);
  row.tolerance_failures += get_or<uint64_t>(o, "tolerance_failures", 0);
  row.nonfinite += get_or<uint64_t>(o, "new_nonfinite", 0);
  row.max_abs_error = std::max(row.max_abs_error, get_or<double>(o, "max_abs_error", 0.0));
  row.max_rel_error = std::max(row.max_rel_error, get_or<double>(o, "max_rel_error", 0.0));
}

// Sums or maxima of the per-output figures (a record's row).
template <typename Row>
void read_outputs(const json& j, Row& row) {
  const auto it = j.find("outputs");
  if (it == j.end() || !it->is_array()) return;
  for (const json& o : *it) add_output(o, row);
}

// A group line gives one row per output: the group's name for a
// single-output op, "<name>[<output name>]" (the index when unnamed) for each
// output of a multi-output one, as Python's Playback labels them
// ("conv1/aten::convolution_backward[grad_weight]").
std::vector<PlaybackGroup> group_rows(const json& j, const PlaybackGroup& base) {
  const auto it = j.find("outputs");
  if (it == j.end() || !it->is_array() || it->size() <= 1) {
    PlaybackGroup g = base;
    read_outputs(j, g);
    return {g};
  }
  std::vector<PlaybackGroup> rows;
  for (std::size_t i = 0; i < it->size(); ++i) {
    const json& o = (*it)[i];
    PlaybackGroup g = base;
    const std::string name = get_or<std::string>(o, "name", "");
    g.name = base.name + "[" + (name.empty() ? std::to_string(i) : name) + "]";
    add_output(o, g);
    rows.push_back(std::move(g));
  }
  return rows;
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
        for (PlaybackGroup& row : group_rows(j, g)) runs.back().groups.push_back(std::move(row));
      }  // other types: ignored (forward compatibility)
    } catch (const json::exception& e) {
      fail(PEAT_STATUS_CORRUPT_DATA, "{}: line {}: unexpected value ({})", path, line_no, e.what());
    }
  }
  if (runs.empty()) fail(PEAT_STATUS_CORRUPT_DATA, "{}: no playback record or group line", path);
  return runs;
}

}  // namespace peat::impl::report
