#include "lib/report/report.hpp"

#include "lib/analyzer/defaults.hpp"
#include "lib/core/error.hpp"
#include "lib/detector/defaults.hpp"
#include "lib/report/defaults.hpp"
#include "lib/trace/format.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace peat::impl::report {

namespace {

std::string read_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) fail(PEAT_STATUS_NOT_FOUND, "{}: no such file", path);
  if (std::filesystem::is_directory(path, ec)) fail(PEAT_STATUS_IO_ERROR, "{}: is a directory", path);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(PEAT_STATUS_IO_ERROR, "{}: cannot open: {}", path, std::strerror(errno));
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) fail(PEAT_STATUS_IO_ERROR, "{}: read failed: {}", path, std::strerror(errno));
  return std::move(s).str();
}

bool is_playback_jsonl(const std::string& text) {
  const std::size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string::npos || text[start] != '{') return false;
  const std::size_t end = text.find('\n', start);
  const std::string first = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
  return first.find("\"type\"") != std::string::npos;
}

}  // namespace

Report::Report(const peat_report_options_t& options) {
  check_options(options);
  model_.title = options.title ? options.title : "PEAT report";
  model_.max_table_rows = options.max_table_rows;
}

peat_report_input_kind_t Report::add_input(const std::string& path) {
  const std::string text = read_file(path);
  if (text.size() >= sizeof trace::kFileMagic && std::memcmp(text.data(), trace::kFileMagic, sizeof trace::kFileMagic) == 0) {
    model_.traces.push_back(read_trace_summary(path));
    return PEAT_REPORT_INPUT_TRACE;
  }
  const std::size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string::npos) fail(PEAT_STATUS_CORRUPT_DATA, "{}: empty file", path);
  if (text[start] != '{')
    fail(PEAT_STATUS_CORRUPT_DATA, "{}: neither a PEAT trace (bad magic) nor a JSON report", path);
  if (is_playback_jsonl(text)) {
    // One JSON object per line whose first line parses alone: playback lines.
    const std::size_t end = text.find('\n', start);
    const bool one_line_object =
        nlohmann::json::accept(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (one_line_object) {
      auto runs = read_playback_jsonl(path, text);
      for (auto& r : runs) model_.playback.push_back(std::move(r));
      return PEAT_REPORT_INPUT_PLAYBACK;
    }
  }
  RuntimeReport r = read_runtime_json(path, text);
  // Bands and runs the API gave already win over the file's.
  for (StageBand& b : r.bands) {
    const bool have = std::any_of(model_.bands.begin(), model_.bands.end(), [&](const StageBand& x) { return x.stage == b.stage; });
    if (!have) model_.bands.push_back(std::move(b));
  }
  r.bands.clear();
  for (FiRun& f : r.fi_runs) {
    const bool have = std::any_of(model_.fi_runs.begin(), model_.fi_runs.end(), [&](const FiRun& x) {
      return x.candidate == f.candidate && x.label == f.label && x.stage == f.stage;
    });
    if (!have) model_.fi_runs.push_back(std::move(f));
  }
  r.fi_runs.clear();
  model_.runtime.push_back(std::move(r));
  return PEAT_REPORT_INPUT_RUNTIME;
}

void Report::add_signature(const std::string& source, const std::string& op, int64_t step, uint64_t call,
                           const peat_signature_t& signature, const peat_detection_t* detection) {
  if (detection) check_detection(*detection);
  const std::string src = source.empty() ? "candidate" : source;
  SignatureGroup* group = nullptr;
  for (auto& g : model_.signatures)
    if (g.source == src && g.op == op) group = &g;
  bool created = false;
  if (group == nullptr) {
    peat_aggregator_options_t options = analyzer::default_aggregator_options();
    options.max_ops = 1;
    SignatureGroup g;
    g.source = src;
    g.op = op;
    g.aggregator = std::make_unique<analyzer::Aggregator>(options);
    model_.signatures.push_back(std::move(g));
    group = &model_.signatures.back();
    created = true;
  }
  try {
    group->aggregator->add(0, step, call, signature);
  } catch (...) {
    if (created) model_.signatures.pop_back();
    throw;
  }
  if (detection) group->detection = *detection;
}

SpatialMapCopy copy_map(const std::string& label, const peat_spatial_map_t& map) {
  detector::require_exact_size(map.struct_size, sizeof(peat_spatial_map_t), "map");
  if (map.rows <= 0 || map.cols <= 0) fail(PEAT_STATUS_INVALID_ARGUMENT, "map '{}' is empty (rows 0)", label);
  if (map.tile_counts == nullptr || map.row_counts == nullptr || map.col_counts == nullptr)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "map '{}' has no row, column or tile counts", label);
  SpatialMapCopy c;
  c.label = label;
  c.rows = map.rows;
  c.cols = map.cols;
  c.tile_rows = map.tile_rows;
  c.tile_cols = map.tile_cols;
  c.grid_rows = map.tile_grid_rows;
  c.grid_cols = map.tile_grid_cols;
  c.mismatches = map.mismatch_count;
  c.tiles.assign(map.tile_counts, map.tile_counts + map.tile_grid_rows * map.tile_grid_cols);
  c.row_counts.assign(map.row_counts, map.row_counts + map.rows);
  c.col_counts.assign(map.col_counts, map.col_counts + map.cols);
  return c;
}

void Report::add_spatial_map(const std::string& label, const peat_spatial_map_t& map) {
  SpatialMapCopy c = copy_map(label, map);
  if (model_.worst_map && model_.worst_map->mismatches >= c.mismatches) return;
  model_.worst_map = std::move(c);
}

std::string Report::render_html() const { return render_page(model_); }

void Report::write_html(const std::string& path) const {
  const std::string html = render_html();
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty() && !std::filesystem::is_directory(parent))
    fail(PEAT_STATUS_NOT_FOUND, "cannot write '{}': directory '{}' does not exist", path, parent.string());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail(PEAT_STATUS_IO_ERROR, "cannot open '{}' for writing: {}", path, std::strerror(errno));
  out.write(html.data(), static_cast<std::streamsize>(html.size()));
  out.flush();
  if (!out) fail(PEAT_STATUS_IO_ERROR, "writing '{}' failed: {}", path, std::strerror(errno));
}

}  // namespace peat::impl::report
