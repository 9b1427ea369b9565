#include "tools/peat/replay.hpp"

#include "tools/peat/op_family.hpp"


#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstring>
#include <vector>

namespace peat::cli {

namespace {

int32_t draw_progress(void* user, uint64_t done, uint64_t total) {
  (void)user;
  const int width = 40;
  const int filled = total ? static_cast<int>(width * done / total) : width;
  std::fprintf(stderr, "\r[%.*s%*s] %llu/%llu records", filled, "########################################", width - filled, "",
               static_cast<unsigned long long>(done), static_cast<unsigned long long>(total));
  if (done == total) std::fprintf(stderr, "\n");
  std::fflush(stderr);
  return 0;
}

struct TensorFree {
  void operator()(DLManagedTensor* t) const noexcept { peat_trace_tensor_free(t); }
};
using Tensor = std::unique_ptr<DLManagedTensor, TensorFree>;

}  // namespace

Replay::Replay(const peat_trace_reader_t* reader, std::string trace_path, const ReplayOptions& options)
    : reader_(reader), path_(std::move(trace_path)), options_(options) {
  peat_trace_filter_t filter;
  peat_trace_filter_init(&filter);
  if (!options.op_glob.empty()) filter.op_glob = options.op_glob.c_str();
  filter.step_min = options.step_min;
  filter.step_max = options.step_max;
  peat_playback_options_t po;
  peat_playback_options_init(&po);
  po.filter = &filter;
  po.run_twice = options.run_twice ? 1 : 0;
  po.thread_safe = options.jobs > 1 ? 1 : 0;
  po.num_threads = options.jobs > 1 ? options.jobs : 0;
  if (options.progress) po.progress = draw_progress;
  if (options.progress_fn != nullptr) po.progress = options.progress_fn;
  po.partition_rank = options.partition_rank;
  po.partition_world = options.partition_world;
  check(peat_playback_create(reader, &po, &playback_), path_);
  // The library's loader, once: a bad spec is reported before any work, and
  // the worst call's map reuses the loaded kernel (map_worst_call).
  const peat_status_t s = peat_playback_set_candidate_symbol(playback_, options.candidate.c_str(), nullptr);
  if (s == PEAT_STATUS_INVALID_ARGUMENT) throw CliError(kUsage, "--candidate: " + library_message());
  if (s != PEAT_STATUS_OK) throw CliError(kCandidate, "--candidate: " + library_message());
  const auto started = std::chrono::steady_clock::now();
  const std::clock_t cpu = std::clock();
  check(peat_playback_run(playback_), path_);
  run_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  run_cpu_s_ = static_cast<double>(std::clock() - cpu) / CLOCKS_PER_SEC;
  if (options.merge) options.merge(playback_);
  if (!options.analyse) return;
  summary_.struct_size = sizeof summary_;
  check(peat_playback_summary(playback_, &summary_), "playback summary");
  detect_ops();
  map_worst_call();
}

Replay::~Replay() {
  if (worst_.valid) peat_spatial_map_release(&worst_.map);
  peat_playback_destroy(playback_);
}

bool Replay::findings() const {
  if (summary_.failed > 0) return true;
  for (const OpVerdict& v : ops_)
    if (v.signature.tolerance_fail_count > 0 || v.signature.new_nonfinite_count > 0) return true;
  return false;
}

void Replay::detect_ops() {
  uint64_t groups = 0;
  check(peat_playback_group_count(playback_, PEAT_PLAYBACK_BY_OP, &groups), "playback groups");
  uint64_t results = 0;
  check(peat_playback_result_count(playback_, &results), "playback results");
  for (uint64_t g = 0; g < groups; ++g) {
    peat_playback_group_t group{};
    group.struct_size = sizeof group;
    check(peat_playback_group(playback_, PEAT_PLAYBACK_BY_OP, g, &group), "playback group");
    // The first OK record of the op gives K and the step.
    uint64_t first = UINT64_MAX;
    int64_t step = 0;
    for (uint64_t i = 0; i < results; ++i) {
      peat_playback_result_t r{};
      r.struct_size = sizeof r;
      if (peat_playback_result(playback_, i, &r) == PEAT_STATUS_OK && r.status == PEAT_STATUS_OK &&
          std::strcmp(r.op, group.name) == 0) {
        first = r.record;
        step = r.step;
        break;
      }
    }
    for (uint64_t out = 0; out < group.n_outputs; ++out) {
      OpVerdict v;
      v.op = group.name;
      v.output = out;
      if (first != UINT64_MAX) {
        peat_trace_tensor_info_t info{};
        info.struct_size = sizeof info;
        if (peat_trace_tensor_info(reader_, first, PEAT_TRACE_SLOT_OUTPUT, out, &info) == PEAT_STATUS_OK)
          v.output_name = info.name;
      }
      v.group = group;
      v.per_call.struct_size = sizeof v.per_call;
      check(peat_playback_group_verdicts(playback_, PEAT_PLAYBACK_BY_OP, g, out, &v.per_call), "per-call verdicts");
      v.step = step;
      peat_signature_init(&v.signature);
      check(peat_playback_group_signature(playback_, PEAT_PLAYBACK_BY_OP, g, out, PEAT_PLAYBACK_FIRST_VS_GOLDEN, &v.signature),
            "group signature");
      peat_signature_t rerun;
      peat_signature_init(&rerun);
      const bool have_rerun = options_.run_twice && peat_playback_group_signature(playback_, PEAT_PLAYBACK_BY_OP, g, out,
                                                                                  PEAT_PLAYBACK_SECOND_VS_GOLDEN, &rerun) == PEAT_STATUS_OK;
      peat_detect_context_t ctx;  // op kind and K of this output: the library's one rule
      peat_detect_context_init(&ctx);
      if (first != UINT64_MAX)
        check(peat_playback_detect_context(reader_, first, out, v.signature.reduction_length, &ctx), "op context");
      if (have_rerun && rerun.count == v.signature.count) ctx.rerun = &rerun;
      peat_detection_init(&v.detection);
      if (v.signature.count == 0) {
        v.detect_error = "no compared record";
      } else if (peat_detect(&v.signature, &ctx, &v.detection) == PEAT_STATUS_OK) {
        v.detected = true;
      } else {
        v.detect_error = library_message();
      }
      ops_.push_back(std::move(v));
    }
  }
}

// Re-runs the candidate on the record with the most tolerance failures (then
// bitwise mismatches) and maps where its first output differs.
void Replay::map_worst_call() {
  uint64_t results = 0;
  check(peat_playback_result_count(playback_, &results), "playback results");
  peat_playback_result_t best{};
  bool found = false;
  for (uint64_t i = 0; i < results; ++i) {
    peat_playback_result_t r{};
    r.struct_size = sizeof r;
    if (peat_playback_result(playback_, i, &r) != PEAT_STATUS_OK || r.status != PEAT_STATUS_OK) continue;
    if (r.bitwise_mismatches == 0) continue;
    if (!found || r.tolerance_failures > best.tolerance_failures ||
        (r.tolerance_failures == best.tolerance_failures && r.bitwise_mismatches > best.bitwise_mismatches)) {
      best = r;
      found = true;
    }
  }
  if (!found) return;
  map_call(best.record, 0, worst_);
}

// Re-runs the candidate on `record` and maps where its output `output` differs.
bool Replay::map_call(uint64_t record, uint64_t output, WorstCall& into) const {
  peat_kernel_fn fn = nullptr;
  check(peat_playback_candidate(playback_, &fn, nullptr), "playback candidate");
  const peat_trace_record_info_t info = record_info(reader_, record);
  std::vector<Tensor> inputs, golden;
  for (uint64_t i = 0; i < info.n_inputs; ++i) {
    DLManagedTensor* t = nullptr;
    check(peat_trace_load_tensor_alloc(reader_, record, PEAT_TRACE_SLOT_INPUT, i, &t), path_);
    inputs.emplace_back(t);
  }
  for (uint64_t i = 0; i < info.n_outputs; ++i) {
    DLManagedTensor* t = nullptr;
    check(peat_trace_load_tensor_alloc(reader_, record, PEAT_TRACE_SLOT_OUTPUT, i, &t), path_);
    golden.emplace_back(t);
  }
  if (output >= golden.size()) return false;
  std::vector<DLTensor> in, out;
  std::vector<std::vector<unsigned char>> buffers;
  for (auto& t : inputs) in.push_back(t->dl_tensor);
  for (auto& t : golden) {
    DLTensor o = t->dl_tensor;
    int64_t n = 0;
    check(peat_tensor_numel(&o, &n), path_);
    buffers.emplace_back(static_cast<size_t>(n) * ((o.dtype.bits * o.dtype.lanes + 7) / 8), 0);
    o.data = buffers.back().data();
    o.byte_offset = 0;
    o.strides = nullptr;
    out.push_back(o);
  }
  if (fn(nullptr, in.data(), static_cast<int32_t>(in.size()), out.data(), static_cast<int32_t>(out.size()), nullptr) != 0)
    return false;  // the playback already reports candidate failures
  peat_signature_config_t cfg;
  peat_signature_config_init(&cfg);
  peat_signature_t sig;
  peat_signature_init(&sig);
  if (into.valid) peat_spatial_map_release(&into.map);
  into.valid = false;
  peat_spatial_map_init(&into.map);
  if (peat_analyze(&golden[output]->dl_tensor, &out[output], &cfg, &sig, &into.map) != PEAT_STATUS_OK) {
    peat_spatial_map_release(&into.map);
    return false;
  }
  bool bitwise = false;
  if (into.map.mismatch_count == 0) {  // within tolerance: map where the bits differ
    cfg.map_mismatch = PEAT_MISMATCH_BITWISE;
    bitwise = true;
    if (peat_analyze(&golden[output]->dl_tensor, &out[output], &cfg, &sig, &into.map) != PEAT_STATUS_OK) {
      peat_spatial_map_release(&into.map);
      return false;
    }
  }
  into.valid = true;
  into.record = record;
  char label[512];
  std::snprintf(label, sizeof label, "%s: %s record %llu, output %llu (%s)", options_.candidate.c_str(), info.name,
                static_cast<unsigned long long>(record), static_cast<unsigned long long>(output),
                bitwise ? "bitwise mismatches" : "tolerance failures");
  into.label = label;
  return true;
}

}  // namespace peat::cli
