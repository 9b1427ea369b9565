// peat::impl::playback::Playback — replays recorded op invocations of a trace
// through a candidate kernel and compares with the golden outputs
// (peat/playback.h). Stages: select (the trace reader's filter) -> load
// (inputs, golden outputs, attributes) -> candidate (once or twice) ->
// analyze (peat::impl::analyzer::analyze per output) -> collect (results in record
// order, per-op and per-layer aggregation with peat::impl::analyzer::Aggregator).
// Pipelined on oneTBB when the candidate is thread-safe, serial otherwise;
// the collect stage is serial and in order in both, so results are identical.
#pragma once

#include <peat/playback.h>

#include "lib/analyzer/aggregator.hpp"

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace peat::impl::trace {
class Reader;
}

namespace peat::impl::playback {

constexpr int kCompares = 3;  // peat_playback_compare_code values

struct Result {
  peat_status_t status = PEAT_STATUS_OK;
  uint64_t record = 0;
  std::string op, module_path, message;
  int64_t step = 0;
  uint64_t call_index = 0;
  peat_phase_t phase = 0;
  int32_t deterministic = -1;
  uint64_t n_outputs = 0;
  uint64_t elements = 0, bitwise_mismatches = 0, tolerance_failures = 0;
  // Per output: [FIRST_VS_GOLDEN, SECOND_VS_GOLDEN, SECOND_VS_FIRST]; filled when OK.
  std::vector<std::array<peat_signature_t, kCompares>> signatures;
  // Per output: the Detector's top verdict on this call alone (model -1 when
  // it could not judge, e.g. an empty output) and the bit it named (-1 none).
  struct CallVerdict {
    int32_t model = -1;
    int32_t bit = -1;
  };
  std::vector<CallVerdict> verdicts;
  // Per output: the full detection of a mismatching output, judged with its
  // spatial map (null for an exact or unjudged output, judged again on demand).
  std::vector<std::shared_ptr<const peat_detection_t>> detections;
};

// The per-call verdicts of one output of a group: how many calls' top
// verdict names each model, and the bits flip and stuck-at verdicts named.
struct VerdictTally {
  uint64_t records = 0;
  std::array<uint64_t, PEAT_PLAYBACK_MODEL_SLOTS> counts{};
  uint64_t bits = 0;
};

struct Group {
  std::string name;
  uint64_t records = 0, ok = 0, failed = 0, exact = 0, nondeterministic = 0, n_outputs = 0;
  // One aggregator per output index; its "op" ids are the comparisons
  // (peat_playback_compare_code values).
  std::vector<std::unique_ptr<analyzer::Aggregator>> aggregators;
  std::vector<VerdictTally> tallies;  // per output index
};

struct Summary {
  bool cancelled = false;
  uint64_t selected = 0, done = 0, ok = 0, failed = 0, exact = 0, mismatched = 0, nondeterministic = 0;
};

class Playback {
 public:
  // `options` read at the C boundary; filter and config pointers resolved here
  // (copied). Throws INVALID_ARGUMENT / VERSION_MISMATCH.
  Playback(const trace::Reader& reader, const peat_playback_options_t& options);
  ~Playback();
  Playback(const Playback&) = delete;
  Playback& operator=(const Playback&) = delete;

  void set_candidate(peat_kernel_fn fn, void* ctx, std::string origin);
  void set_candidate_symbol(std::string_view spec, void* ctx);
  peat_kernel_fn candidate() const;  // throws BAD_STATE when none is set
  void* candidate_ctx() const noexcept { return ctx_; }

  // Returns OK or CANCELLED; throws BAD_STATE without a candidate.
  peat_status_t run();

  const Summary& summary() const noexcept { return summary_; }
  const std::vector<Result>& results() const noexcept { return results_; }
  const Result& result(uint64_t index) const;  // throws NOT_FOUND
  const peat_signature_t& result_signature(uint64_t index, uint64_t output, peat_playback_compare_t which) const;

  uint64_t group_count(peat_playback_group_kind_t kind) const;
  const Group& group(peat_playback_group_kind_t kind, uint64_t index) const;  // throws
  peat_signature_t group_signature(peat_playback_group_kind_t kind, uint64_t index, uint64_t output,
                                   peat_playback_compare_t which) const;

  std::string output_name(uint64_t record, std::size_t output) const;
  peat_playback_verdicts_t group_verdicts(peat_playback_group_kind_t kind, uint64_t index, uint64_t output) const;
  peat_detection_t result_detection(uint64_t index, uint64_t output) const;  // throws NOT_FOUND
  void write_jsonl(const std::string& path, bool append) const;

  // Partitions (partition.cpp, exchange.cpp): the selected records of this
  // playback's share; share `rank`'s record range and size; the results as
  // bytes for another process, and merging such bytes in.
  std::vector<uint64_t> selected_records() const;
  std::vector<int64_t> record_owners() const;  // per record of the trace: its share, -1 unselected
  struct Share {
    uint64_t first = 0, end = 0, records = 0;
  };
  Share share(uint32_t rank) const;
  std::vector<std::byte> export_results() const;
  // peat_playback_export: export_results in the caller's buffer by
  // copy_bytes_out's rule; `size` must be given (INVALID_ARGUMENT).
  void export_to(void* buffer, std::size_t capacity, std::size_t* size) const;
  void import_results(const std::byte* data, std::size_t size);

  const trace::Reader& reader() const noexcept { return reader_; }
  bool run_twice() const noexcept { return options_.run_twice != 0; }

  struct Work;  // one record in flight (playback.cpp)

 private:
  struct Grouping {
    std::vector<Group> groups;
    std::unordered_map<std::string, uint32_t> ids;
  };

  void load(Work& work) const;
  void execute(Work& work) const;
  void analyze(Work& work) const;
  void judge_calls(Work& work) const;
  peat_detection_t detect_call(const Result& r, std::size_t output, const peat_spatial_map_t* map = nullptr) const;
  bool collect(Work& work);  // false: cancel
  void add_to(Grouping& grouping, const std::string& name, const Result& result);
  // Counts a result in the summary and adds it to its op and layer groups
  // (collect, and import when the groups are rebuilt in record order).
  void count(const Result& result);
  const Grouping& grouping(peat_playback_group_kind_t kind) const;
  void release_library() noexcept;
  uint64_t options_fingerprint() const;  // filter, config and run_twice: parts must agree
  void regroup();                        // summary and groups again from results_ (record order)

  const trace::Reader& reader_;
  peat_playback_options_t options_;
  peat_trace_filter_t filter_;
  std::string glob_;
  peat_signature_config_t config_;

  peat_kernel_fn fn_ = nullptr;
  void* ctx_ = nullptr;
  std::string origin_;
  void* library_ = nullptr;

  std::vector<Result> results_;
  Summary summary_;
  Grouping by_op_, by_layer_;
  bool ran_ = false;
  std::vector<bool> merged_shares_;  // per partition rank: its results are in results_
};

}  // namespace peat::impl::playback

struct peat_playback : peat::impl::playback::Playback {
  using peat::impl::playback::Playback::Playback;
};
