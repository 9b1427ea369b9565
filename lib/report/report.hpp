// peat::impl::report::Report — the builder behind peat_report_t (peat/report.h).
#pragma once

#include <peat/report.h>

#include "lib/report/model.hpp"

#include <string>

namespace peat::impl::playback {
class Playback;
}

namespace peat::impl::report {

class Report {
 public:
  explicit Report(const peat_report_options_t& options);  // throws INVALID_ARGUMENT (check_options)

  // Each throws peat::impl::Error naming the file and what is wrong; on error the
  // model is unchanged.
  peat_report_input_kind_t add_input(const std::string& path);
  void add_signature(const std::string& source, const std::string& op, int64_t step, uint64_t call,
                     const peat_signature_t& signature, const peat_detection_t* detection);  // check_detection
  void add_spatial_map(const std::string& label, const peat_spatial_map_t& map);

  // Inputs through the library (inputs_api.cpp).
  void add_playback(const std::string& candidate, const playback::Playback& playback);
  FocusCall focus_call(const std::string& candidate) const;  // throws NOT_FOUND
  void add_candidate_map(const std::string& candidate, const std::string& label, const peat_spatial_map_t& map);
  void add_noise_band(const std::string& stage, const analyzer::NoiseBand& band);
  // `steps` / `param_drift`: for judging the run against its stage's band
  // when it brings no impact of its own.
  void add_fi_run(FiRun run, const int64_t* steps, double param_drift);

  // "" -> "candidate": the one default name for unnamed candidates.
  static std::string candidate_name(const std::string& name);

  std::string render_html() const;
  void write_html(const std::string& path) const;

 private:
  void set_band(StageBand band);
  Model model_;
};

// Readers of the three input kinds (inputs_*.cpp); each throws peat::impl::Error.
TraceSummary read_trace_summary(const std::string& path);
std::vector<PlaybackRun> read_playback_jsonl(const std::string& path, const std::string& text);
RuntimeReport read_runtime_json(const std::string& path, const std::string& text);

// A checked copy of a spatial map with tile counts (throws VERSION_MISMATCH
// unless a whole peat_spatial_map_t of this library, INVALID_ARGUMENT).
SpatialMapCopy copy_map(const std::string& label, const peat_spatial_map_t& map);

// The page (page.cpp) and its sections (sections_*.cpp).
std::string render_page(const Model& model);

}  // namespace peat::impl::report

struct peat_report : peat::impl::report::Report {
  using peat::impl::report::Report::Report;
};
