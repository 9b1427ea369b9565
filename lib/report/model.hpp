// What a report holds: plain data read from the inputs (inputs.cpp) or added
// through the API, rendered by page.cpp.
#pragma once

#include <peat/analyzer.h>
#include <peat/detector.h>
#include <peat/playback.h>

#include "lib/analyzer/aggregator.hpp"
#include "lib/analyzer/noise_band.hpp"

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace peat::impl::report {

struct NamedSeries {
  std::string label;
  std::vector<double> x, y;
};

struct TraceSummary {
  std::string path;
  std::string framework, device, vendor, library_version, run_name;
  int rank = 0, world_size = 0;
  int format_major = 0, format_minor = 0;
  bool complete = true;
  std::string stop_reason;
  uint64_t file_bytes = 0;
  uint64_t records[5] = {0, 0, 0, 0, 0};  // by kind (1..4)
  struct OpStats {
    uint64_t records = 0, tensors = 0, raw_bytes = 0, encoded_bytes = 0;
  };
  std::map<std::string, OpStats> ops;
  int64_t step_min = 0, step_max = -1;
  uint64_t raw_bytes = 0, encoded_bytes = 0;
  std::map<std::string, NamedSeries> scalars;  // scalar name -> (step, value)
  std::vector<std::string> checkpoints;        // "name @ step N (k tensors)"
};

struct PlaybackRecord {
  std::string op, layer, status, message;
  int64_t step = 0;
  uint64_t record = 0, call = 0, elements = 0, bitwise = 0, tolerance_failures = 0, nonfinite = 0;
  double max_abs_error = 0, max_rel_error = 0;
  int deterministic = -1;
};

struct PlaybackGroup {
  std::string type, name;
  uint64_t records = 0, ok = 0, failed = 0, exact = 0, nondeterministic = 0;
  uint64_t elements = 0, bitwise = 0, tolerance_failures = 0, nonfinite = 0;
  double max_abs_error = 0, max_rel_error = 0;
};

// One playback run: a file written by peat_playback_write_jsonl holds one or
// several (appended) runs; a new run starts at a record line after group lines.
struct PlaybackRun {
  std::string label, path;
  std::vector<PlaybackRecord> records;
  std::vector<PlaybackGroup> groups;
};

struct Verdict {
  std::string model;
  double confidence = 0;
  std::vector<std::string> evidence;
};

struct Candidate {
  std::string name, verdict, detector_op, playback;
  std::vector<Verdict> verdicts;
};

// One (op, output) of a candidate's playback (peat_report_add_playback).
struct OpOutcome {
  std::string op;  // "aten::mm", or "op[grad_weight]" for an output of a multi-output op
  uint64_t records = 0, exact = 0, failed = 0;
  peat_playback_verdicts_t verdicts{};  // per-call verdicts of this output
  std::optional<peat_detection_t> detection;  // of the call that names verdicts.top_model
  uint64_t detection_record = 0;              // that call's trace record
  peat_signature_t merged{};                  // merged over the calls (statistics, histograms)
  std::vector<double> steps, max_rel_error;   // one point per compared call
};

struct FocusCall {
  uint64_t record = 0, output = 0;
};

struct CandidatePlayback {
  std::string name;
  uint64_t selected = 0, ok = 0, failed = 0, exact = 0, mismatched = 0, nondeterministic = 0;
  std::vector<OpOutcome> ops;
  std::optional<FocusCall> focus;  // the call whose map tells most (peat_report_focus_call)
};

// A stage's golden curve and its measured noise band (peat_report_add_noise_band
// or the runtime JSON's noise_band).
struct StageBand {
  std::string stage;  // "train", "finetune"
  NamedSeries golden;
  double band = 0;
  uint32_t k = 0;     // golden reruns; 0 = not known (a band from JSON without its rule)
  double factor = 0;
  int32_t window = 1;
  std::string rule;   // the rule in words, when given
  std::shared_ptr<const analyzer::NoiseBand> judge;  // the library's band (C API), or null
};

// One runtime-FI run (peat_report_add_fi_run or runtime JSON candidates[].runtime_fi).
struct FiRun {
  std::string candidate, label, stage;
  uint64_t every = 0;
  int64_t candidate_calls = -1;
  NamedSeries loss;
  std::optional<peat_impact_t> impact;
  double test_accuracy = NAN;
};

struct DriftRow {
  std::string tensor;
  uint64_t count = 0;
  double rmse = 0, relative_l2 = 0, max_abs_error = 0;
};

struct RuntimeReport {
  std::string path;
  std::vector<std::pair<std::string, std::string>> facts;  // top-level scalars shown as a list
  std::vector<Candidate> candidates;
  std::vector<StageBand> bands;      // noise_band + loss_series.golden, per stage
  std::vector<FiRun> fi_runs;        // candidates[].runtime_fi[], with their loss series
  std::vector<std::pair<std::string, NamedSeries>> other_runs;  // (stage, series): golden reruns and
                                                                // series no FI run names
  std::vector<std::pair<std::string, std::vector<DriftRow>>> drift;  // run label -> tensors
};

struct SignatureGroup {
  std::string source, op;
  std::unique_ptr<analyzer::Aggregator> aggregator;  // one op id (0)
  std::optional<peat_detection_t> detection;
};

struct SpatialMapCopy {
  std::string label;
  int64_t rows = 0, cols = 0, tile_rows = 0, tile_cols = 0, grid_rows = 0, grid_cols = 0;
  uint64_t mismatches = 0;
  std::vector<uint64_t> tiles, row_counts, col_counts;
};

struct CandidateMap {
  std::string candidate;
  SpatialMapCopy map;
};

struct Model {
  std::string title;
  std::size_t max_table_rows = 200;
  std::vector<TraceSummary> traces;
  std::vector<PlaybackRun> playback;
  std::vector<RuntimeReport> runtime;
  std::vector<SignatureGroup> signatures;
  std::optional<SpatialMapCopy> worst_map;
  std::vector<CandidatePlayback> candidates;  // by name, in order of addition
  std::vector<StageBand> bands;
  std::vector<FiRun> fi_runs;
  std::vector<CandidateMap> candidate_maps;
};

}  // namespace peat::impl::report
