// Playback of a candidate over a trace for `peat playback` and
// `peat report --candidate`: runs the library's playback, then names each
// op's error model with the detector on the op's merged signature, and
// computes the spatial map of the worst call.
#pragma once

#include "tools/peat/common.hpp"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace peat::cli {

struct ReplayOptions {
  std::string candidate;  // "lib.so:symbol"
  std::string op_glob;    // "" = every op
  int64_t step_min = INT64_MIN, step_max = INT64_MAX;
  bool run_twice = false;  // --repeat 2
  int jobs = 1;            // > 1: the candidate is called from several threads
  bool progress = false;   // draw a progress bar on stderr
  // Partitioned playback (docs/distributed.md): this process replays share
  // partition_rank of partition_world; `merge` (when set) runs after the
  // share's run and brings the other shares' results in (peat_playback_import);
  // with analyse false the Replay stops after that (ranks other than 0).
  uint32_t partition_rank = 0, partition_world = 1;
  peat_playback_progress_fn progress_fn = nullptr;  // instead of the bar: called after each record
  std::function<void(peat::playback&)> merge;
  bool analyse = true;
};

struct OpVerdict {
  std::string op;
  uint64_t output = 0;
  std::string output_name;  // the recorded output's name ("grad_weight"); "" when it has none
  peat_playback_verdicts_t per_call{};  // each call judged alone, counted (peat_playback_group_verdicts)
  peat_playback_group_t group{};
  peat_signature_t signature{};
  peat_detection_t detection{};
  bool detected = false;
  std::string detect_error;  // why the detector did not run ("" when it did)
  int64_t step = 0;          // step of the op's first record
};

struct WorstCall {
  std::string label;
  uint64_t record = 0;
  std::optional<peat::spatial_map> map;  // empty until a call was mapped
};

class Replay {
 public:
  // `reader` must outlive the Replay (the playback reads from it).
  Replay(const peat::trace_reader& reader, std::string trace_path, const ReplayOptions& options);

  const peat::playback& playback() const { return playback_; }
  const peat_playback_summary_t& summary() const { return summary_; }
  const std::vector<OpVerdict>& ops() const { return ops_; }
  const WorstCall& worst() const { return worst_; }
  double run_seconds() const { return run_s_; }  // this process's share of the playback: wall time
  double run_cpu_seconds() const { return run_cpu_s_; }  // and CPU time (all its threads)
  // Records with tolerance failures, new non-finite values or failures.
  bool findings() const;
  // Re-runs the candidate on trace record `record` and maps output `output`
  // into `into` (its earlier map released); false when the candidate fails
  // or the map cannot be made.
  bool map_call(uint64_t record, uint64_t output, WorstCall& into) const;

 private:
  void detect_ops();
  void map_worst_call();

  const peat::trace_reader& reader_;
  std::string path_;
  ReplayOptions options_;
  peat::playback playback_;
  peat_playback_summary_t summary_{};
  std::vector<OpVerdict> ops_;
  WorstCall worst_;
  double run_s_ = 0, run_cpu_s_ = 0;
};

}  // namespace peat::cli
