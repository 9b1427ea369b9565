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

// The library's playback of the records `options` select (it copies the filter).
peat::playback make_playback(const peat::trace_reader& reader, const std::string& path, const ReplayOptions& options) {
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
  return checked(path, [&] { return peat::playback(reader, &po); });
}

}  // namespace

Replay::Replay(const peat::trace_reader& reader, std::string trace_path, const ReplayOptions& options)
    : reader_(reader), path_(std::move(trace_path)), options_(options), playback_(make_playback(reader, path_, options)) {
  // The library's loader, once: a bad spec is reported before any work, and
  // the worst call's map reuses the loaded kernel (map_worst_call).
  try {
    playback_.set_candidate_symbol(options.candidate.c_str());
  } catch (const peat::error& e) {
    throw CliError(e.status() == PEAT_STATUS_INVALID_ARGUMENT ? kUsage : kCandidate, "--candidate: " + library_message(e));
  }
  const auto started = std::chrono::steady_clock::now();
  const std::clock_t cpu = std::clock();
  checked(path_, [&] { playback_.run(); });
  run_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  run_cpu_s_ = static_cast<double>(std::clock() - cpu) / CLOCKS_PER_SEC;
  if (options.merge) options.merge(playback_);
  if (!options.analyse) return;
  summary_ = checked("playback summary", [&] { return playback_.summary(); });
  detect_ops();
  map_worst_call();
}

bool Replay::findings() const {
  if (summary_.failed > 0) return true;
  for (const OpVerdict& v : ops_)
    if (v.signature.tolerance_fail_count > 0 || v.signature.new_nonfinite_count > 0) return true;
  return false;
}

void Replay::detect_ops() {
  const uint64_t groups = checked("playback groups", [&] { return playback_.group_count(PEAT_PLAYBACK_BY_OP); });
  const uint64_t results = checked("playback results", [&] { return playback_.result_count(); });
  for (uint64_t g = 0; g < groups; ++g) {
    const peat_playback_group_t group = checked("playback group", [&] { return playback_.group(PEAT_PLAYBACK_BY_OP, g); });
    // The first OK record of the op gives K and the step.
    uint64_t first = UINT64_MAX;
    int64_t step = 0;
    for (uint64_t i = 0; i < results; ++i) {
      peat_playback_result_t r{};
      if (!failure([&] { r = playback_.result(i); }) && r.status == PEAT_STATUS_OK && std::strcmp(r.op, group.name) == 0) {
        first = r.record;
        step = r.step;
        break;
      }
    }
    for (uint64_t out = 0; out < group.n_outputs; ++out) {
      OpVerdict v;
      v.op = group.name;
      v.output = out;
      if (first != UINT64_MAX)  // an output the reader cannot describe stays unnamed
        failure([&] { v.output_name = reader_.tensor_info(first, PEAT_TRACE_SLOT_OUTPUT, out).name; });
      v.group = group;
      v.per_call = checked("per-call verdicts", [&] { return playback_.group_verdicts(PEAT_PLAYBACK_BY_OP, g, out); });
      v.step = step;
      v.signature = checked("group signature", [&] { return playback_.group_signature(PEAT_PLAYBACK_BY_OP, g, out); });
      peat_signature_t rerun{};
      const bool have_rerun = options_.run_twice && !failure([&] {
        rerun = playback_.group_signature(PEAT_PLAYBACK_BY_OP, g, out, PEAT_PLAYBACK_SECOND_VS_GOLDEN);
      });
      peat_detect_context_t ctx;  // op kind and K of this output: the library's one rule
      peat_detect_context_init(&ctx);
      if (first != UINT64_MAX)
        checked("op context", [&] { reader_.detect_context(first, out, v.signature.reduction_length, ctx); });
      if (have_rerun && rerun.count == v.signature.count) ctx.rerun = &rerun;
      peat_detection_init(&v.detection);
      if (v.signature.count == 0) {
        v.detect_error = "no compared record";
      } else if (const auto why = failure([&] { v.detection = peat::detect(v.signature, &ctx); })) {
        v.detect_error = *why;
      } else {
        v.detected = true;
      }
      ops_.push_back(std::move(v));
    }
  }
}

// Re-runs the candidate on the record with the most tolerance failures (then
// bitwise mismatches) and maps where its first output differs.
void Replay::map_worst_call() {
  const uint64_t results = checked("playback results", [&] { return playback_.result_count(); });
  peat_playback_result_t best{};
  bool found = false;
  for (uint64_t i = 0; i < results; ++i) {
    peat_playback_result_t r{};
    if (failure([&] { r = playback_.result(i); }) || r.status != PEAT_STATUS_OK) continue;
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
  const peat_kernel_fn fn = checked("playback candidate", [&] { return playback_.candidate(); });
  const peat_trace_record_info_t info = record_info(reader_, record);
  std::vector<peat::owned_tensor> inputs, golden;
  for (uint64_t i = 0; i < info.n_inputs; ++i)
    inputs.push_back(checked(path_, [&] { return reader_.load_tensor(record, PEAT_TRACE_SLOT_INPUT, i); }));
  for (uint64_t i = 0; i < info.n_outputs; ++i)
    golden.push_back(checked(path_, [&] { return reader_.load_tensor(record, PEAT_TRACE_SLOT_OUTPUT, i); }));
  if (output >= golden.size()) return false;
  std::vector<DLTensor> in, out;
  std::vector<std::vector<unsigned char>> buffers;
  for (auto& t : inputs) in.push_back(t->dl_tensor);
  for (auto& t : golden) {
    DLTensor o = t->dl_tensor;
    const int64_t n = checked(path_, [&] { return peat::numel(&o); });
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
  into.map.emplace();  // the earlier map released
  const auto map_into = [&] { peat::analyze(&golden[output]->dl_tensor, &out[output], &cfg, into.map->get()); };
  if (failure(map_into)) {
    into.map.reset();
    return false;
  }
  bool bitwise = false;
  if (into.map->get()->mismatch_count == 0) {  // within tolerance: map where the bits differ
    cfg.map_mismatch = PEAT_MISMATCH_BITWISE;
    bitwise = true;
    if (failure(map_into)) {
      into.map.reset();
      return false;
    }
  }
  into.record = record;
  char label[512];
  std::snprintf(label, sizeof label, "%s: %s record %llu, output %llu (%s)", options_.candidate.c_str(), info.name,
                static_cast<unsigned long long>(record), static_cast<unsigned long long>(output),
                bitwise ? "bitwise mismatches" : "tolerance failures");
  into.label = label;
  return true;
}

}  // namespace peat::cli
